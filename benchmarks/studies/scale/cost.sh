#!/usr/bin/env bash
# One step-rate run for the cost plan (docs/scale.md, "Cost plan"): a shelf recipe on a small real input, each
# step's manifest seconds counted as CPU time of its thread (step_cpu.py):
#   bash benchmarks/studies/scale/cost.sh TAG RECIPE [--set ...]
# Output /work/scale-runs/cost-TAG, log /work/scale-runs/cost-TAG.log: date, machine, load before
# and after, /usr/bin/time -v and the per-step rows and rows per CPU-second (step_rates.py).
# Run from the repository root.
set -euo pipefail
py=${PY:-.venv/bin/python}
tag=$1; recipe=$2; shift 2
out=/work/scale-runs/cost-$tag
log=$out.log
{
  echo "date: $(date -u '+%Y-%m-%d %H:%M:%S UTC')"
  lscpu | grep -E 'Model name|^CPU\(s\)'
  echo "load before: $(uptime)"
  echo "code: $(git log --oneline -1)"
} > "$log"
cmd=(nice -n 19 /usr/bin/time -v "$py" benchmarks/studies/scale/step_cpu.py run -q "$recipe"
     --runner local -o "$out" --set output.report=false "$@")
echo "command: ${cmd[*]}" >> "$log"
"${cmd[@]}" >> "$log" 2>&1
echo "load after: $(uptime)" >> "$log"
echo "date end: $(date -u '+%Y-%m-%d %H:%M:%S UTC')" >> "$log"
"$py" benchmarks/studies/scale/step_rates.py "$out/manifest.json" >> "$log"
du -sb "$out"/* >> "$log"
