#!/usr/bin/env bash
# Why the news setting's models stay on the first plateau (benchmarks/studies/bt-news/history.md, "The news
# setting"): on 2026-11-29 two of three bitext-only seeds ended 1,500 updates at batches of
# 32,000 tokens (16 epochs) with training loss 5.0 and BLEU under 1. This trains the bitext-only
# de->en model of seed 2 (a stuck one) side by side with the peak learning rate and the
# arithmetic varied, every other option the evaluator's default, and prints each training's
# validation-loss curve (newstest2017, every 375 updates) and its newstest2019 BLEU. One lent-GPU
# call of about 5 minutes; needs .gpu-data and .whl carried (benchmarks/gpu_prepare.sh). Usage,
# from the repository root of the copy on the device machine:
#   bash benchmarks/gpu_news_lr.sh OUT_DIR [UPDATES, default 1500] [BATCH_TOKENS, default 32000]
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=$1; STEPS=${2:-1500}; BATCH=${3:-32000}
. benchmarks/_gpu_env.sh
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader || true
P=.gpu-data/deen-train-pool; T=.gpu-data/wmt-newstest-deen
run() {  # name seed lr precision
    "$PY" -m bitextforge.cli train-nmt \
        --train-tsv $P/news-commentary-v11-deen-20k/train.de-en.tsv.gz \
                    $P/europarl-v7-deen-first20k/train.de-en.tsv.gz \
        --tsv-langs de-en --src-lang de --tgt-lang en -o "/tmp/lr-$1" \
        --valid-src $T/newstest2017.de --valid-tgt $T/newstest2017.en \
        --valid-every-steps $(( STEPS / 4 )) --test-src $T/newstest2019-deen.de \
        --test-tgt $T/newstest2019-deen.en --max-steps "$STEPS" --batch-tokens "$BATCH" \
        --threads 2 --device auto --seed "$2" --lr "$3" --precision "$4" > "$OUT/$1.log" 2>&1
    echo "$1 exit $?"
}
S=$(date +%s)
run s2-lr2e-3-bf16 2 0.002 bf16 & run s2-lr2e-3-fp32 2 0.002 fp32 &
run s2-lr1e-3-bf16 2 0.001 bf16 & run s2-lr5e-4-bf16 2 0.0005 bf16 &
run s3-lr1e-3-bf16 3 0.001 bf16 &
wait
echo "all done in $(( $(date +%s) - S )) s"
for d in /tmp/lr-*; do
    cp "$d/train_log.json" "$OUT/$(basename "$d").train_log.json" 2>/dev/null
    "$PY" - "$d/train_log.json" <<'PY'
import json, sys
try:
    log = json.load(open(sys.argv[1]))
except OSError as e:
    sys.exit(f"{sys.argv[1]}: {e}")
o = log["options"]
curve = " ".join(f"{h['step']}:{h.get('valid_loss', h.get('train_loss'))}" for h in log["history"])
tests = "; ".join(f"beam {t.get('beam')} BLEU {t.get('bleu')}" for t in log.get("tests", []))
print(f"seed {o['seed']} lr {o['lr']} {log['precision']}: {log['steps']} updates, "
      f"{log['train_minutes']} min | valid loss by update {curve} | {tests}")
PY
done
