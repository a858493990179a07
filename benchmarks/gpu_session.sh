#!/usr/bin/env bash
# One lent-GPU call of about 10 minutes (the device tool's limit per command): the GPU check of
# issue #36 with shortened settings, then issue #31's news setting (bt_news_gpu.py) in the time
# left. Usage, from the repository root of the copy on the device machine:
#   bash benchmarks/gpu_session.sh OUT_DIR [SECONDS, default 575]
# Needs .gpu-data and .whl carried (docs/benchmarks.md, "GPU check"; the .whl also holds this
# project's wheel: `pip wheel --no-deps --no-build-isolation -w .whl .`).
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=$1; LIMIT=${2:-575}; S=$(date +%s)
export PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader || true
python3 -c "import torch, transformers; print('torch', torch.__version__, 'transformers', transformers.__version__)"
nproc
timeout 230 bash benchmarks/gpu_check.sh --data .gpu-data --out "$OUT/gpu_check.json" \
    --gpu-steps 2000 --cpu-steps 40 --sentences 5000 > "$OUT/gpu_check.log" 2>&1
echo "gpu_check exit $? at $(( $(date +%s) - S )) s"
grep -a 'gpu_check:' "$OUT/gpu_check.log" | cut -c1-420
grep -a -m3 -i 'error' "$OUT/gpu_check.log" | cut -c1-300
export PYTHONPATH=/tmp/site
timeout $(( LIMIT - ($(date +%s) - S) )) python3 benchmarks/bt_news_gpu.py --data .gpu-data \
    --out "$OUT" --gpu-check "$OUT/gpu_check.json" > "$OUT/news.log" 2>&1
echo "news exit $? at $(( $(date +%s) - S )) s"
cut -c1-420 "$OUT/news.log" | tail -25
