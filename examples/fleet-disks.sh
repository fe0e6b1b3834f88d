#!/usr/bin/env bash
# Three "disks" for the fleet demo, on any Linux machine (as root): ext4 on three loop devices
# over files in /dev/shm, mounted at /mnt/iowatt-d0, -d1 and -d2. blkio caps d2's reads at 300
# IOPS, a disk that vibration or a failing head makes retry: the fleet's straggler.
#   bash examples/fleet-disks.sh up      # make them
#   bash examples/fleet-disks.sh down    # undo everything
set -euo pipefail
THROTTLE=/sys/fs/cgroup/blkio/blkio.throttle.read_iops_device

case "${1:-}" in
up)
  for i in 0 1 2; do
    truncate -s 512M "/dev/shm/iowatt-d$i.img"
    DEV=$(losetup -f --show "/dev/shm/iowatt-d$i.img")
    mkfs.ext4 -q "$DEV"
    mkdir -p "/mnt/iowatt-d$i"
    mount "$DEV" "/mnt/iowatt-d$i"
  done
  NUM=$(lsblk -dno MAJ:MIN "$(findmnt -no SOURCE /mnt/iowatt-d2)" | tr -d ' ')
  echo "$NUM 300" > "$THROTTLE"
  echo "/mnt/iowatt-d0, /mnt/iowatt-d1, /mnt/iowatt-d2 (reads ≤ 300 IOPS)"
  ;;
down)
  for i in 0 1 2; do
    DEV=$(findmnt -no SOURCE "/mnt/iowatt-d$i" || true)
    if [ -n "$DEV" ]; then
      NUM=$(lsblk -dno MAJ:MIN "$DEV" | tr -d ' ')
      echo "$NUM 0" > "$THROTTLE"
      umount "/mnt/iowatt-d$i"
      losetup -d "$DEV"
    fi
    rm -f "/dev/shm/iowatt-d$i.img"
    rmdir "/mnt/iowatt-d$i" 2>/dev/null || true
  done
  ;;
*)
  echo "usage: $0 up|down" >&2
  exit 2
  ;;
esac
