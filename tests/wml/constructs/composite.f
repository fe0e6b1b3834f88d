# Composite flowops: a parameter with and without a default, iters, nesting.
set $dir=/tmp
set $nfiles=50
define fileset name=a,path=$dir,entries=$nfiles,dirwidth=10,size=8k,prealloc
define fileset name=b,path=$dir/sub,entries=$nfiles,dirwidth=10,size=8k,prealloc
define flowop name=readone, $set
{
  flowop openfile name=open1,filesetname=$set,fd=1
  flowop readwholefile name=read1,fd=1,iosize=8k
  flowop closefile name=close1,fd=1
}
define flowop name=work, $which=a, $times
{
  flowop readone name=inner, iters=$times, $set=$which
  flowop statfile name=stat1,filesetname=$which
}
define process name=p
{
  thread name=t1,instances=1
  {
    flowop work name=w1, iters=2, $times=3
  }
  thread name=t2,instances=1
  {
    flowop work name=w2, $which=b, $times=1
  }
}
run 1
