#!/usr/bin/env bash
# Kill + resume of recipes/wmt-filter-deen.yaml at crawl size:
#   bash benchmarks/studies/scale/kill_resume_wmt.sh N RUNNER MIN_DONE [--set ...]
# Starts run-wmt.sh N RUNNER -kill (output /work/scale-runs/wmt-N-RUNNER-kill), SIGKILLs the run
# and every process it started (Ray's too) once MIN_DONE shards hold DONE, keeps that part's log
# and samples as .part1.log / .part1.tree, then runs the same command again, which resumes.
# Run from the repository root (PY as for run-wmt.sh).
set -euo pipefail
n=$1; runner=$2; want=$3; shift 3
here=$(dirname "$0")
out=/work/scale-runs/wmt-$n-$runner-kill
py=${PY:-.venv/bin/python}
rm -rf "$out"
bash "$here/run-wmt.sh" "$n" "$runner" -kill "$@" &
job=$!
while [ "$(ls "$out"/.shards/*/DONE 2>/dev/null | wc -l)" -lt "$want" ]; do
  kill -0 "$job" 2>/dev/null || { echo "run ended before $want shards were done"; exit 1; }
  sleep 2
done
# the run's process: /usr/bin/time's child, a child of run-wmt.sh
timer=$(pgrep -P "$job" -f '/usr/bin/time' | head -1)
"$py" "$here/watch_tree.py" --kill "$timer"
wait "$job" || true
echo "killed at $(date -u '+%H:%M:%S UTC') with $(ls "$out"/.shards/*/DONE | wc -l) shards DONE" \
  | tee "$out.killed"
ls --full-time "$out"/.shards/*/DONE >> "$out.killed"  # when each shard finished
cp "$out.log" "$out.part1.log"; cp "$out.tree" "$out.part1.tree"
bash "$here/run-wmt.sh" "$n" "$runner" -kill "$@"
