#!/usr/bin/env bash
# Score the eight shared ParaCrawl human-evaluation files (v3, v6, v6-2, v7; en-fr and en-cs) with
# benchmarks/studies/paracrawl-filter/recipes/filter.yaml and a given pair classifier, one run directory per file, for
# benchmarks/paracrawl_auc_table.py. The recipe's header has the same commands one at a time.
#
#   bash benchmarks/paracrawl_runs.sh runs/pc-lm models/paracrawl-enXX-8000-margin-ct2-lm.joblib
#   .venv/bin/python benchmarks/paracrawl_auc_table.py runs/pc-lm
#
# XX in the model path stands for fr or cs. The classifiers come from `bitextforge prepare
# benchmarks/studies/paracrawl-filter/recipes/filter.yaml` or benchmarks/bench_paracrawl_lexical.py; nothing is trained here.
set -euo pipefail
out=${1:?usage: paracrawl_runs.sh OUTPUT_ROOT MODEL_WITH_XX}
model=${2:?usage: paracrawl_runs.sh OUTPUT_ROOT MODEL_WITH_XX}
D=${BITEXTFORGE_SHARED_DATA:-../shared/data}/paracrawl-human-eval
[[ -d $D ]] || { echo "paracrawl_runs.sh: $D does not exist (set BITEXTFORGE_SHARED_DATA)" >&2; exit 2; }
for rel in v3 v6 v6-2 v7; do
  case $rel in
    v3) dir=paracrawl-v3-validation-data
        cols='[url1, url2, src, tgt, hunalign, zipporah, bicleaner, label, comments]' ;;
    *)  dir=paracrawl-$rel-validation
        cols='[url1, url2, src, tgt, bicleaner, label, comments, time]' ;;
  esac
  for lang in fr cs; do
    m=${model//XX/$lang}
    [[ -f $m ]] || { echo "paracrawl_runs.sh: $m does not exist" >&2; exit 2; }
    .venv/bin/bitextforge run benchmarks/studies/paracrawl-filter/recipes/filter.yaml --set 'prepare=[]' \
      --set "input.path=$D/$dir/sorted.en-$lang" --set "input.columns=$cols" \
      --set "steps[0].with.tgt_lang=$lang" --set "steps[1].with.model=$m" \
      --set "output.dir=$out/paracrawl-filter-$rel-en-$lang" --force
  done
done
