#!/usr/bin/env bash
# Hard-link every finished shard folder of a running sharded run into KEEP, so that they survive
# the merge, which removes .shards once the manifest is written; stops when the manifest exists.
#   bash benchmarks/studies/scale/keep_shards.sh RUN_DIR KEEP &
# Then compare two runs' kept shards with compare_shards.py.
set -u
run=$1; keep=$2; mkdir -p "$keep"
while true; do
  for d in "$run"/.shards/0*; do
    [ -f "$d/DONE" ] && [ ! -d "$keep/$(basename "$d")" ] && cp -al "$d" "$keep/"
  done
  [ -f "$run/manifest.json" ] && break
  sleep 5
done
