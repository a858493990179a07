#!/usr/bin/env bash
# Everything a lent-GPU call needs carried, built here before the call (docs/benchmarks.md, "GPU
# check"): .gpu-data (the 13 MB of shared data gpu_check.sh and bt_news_gpu.py read) and .whl (the
# wheels the GPU image lacks, for its Python 3.12, and this project's own wheel, rebuilt every time
# so the call runs the code of the working tree). Both folders are ignored by git. Usage, from the
# repository root:  bash benchmarks/gpu_prepare.sh   (then carry [".whl", ".gpu-data"])
set -euo pipefail
cd "$(dirname "$0")/.."
D=${BITEXTFORGE_SHARED_DATA:-../shared/data}
[ -d "$D/deen-train-pool" ] || { echo "gpu_prepare: no $D/deen-train-pool (set BITEXTFORGE_SHARED_DATA)" >&2; exit 2; }
mkdir -p .gpu-data/deen-train-pool .gpu-data/wmt-newstest-deen
for d in europarl-v7-deen-first20k news-commentary-v11-deen-20k wmt-mixed-sample-opennmt-10k \
         wmt-newstest-2008-2013-deen tatoeba-anki-deu-eng-2018-05; do
  mkdir -p .gpu-data/deen-train-pool/$d
  cp "$D/deen-train-pool/$d/train.de-en.tsv.gz" .gpu-data/deen-train-pool/$d/
done
cp "$D"/wmt-newstest-deen/newstest{2016,2017}.{de,en} "$D"/wmt-newstest-deen/newstest2019-deen.{de,en} \
   .gpu-data/wmt-newstest-deen/
.venv/bin/python -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 \
    --implementation cp --platform manylinux_2_28_x86_64 --platform manylinux_2_17_x86_64 \
    --platform manylinux2014_x86_64 -d .whl \
    ctranslate2==4.8.5 pydantic==2.14.4 pydantic-core==2.50.5 annotated-types typing-inspection \
    "typing-extensions>=4.16" sacremoses
rm -f .whl/bitextforge-*.whl
.venv/bin/python -m pip wheel -q --no-deps --no-build-isolation -w .whl . && rm -rf build
du -sh .gpu-data .whl
