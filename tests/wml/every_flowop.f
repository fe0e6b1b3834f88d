# iowatt test fixture: every flowop the engine runs, with the WML features around them.
#
# Small enough for a 2 s run on tmpfs: filesets of a few MiB, an event rate that paces the
# loops that create or grow files, and a sequential writer that reopens (and so rewinds) its
# file every pass.
/* C-style comments are accepted too,
   also over several lines. */

set $dir=/tmp
set $nfiles=64
set $meandirwidth=8
set $filesize=cvar(type=cvar-gamma,parameters=mean:16384;gamma:1.5)
set $smallsize=4k
set $iosize=4k
set $nthreads=2
set $usermode=1000
set $sync=false
set $directio=0
set $rate=1000
set $appendsize = randvar(type=uniform, min=1k, mean=4k)
set $readsize=cvar(type=cvar-uniform,parameters=lower:1024;upper:8192)
define randvar name=$rdsize, type=tabular, min=2k,
  randtable = {{60, 2k, 4k},
               {40, 4k, 16k}}

set mode quit timeout
eventgen rate=$rate

define fileset name=bigfileset,path=$dir,size=$filesize,entries=$nfiles,dirwidth=$meandirwidth,
  dirgamma=1500,prealloc=80,paralloc
define fileset name=readset,path=$dir,size=$smallsize,entries=16,dirwidth=4,dirgamma=0,
  prealloc,readonly,reuse
define fileset name=dirset,path=$dir,size=0,leafdirs=16,dirwidth=4,prealloc=50,
  trusttree
define file name=datafile,path=$dir,size=1m,prealloc,reuse,paralloc
define file name=logfile,path=$dir,prealloc

define process name=files,instances=1
{
  thread name=churn,memsize=1m,instances=$nthreads
  {
    flowop createfile name=create1,filesetname=bigfileset,fd=1
    flowop writewholefile name=writewhole1,srcfd=1,fd=1,iosize=$iosize
    flowop appendfile name=append1,fd=1,iosize=$iosize
    flowop appendfilerand name=appendrand1,fd=1,iosize=$appendsize
    flowop fsync name=fsync1,fd=1
    flowop closefile name=close1,fd=1
    flowop openfile name=open2,filesetname=bigfileset,fd=1
    flowop readwholefile name=readwhole2,fd=1,iosize=$iosize
    flowop fsyncset name=fsyncset2,filesetname=bigfileset
    flowop closefile name=close2,fd=1
    flowop deletefile name=delete3,filesetname=bigfileset
    flowop statfile name=stat4,filesetname=bigfileset
    flowop opslimit name=churnlimit
  }
  thread name=dirs,memsize=64k
  {
    flowop makedir name=mkdir1,filesetname=dirset
    flowop listdir name=listdir1,filesetname=dirset
    flowop removedir name=rmdir1,filesetname=dirset
    flowop iopslimit name=dirlimit,target=mkdir1
  }
}

define process name=io,instances=2
{
  thread name=randio,memsize=1m,instances=1
  {
    flowop read name=randread1,filename=datafile,iosize=$rdsize,random,workingset=256k,
      noreadahead
    flowop write name=randwrite1,filename=datafile,iosize=$iosize,random,workingset=256k,
      directio,dsync
    flowop bwlimit name=randlimit,target=randread1
  }
  thread name=seqio,memsize=1m
  {
    flowop openfile name=openlog,filesetname=logfile,fd=2
    flowop write name=seqwrite1,fd=2,iosize=$iosize,iters=8,dsync=$sync,directio=$directio
    flowop closefile name=closelog,fd=2
    flowop read name=seqread1,filename=datafile,iosize=$readsize
    flowop eventlimit name=seqlimit
    flowop finishonbytes name=seqdone,value=64m
  }
}

define process name=db,instances=1
{
  thread name=lgwr,memsize=1m,useism
  {
    flowop aiowrite name=lg-write,filename=datafile,iosize=$iosize,random,dsync
    flowop aiowait name=lg-aiowait
    flowop semblock name=lg-block,value=8,highwater=16
  }
  thread name=shadow,memsize=1m,instances=2
  {
    flowop read name=shadowread,filesetname=readset,iosize=$iosize,random,opennext
    flowop hog name=shadowhog,value=$usermode
    flowop sempost name=shadow-post,value=1,target=lg-block,blocking
    flowop eventlimit name=shadowlimit
  }
  thread name=sleeper,memsize=64k
  {
    flowop block name=nap
    flowop statfile name=peek,filesetname=readset
    flowop finishoncount name=enough,value=1000,target=peek
  }
  thread name=waker,memsize=64k
  {
    flowop wakeup name=wake,target=nap
    flowop delay name=pause,value=1
  }
}

echo "every_flowop: $nthreads churn threads, I/O size $iosize"
usage "set \$nthreads to change the churn threads"

run 2
