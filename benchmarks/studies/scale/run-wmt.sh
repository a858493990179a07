#!/usr/bin/env bash
# One measured run of recipes/wmt-filter-deen.yaml at crawl size:
#   bash benchmarks/studies/scale/run-wmt.sh N RUNNER [TAG] [--set ...]
# Input /work/scale-data/crawlN.de-en.tsv (benchmarks/make_crawl_input.py), output
# /work/scale-runs/wmt-N-RUNNER[TAG]; the models come from the recipe's prepare: (run it once
# first: bitextforge prepare recipes/wmt-filter-deen.yaml). Writes the date, the machine, the load
# before and after, /usr/bin/time -v, the process tree's peak memory and CPU-seconds
# (watch_tree.py; the samples in the output's .tree) and the manifest's per-step seconds to the
# output's .log.
# Run from the repository root; PY names the Python to run bitextforge with (default .venv/bin/python).
set -euo pipefail
py=${PY:-.venv/bin/python}
n=$1; runner=$2; tag=${3:-}; shift 2; [ $# -gt 0 ] && shift
out=/work/scale-runs/wmt-$n-$runner$tag
log=$out.log
{
  echo "date: $(date -u '+%Y-%m-%d %H:%M:%S UTC')"
  lscpu | grep -E 'Model name|^CPU\(s\)|^Flags'
  free -g | sed -n 2p
  echo "load before: $(uptime)"
  echo "code: $(git log --oneline -1)"
} > "$log"
cmd=(/usr/bin/time -v "$py" -m bitextforge.cli run -q recipes/wmt-filter-deen.yaml
     --runner "$runner" --set "input.path=/work/scale-data/crawl$n.de-en.tsv"
     --set "output.dir=$out" --set output.report=false "$@")
echo "command: ${cmd[*]}" >> "$log"
"${cmd[@]}" >> "$log" 2>&1 &
pid=$!
# Ray's workers are the run's descendants: their memory and CPU are summed here
"$py" benchmarks/studies/scale/watch_tree.py "$pid" --every 5 > "$out.tree" &
wait "$pid"
sleep 6; tail -1 "$out.tree" >> "$log"
echo "load after: $(uptime)" >> "$log"
echo "date end: $(date -u '+%Y-%m-%d %H:%M:%S UTC')" >> "$log"
"$py" benchmarks/studies/scale/step_rates.py "$out/manifest.json" >> "$log"
