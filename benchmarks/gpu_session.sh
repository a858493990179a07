#!/usr/bin/env bash
# One lent-GPU call of about 10 minutes (the device tool's limit per command). Usage, from the
# repository root of the copy on the device machine:
#   bash benchmarks/gpu_session.sh OUT_DIR [news|check|both] [SECONDS, default 570]
# news (the default): issue #31's news setting alone (bt_news_gpu.py): 1,500 updates of 32,000
#   tokens per model, English at 0.8x the bitext. That is what the probe (--probe 8000,16000,32000
#   --phase-seconds 150) chose on the H200 of 2026-11-29 (13.9-16.7 updates/s for each of three
#   side-by-side trainings); fixing it saves the probe's 70 s of the call;
# check: the GPU check of issue #36 (gpu_check.sh) with its 800-update training;
# both: the check, then the news setting in the time left (too little for it at the speed above).
# FROM=B (or C) in the environment starts the news setting at that phase, on a still-warm machine
# that holds the earlier phases' models; UNTIL=A (or B) stops after that phase; NEWS_STEPS sets
# the updates per model (default 1,500). More updates than one call holds, in two calls (the
# machine is given back after 30 s idle, so the second follows at once); what a session's 900 s
# of device time held on 2026-11-30, the machine's start included (422 s + 426 s, 12 s left):
#   NEWS_STEPS=2500 UNTIL=B bash benchmarks/gpu_session.sh $OUT news 530
#   NEWS_STEPS=2500 FROM=C bash benchmarks/gpu_session.sh $OUT news 425
# Needs .gpu-data and .whl carried: `bash benchmarks/gpu_prepare.sh` builds both here, the
# project's wheel from the working tree (docs/benchmarks.md, "GPU check").
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=$1; MODE=${2:-news}; LIMIT=${3:-570}; S=$(date +%s)
. benchmarks/_gpu_env.sh
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader || true
"$PY" -c "import torch, transformers; print('torch', torch.__version__, 'transformers', transformers.__version__)"
if [ "$MODE" != news ]; then
    CHECK=$(( LIMIT - 10 )); [ "$MODE" = both ] && CHECK=230
    timeout $CHECK bash benchmarks/gpu_check.sh --data .gpu-data \
        --out "$OUT/gpu_check.json" > "$OUT/gpu_check.log" 2>&1
    echo "gpu_check exit $? at $(( $(date +%s) - S )) s"
    grep -a 'gpu_check:' "$OUT/gpu_check.log" | cut -c1-420
fi
[ "$MODE" = check ] && exit 0
# every phase's command validated first (seconds): a wrong option fails here, not after phase A
"$PY" benchmarks/bt_news_gpu.py --check --data .gpu-data --out /tmp/news-check \
    --logs /tmp/news-check-logs > /tmp/news-check.log 2>&1 \
    || { echo "news: --check failed:"; grep -a "exit [^0]" /tmp/news-check.log | cut -c1-420; exit 1; }
# news alone: the three phases (about 230 + 70 + 200 s) fit one call; FROM=B or C continues on
# a still-warm machine
STEPS=(); [ "$MODE" = news ] && STEPS=(--steps "${NEWS_STEPS:-1500}" --batch-tokens 32000 --mono-ratio 0.8)
timeout $(( LIMIT - ($(date +%s) - S) )) "$PY" benchmarks/bt_news_gpu.py --data .gpu-data \
    --out "$OUT" --gpu-check "$OUT/gpu_check.json" "${STEPS[@]}" ${FROM:+--from-phase $FROM} \
    ${UNTIL:+--until-phase $UNTIL} > "$OUT/news.log" 2>&1
echo "news exit $? at $(( $(date +%s) - S )) s"
cut -c1-420 "$OUT/news.log" | tail -25
