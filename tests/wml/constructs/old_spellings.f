# 1.4-era and forked spellings: kb sizes, filesizegamma, cached, useism, trusttree,
# arithmetic, a rounded randvar, an indexed pick, a thread of 0 instances, a fileset without
# dirwidth and one with dirwidth=1.
set $dir=/tmp
set $per=4
set $nthreads=2
set $nfiles=$per * $nthreads
set $io=randvar(type=uniform,min=1kb,mean=2kb,round=1kb)
define fileset name=flat,path=$dir,entries=$nfiles,size=16kb,filesizegamma=1500,prealloc,cached=false,trusttree
define fileset name=deep,path=$dir,entries=$nfiles,dirwidth=1,size=16kb,prealloc,paralloc
define process name=p,instances=1
{
  thread name=t,instances=$nthreads,useism
  {
    flowop openfile name=open1,filesetname=flat,indexed=3,fd=1
    flowop read name=read1,fd=1,iosize=$io
    flowop closefile name=close1,fd=1
    flowop statfile name=stat1,filesetname=deep
  }
  thread name=idle,instances=0
  {
    flowop read name=never,filesetname=nosuch,iosize=1k
  }
}
enable lathist
run 1 5 5
