# Variables a wrapper script supplies: used, never set.
define fileset name=f,path=$dir,entries=$nfiles,dirwidth=10,size=$filesize,prealloc
define process name=p
{
  thread name=t,instances=$nthreads
  {
    flowop statfile name=stat1,filesetname=f
  }
}
run $runtime
