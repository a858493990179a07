#!/bin/sh
# The bilingual embedding models behind docs/benchmarks.md, with train-bilingual's defaults (GRU,
# emb 256, hidden 256 per direction = 512-dim sentences, joint sentencepiece 8k, batch 64 + 64
# autoencoding, <= 50 subwords, Adam 2e-3, one torch thread each). de-en trains on one core for
# 55 minutes while en-fr and then en-cs train on the other for 25 minutes each. Run from the
# repository root:
#   BITEXTFORGE_SHARED_DATA=/work/shared/data nohup sh benchmarks/bench_bilingual_train.sh \
#       > models/bilingual-train.log 2>&1 &
# The recipes recipes/kim-alignment.yaml and benchmarks/studies/kim-bilingual/recipes/*.yaml train the same models in their prepare: lists when missing.
D=${BITEXTFORGE_SHARED_DATA:?set BITEXTFORGE_SHARED_DATA to the shared data folder}
BF=.venv/bin/bitextforge
mkdir -p models/logs
$BF train-bilingual -o models/bilingual-de-en --src-lang de --tgt-lang en \
  --src $D/multi30k/train.de.gz --tgt $D/multi30k/train.en.gz \
  --src $D/tatoeba-test-v2021-08-07/deu-eng.deu --tgt $D/tatoeba-test-v2021-08-07/deu-eng.eng \
  --src $D/wmt-newstest-deen/newstest2014.de --tgt $D/wmt-newstest-deen/newstest2014.en \
  --src $D/wmt-newstest-deen/newstest2015.de --tgt $D/wmt-newstest-deen/newstest2015.en \
  --src $D/wmt-newstest-deen/newstest2016.de --tgt $D/wmt-newstest-deen/newstest2016.en \
  --src $D/wmt-newstest-deen/newstest2017.de --tgt $D/wmt-newstest-deen/newstest2017.en \
  --dev-src $D/multi30k/val.de.gz --dev-tgt $D/multi30k/val.en.gz \
  --max-minutes 55 > models/logs/bilingual-de-en.log 2>&1 &
( for L in fr cs; do
  $BF train-bilingual -o models/bilingual-en-$L --src-lang en --tgt-lang $L \
    --src $D/multi30k/train.en.gz --tgt $D/multi30k/train.$L.gz \
    --dev-src $D/multi30k/val.en.gz --dev-tgt $D/multi30k/val.$L.gz \
    --max-minutes 25 > models/logs/bilingual-en-$L.log 2>&1
done ) &
wait
# MLP similarities (2 x 512 ReLU, shuffled positives as negatives), one thread each
export OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1
$BF train-mlp-similarity --model models/bilingual-de-en \
  --src $D/multi30k/val.de.gz --tgt $D/multi30k/val.en.gz \
  --src $D/wmt-newstest-deen/newstest2016.de --tgt $D/wmt-newstest-deen/newstest2016.en \
  --negatives shuffle -o models/mlp-de-en.joblib &
for L in fr cs; do
  $BF train-mlp-similarity --model models/bilingual-en-$L \
    --src $D/multi30k/val.en.gz --tgt $D/multi30k/val.$L.gz --negatives shuffle \
    -o models/mlp-en-$L.joblib
done
wait
