#!/usr/bin/env bash
# The task-packing demo's two data locations, on any Linux machine with FUSE (as root):
#   /mnt/iowatt-hdd  an emulated Seagate Barracuda 7200.7 (`barracuda-7200`): every read pays
#                    its seek, rotation and transfer, streams taking turns under a CFQ-like
#                    scheduler (100 ms slices, 8 ms idle window);
#   /mnt/iowatt-ssd  an emulated Intel DC S3700 (`dc-s3700`) under the same scheduler;
# each served by `iowatt emulate mount` over a directory in /dev/shm, so nothing real is read.
# A tasks run on them records each disk's model and scheduler, and `iowatt sim tasks
# --validate` predicts the run on that model under the matching scheduler.
#   bash examples/task-disks.sh up      # mount them (in the background)
#   bash examples/task-disks.sh down    # unmount them and undo everything
# RESULTS (default iowatt-disks) is where the emulator writes its two `emulate` runs, apart
# from the tasks runs.
set -euo pipefail
HDD=/mnt/iowatt-hdd
SSD=/mnt/iowatt-ssd
BACKING=/dev/shm/iowatt-task-disks
RESULTS=${RESULTS:-iowatt-disks}

mount_one() { # NAME MOUNT MODEL
  local name=$1 mount=$2 model=$3 log="$BACKING/$1.log"
  mkdir -p "$BACKING/$name" "$mount"
  iowatt emulate mount "$BACKING/$name" "$mount" --disk-model "$model" --scheduler cfq \
    --results "$RESULTS" --no-report >"$log" 2>&1 &
  echo $! >"$BACKING/$name.pid"
  for _ in $(seq 300); do
    grep -q "mounted at" "$log" && return 0
    kill -0 "$(cat "$BACKING/$name.pid")" 2>/dev/null || break
    sleep 0.1
  done
  cat "$log" >&2
  return 1
}

unmount_one() { # NAME MOUNT
  local pid="$BACKING/$1.pid"
  if [ -f "$pid" ]; then
    kill -TERM "$(cat "$pid")" 2>/dev/null || true
    while kill -0 "$(cat "$pid")" 2>/dev/null; do sleep 0.1; done
    rm -f "$pid"
  fi
  rmdir "$2" 2>/dev/null || true
}

case "${1:-}" in
up)
  mount_one hdd "$HDD" barracuda-7200
  mount_one ssd "$SSD" dc-s3700
  echo "hdd: $HDD (barracuda-7200, cfq); ssd: $SSD (dc-s3700, cfq); files in $BACKING"
  ;;
down)
  unmount_one hdd "$HDD"
  unmount_one ssd "$SSD"
  rm -rf "$BACKING"
  ;;
*)
  echo "usage: $0 up|down" >&2
  exit 2
  ;;
esac
