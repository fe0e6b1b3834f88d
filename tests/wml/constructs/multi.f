# FileBench's multi-client commands and a flowop iowatt does not run, all in one file.
set $dir=/tmp
enable multi master=host0,client=host1
define fileset name=f,path=$dir,entries=10,dirwidth=10,size=1k,prealloc
define process name=p
{
  thread name=t
  {
    flowop statfile name=stat1,filesetname=f
    flowop testrandvar name=t1
  }
}
domultisync value=1
run 1
