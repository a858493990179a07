#!/usr/bin/env bash
# RSS and PSS of each Ray actor and of the driver, from /proc/PID/smaps_rollup, every 30 s while
# the driver lives (watch_tree.py sums them; this names them):
#   bash benchmarks/studies/scale/watch_actors.sh DRIVER_PID OUT
drv=$1; out=$2
while kill -0 $drv 2>/dev/null; do
  echo "--- $(date -u +%H:%M:%S)" >> $out
  for p in $(ps -e -o pid=); do
    [ -r /proc/$p/smaps_rollup ] || continue
    c=$(tr '\0' ' ' < /proc/$p/cmdline 2>/dev/null | cut -c1-70)
    case "$c" in *ray::*|*"bitextforge.cli run"*) echo "$p $(grep -E '^(Rss|Pss):' /proc/$p/smaps_rollup | awk '{printf "%s %d MB ", $1, $2/1024}') $c" >> $out;; esac
  done
  sleep 30
done
