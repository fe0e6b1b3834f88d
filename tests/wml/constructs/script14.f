# FileBench 1.4's way to run: create, start, warm up, clear, measure, snap, stop.
set $dir=/tmp
set $nfiles=20
define fileset name=logs,path=$dir,entries=$nfiles,dirwidth=5,size=4k,prealloc
system "echo setup >> $LOG"
create fileset
system "find $dir/logs -type f | wc -l >> $LOG"
define process name=reader
{
  thread name=t,instances=1
  {
    flowop openfile name=open1,filesetname=logs,fd=1
    flowop readwholefile name=read1,fd=1,iosize=4k
    flowop closefile name=close1,fd=1
  }
}
create processes
sleep 1
stats clear
system "echo during >> $LOG"
sleep 2
stats snap
stats dump "stats.txt"
shutdown processes
system "echo after >> $LOG"
