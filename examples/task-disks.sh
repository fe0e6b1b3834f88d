#!/usr/bin/env bash
# The task-packing demo's two data locations, on any Linux machine (as root):
#   /mnt/iowatt-hdd  an "HDD": ext4 on a loop device whose reads blkio caps at a 7200 rpm disk's
#                    sequential rate (105 MB/s) and IOPS (200); blkio adds no seek penalty, so
#                    `iowatt sim tasks --validate` calibrates the simulator to it as it is;
#   /mnt/iowatt-ssd  an "SSD": tmpfs.
#   bash examples/task-disks.sh up      # make them
#   bash examples/task-disks.sh down    # undo everything
set -euo pipefail
IMG=/dev/shm/iowatt-hdd.img
HDD=/mnt/iowatt-hdd
SSD=/mnt/iowatt-ssd
THROTTLE=/sys/fs/cgroup/blkio

case "${1:-}" in
up)
  truncate -s 2G "$IMG"
  DEV=$(losetup -f --show "$IMG")
  mkfs.ext4 -q "$DEV"
  mkdir -p "$HDD" "$SSD"
  mount "$DEV" "$HDD"
  mount -t tmpfs -o size=2g tmpfs "$SSD"
  NUM=$(lsblk -dno MAJ:MIN "$DEV" | tr -d ' ')
  echo "$NUM 105000000" > "$THROTTLE/blkio.throttle.read_bps_device"
  echo "$NUM 200" > "$THROTTLE/blkio.throttle.read_iops_device"
  echo "hdd: $HDD on $DEV (reads ≤ 105 MB/s, ≤ 200 IOPS); ssd: $SSD (tmpfs)"
  ;;
down)
  DEV=$(findmnt -no SOURCE "$HDD" || true)
  if [ -n "$DEV" ]; then
    NUM=$(lsblk -dno MAJ:MIN "$DEV" | tr -d ' ')
    echo "$NUM 0" > "$THROTTLE/blkio.throttle.read_bps_device"
    echo "$NUM 0" > "$THROTTLE/blkio.throttle.read_iops_device"
    umount "$HDD"
    losetup -d "$DEV"
  fi
  mountpoint -q "$SSD" && umount "$SSD"
  rm -f "$IMG"
  rmdir "$HDD" "$SSD" 2>/dev/null || true
  ;;
*)
  echo "usage: $0 up|down" >&2
  exit 2
  ;;
esac
