#!/usr/bin/env bash
# Kill + resume: bash benchmarks/studies/scale/kill_resume.sh N [MIN_DONE]
# Starts the rules-only recipe on /work/scale-data/crawlN.de-en.tsv into /work/scale-runs/N-killMIN_DONE,
# kill -9s it once MIN_DONE (default 3) shards hold DONE, then reruns the same command through
# run.sh (logged to /work/scale-runs/N-killMIN_DONE.log). Compare with the uninterrupted run afterwards:
#   .venv/bin/python benchmarks/compare_outputs.py /work/scale-runs/N /work/scale-runs/N-killMIN_DONE
set -euo pipefail
n=$1; want=${2:-3}
out=/work/scale-runs/$n-kill$want
rm -rf "$out" "/work/scale-runs/spill-$n-kill$want"
mkdir -p "/work/scale-runs/spill-$n-kill$want"  # dedupe.v1 does not create spill_dir itself
nice -n 10 .venv/bin/bitextforge run -q benchmarks/studies/scale/recipes/rules-only.yaml \
  --set "input.path=/work/scale-data/crawl$n.de-en.tsv" --set "output.dir=$out" \
  --set "steps[0].with.spill_dir=/work/scale-runs/spill-$n-kill$want" &
pid=$!
while [ "$(ls "$out"/.shards/*/DONE 2>/dev/null | wc -l)" -lt "$want" ]; do
  kill -0 "$pid" 2>/dev/null || { echo "run ended before $want shards were done"; exit 1; }
  sleep 1
done
kill -9 "$pid"
wait "$pid" || true
echo "killed pid $pid at $(date -u '+%H:%M:%S UTC') with $(ls "$out"/.shards/*/DONE | wc -l) shards DONE" \
  | tee /work/scale-runs/$n-kill$want.killed
bash "$(dirname "$0")/run.sh" "$n" "-kill$want"
