#!/usr/bin/env bash
# Sample a running run's peak and current RSS and its finished shards once a minute:
#   bash benchmarks/studies/scale/watch_memory.sh PID OUTDIR >> LOG
# (the peak of a run that is stopped before it ends: /usr/bin/time -v reports only at exit)
pid=$1; out=$2
while kill -0 "$pid" 2>/dev/null; do
  echo "$(date -u +%H:%M:%S) done_shards=$(ls "$out"/.shards/*/DONE 2>/dev/null | wc -l)" \
       "$(grep -E 'VmHWM|VmRSS' /proc/$pid/status | tr -s ' \t' ' ' | tr '\n' ' ')"
  sleep 60
done
