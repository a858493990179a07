#!/usr/bin/env bash
# One measured run of the rules-only recipe: bash benchmarks/studies/scale/run.sh N [TAG] [--set ...]
# Input /work/scale-data/crawlN.de-en.tsv (benchmarks/make_crawl_input.py), output
# /work/scale-runs/N[TAG]; writes the date, the machine, the load before and after, /usr/bin/time -v
# and the manifest's per-step seconds to /work/scale-runs/N[TAG].log. Run from the repository root.
set -euo pipefail
n=$1; tag=${2:-}; shift; [ $# -gt 0 ] && shift
out=/work/scale-runs/$n$tag
log=$out.log
mkdir -p "/work/scale-runs/spill-$n$tag"  # dedupe.v1 does not create spill_dir itself
{
  echo "date: $(date -u '+%Y-%m-%d %H:%M:%S UTC')"
  lscpu | grep -E 'Model name|^CPU\(s\)|^Flags' | sed 's/^Flags:/Flags:/'
  free -g | sed -n 2p
  echo "load before: $(uptime)"
} > "$log"
cmd=(nice -n 10 /usr/bin/time -v .venv/bin/bitextforge run -q
     benchmarks/studies/scale/recipes/rules-only.yaml
     --set "input.path=/work/scale-data/crawl$n.de-en.tsv" --set "output.dir=$out"
     --set "steps[0].with.spill_dir=/work/scale-runs/spill-$n$tag" "$@")
echo "command: ${cmd[*]}" >> "$log"
"${cmd[@]}" >> "$log" 2>&1
echo "load after: $(uptime)" >> "$log"
echo "date end: $(date -u '+%Y-%m-%d %H:%M:%S UTC')" >> "$log"
.venv/bin/python - "$out/manifest.json" >> "$log" <<'PY'
import json, sys
m = json.load(open(sys.argv[1]))
for s in m["steps"]:
    rows = s.get("rows_in") or s.get("in") or s.get("rows")
    print("step", s["index"], s["component"], "seconds", s.get("seconds"),
          "rows_in", rows, "rows/s", round(rows / s["seconds"]) if rows and s.get("seconds") else None)
print("manifest keys:", sorted(m))
PY
