# iowatt built-in personality: varmail
#
# Follows FileBench's workloads/varmail.f ("Varmail Version 3.0", filebench/filebench 22620e6):
# the same variables and defaults, fileset, process, thread and flowops.
#
# A mail server (/var/mail): 16 threads delete a message, write a new one and fsync it, read a
# message whole, append to it and fsync, and read another, in a loop. The fileset holds 1,000
# files (80 % present at the start) with gamma-distributed sizes of mean 16 KiB, all in one
# directory.
#
# iowatt sets $dir to the directory it runs in; change any other variable with --set name=value.

set $dir=/tmp
set $nfiles=1000
set $meandirwidth=1000000
set $filesize=cvar(type=cvar-gamma,parameters=mean:16384;gamma:1.5)
set $nthreads=16
set $iosize=1m
set $meanappendsize=16k

define fileset name=bigfileset,path=$dir,size=$filesize,entries=$nfiles,dirwidth=$meandirwidth,prealloc=80

define process name=filereader,instances=1
{
  thread name=filereaderthread,memsize=10m,instances=$nthreads
  {
    flowop deletefile name=deletefile1,filesetname=bigfileset
    flowop createfile name=createfile2,filesetname=bigfileset,fd=1
    flowop appendfilerand name=appendfilerand2,iosize=$meanappendsize,fd=1
    flowop fsync name=fsyncfile2,fd=1
    flowop closefile name=closefile2,fd=1
    flowop openfile name=openfile3,filesetname=bigfileset,fd=1
    flowop readwholefile name=readfile3,fd=1,iosize=$iosize
    flowop appendfilerand name=appendfilerand3,iosize=$meanappendsize,fd=1
    flowop fsync name=fsyncfile3,fd=1
    flowop closefile name=closefile3,fd=1
    flowop openfile name=openfile4,filesetname=bigfileset,fd=1
    flowop readwholefile name=readfile4,fd=1,iosize=$iosize
    flowop closefile name=closefile4,fd=1
  }
}

echo "varmail: iowatt's FileBench varmail.f (v3.0) personality"

run 60
