# iowatt built-in personality: fileserver
#
# Follows FileBench's workloads/fileserver.f ("File-server Version 3.0", filebench/filebench
# 22620e6): the same variables and defaults, fileset, process, thread and flowops.
#
# A file server's mix of whole-file operations: 50 threads each create a file and write it whole,
# append to an existing file, read one whole, delete one and stat one, in a loop. The fileset
# holds 10,000 files (80 % present at the start) with gamma-distributed sizes of mean 128 KiB
# in directories of 20 entries on average.
#
# iowatt sets $dir to the directory it runs in; change any other variable with --set name=value.

set $dir=/tmp
set $nfiles=10000
set $meandirwidth=20
set $filesize=cvar(type=cvar-gamma,parameters=mean:131072;gamma:1.5)
set $nthreads=50
set $iosize=1m
set $meanappendsize=16k
set $runtime=60

define fileset name=bigfileset,path=$dir,size=$filesize,entries=$nfiles,dirwidth=$meandirwidth,prealloc=80

define process name=filereader,instances=1
{
  thread name=filereaderthread,memsize=10m,instances=$nthreads
  {
    flowop createfile name=createfile1,filesetname=bigfileset,fd=1
    flowop writewholefile name=wrtfile1,srcfd=1,fd=1,iosize=$iosize
    flowop closefile name=closefile1,fd=1
    flowop openfile name=openfile1,filesetname=bigfileset,fd=1
    flowop appendfilerand name=appendfilerand1,iosize=$meanappendsize,fd=1
    flowop closefile name=closefile2,fd=1
    flowop openfile name=openfile2,filesetname=bigfileset,fd=1
    flowop readwholefile name=readfile1,fd=1,iosize=$iosize
    flowop closefile name=closefile3,fd=1
    flowop deletefile name=deletefile1,filesetname=bigfileset
    flowop statfile name=statfile1,filesetname=bigfileset
  }
}

echo "fileserver: iowatt's FileBench fileserver.f (v3.0) personality"

run $runtime
