#!/bin/sh
# The real training runs behind docs/benchmarks.md (run from the repository root):
#   nohup nice -n 10 sh tests/bench/bench_bilingual_train.sh > models/bilingual-train.log 2>&1 &
# Sized for a 2-core machine shared with other jobs (load ~18): emb 96, hidden 96 (192-dim
# sentences), joint sentencepiece 2k, GRU, batch 32 + 32 autoencoding, <=32 subwords, Adam 1e-3,
# one torch thread.
D=../shared/data
BF=.venv/bin/bitextforge
$BF train-bilingual -o models/bilingual-de-en --src-lang de --tgt-lang en \
  --src $D/multi30k/train.de.gz --tgt $D/multi30k/train.en.gz \
  --src $D/tatoeba-test-v2021-08-07/deu-eng.deu --tgt $D/tatoeba-test-v2021-08-07/deu-eng.eng \
  --src $D/wmt-newstest-deen/newstest2014.de --tgt $D/wmt-newstest-deen/newstest2014.en \
  --src $D/wmt-newstest-deen/newstest2015.de --tgt $D/wmt-newstest-deen/newstest2015.en \
  --src $D/wmt-newstest-deen/newstest2016.de --tgt $D/wmt-newstest-deen/newstest2016.en \
  --src $D/wmt-newstest-deen/newstest2017.de --tgt $D/wmt-newstest-deen/newstest2017.en \
  --dev-src $D/multi30k/val.de.gz --dev-tgt $D/multi30k/val.en.gz \
  --vocab-size 2000 --embed-dim 96 --hidden-dim 96 --batch-size 32 --max-tokens 32 --max-minutes 20 --save-minutes 4
for L in fr cs; do
  $BF train-bilingual -o models/bilingual-en-$L --src-lang en --tgt-lang $L \
    --src $D/multi30k/train.en.gz --tgt $D/multi30k/train.$L.gz \
    --dev-src $D/multi30k/val.en.gz --dev-tgt $D/multi30k/val.$L.gz \
    --vocab-size 2000 --embed-dim 96 --hidden-dim 96 --batch-size 32 --max-tokens 32 --max-minutes 7 --save-minutes 3.5
done
