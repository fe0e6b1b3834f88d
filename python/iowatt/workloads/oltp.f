# iowatt built-in personality: oltp
#
# Follows FileBench's workloads/oltp.f ("OLTP Version 3.0", filebench/filebench 22620e6): the
# same variables and defaults, filesets, processes, threads and flowops. One change: FileBench's
# file sets an unused $runtime=30 and ends with `run 60`; here $runtime is 60 and `run $runtime`
# uses it, so the run is as long and --set runtime=N changes it.
#
# A database: 200 shadow processes read 2 KiB blocks at random from ten 10 MiB data files and
# spend CPU between reads; 10 database writers write 2 KiB blocks asynchronously (100 per pass)
# and a log writer writes 256 KiB log records, each paced by semaphores the shadows post to: one
# log write per 3,200 reads and 100 data writes per writer per 1,000 reads. The eventlimit does
# nothing while $eventrate is 0.
#
# iowatt sets $dir to the directory it runs in; change any other variable with --set name=value.

set $dir=/tmp
set $eventrate=0
set $runtime=60
set $iosize=2k
set $nshadows=200
set $ndbwriters=10
set $usermode=200000
set $filesize=10m
set $memperthread=1m
set $workingset=0
set $logfilesize=10m
set $nfiles=10
set $nlogfiles=1
set $directio=0

eventgen rate = $eventrate

define fileset name=datafiles,path=$dir,size=$filesize,entries=$nfiles,dirwidth=1024,prealloc=100,reuse
define fileset name=logfile,path=$dir,size=$logfilesize,entries=$nlogfiles,dirwidth=1024,prealloc=100,reuse

define process name=lgwr,instances=1
{
  thread name=lgwr,memsize=$memperthread,useism
  {
    flowop aiowrite name=lg-write,filesetname=logfile,
        iosize=256k,random,directio=$directio,dsync
    flowop aiowait name=lg-aiowait
    flowop semblock name=lg-block,value=3200,highwater=1000
  }
}

define process name=dbwr,instances=$ndbwriters
{
  thread name=dbwr,memsize=$memperthread,useism
  {
    flowop aiowrite name=dbwrite-a,filesetname=datafiles,
        iosize=$iosize,workingset=$workingset,random,iters=100,opennext,directio=$directio,dsync
    flowop hog name=dbwr-hog,value=10000
    flowop semblock name=dbwr-block,value=1000,highwater=2000
    flowop aiowait name=dbwr-aiowait
  }
}

define process name=shadow,instances=$nshadows
{
  thread name=shadow,memsize=$memperthread,useism
  {
    flowop read name=shadowread,filesetname=datafiles,
      iosize=$iosize,workingset=$workingset,random,opennext,directio=$directio
    flowop hog name=shadowhog,value=$usermode
    flowop sempost name=shadow-post-lg,value=1,target=lg-block,blocking
    flowop sempost name=shadow-post-dbwr,value=1,target=dbwr-block,blocking
    flowop eventlimit name=random-rate
  }
}

echo "oltp: iowatt's FileBench oltp.f (v3.0) personality"

run $runtime
