#!/usr/bin/env bash
# Training the WMT-style filter's models (recipes/wmt-filter-deen.yaml's prepare:) at crawl size,
# one trainer at a time, measured (docs/scale.md, "Training at crawl size"):
#   bash benchmarks/studies/scale/train-crawl.sh crawl  tables|lm-de|lm-en|classifier [SAMPLE]
#   bash benchmarks/studies/scale/train-crawl.sh curve  PAIRS     # tables from PAIRS sampled pairs
#   bash benchmarks/studies/scale/train-crawl.sh pool   SAMPLE    # all four from a sample of the
#                                                                 # 278k pool, then the AUC bench
# crawl: from /work/scale-data/pool20M.de-en.tsv (benchmarks/make_pool.py), the tables and the two
# KenLM models from a sample (default 1,000,000 pairs, 1,000,000 lines; KenLM memory: 2G), the
# classifier from its 25,000 pairs drawn evenly from the 20M file and newstest2016, with those
# models as features; outputs in /work/scale-runs/train-crawl/. curve: the tables alone from a
# sample of PAIRS of the 20M file (/work/scale-runs/train-curve-PAIRS/). pool: the recipe as it is
# but each of the tables and KenLM models trained on a sample of SAMPLE pairs / lines
# (/work/scale-runs/train-pool-SAMPLE/), then benchmarks/studies/wmt-filter-design/recipes/auc.yaml
# on the labelled noisy de-en corpus (benchmarks/make_noisy_deen.py) with those models.
# Each training runs under nice -n 19 and /usr/bin/time -v, with watch_tree.py summing the memory
# of bitextforge and the eflomal / lmplz processes it starts (/usr/bin/time's maximum resident set
# size is the largest single process). Log: /work/scale-runs/<name>.log.
# Run from the repository root; PY names the Python (default .venv/bin/python).
set -euo pipefail
py=${PY:-.venv/bin/python}
pool=/work/scale-data/pool20M.de-en.tsv
news=../shared/data/wmt-newstest-deen
mode=$1; what=$2; sample=${3:-}

measure() {  # NAME ARGS...: one measured bitextforge command
  local name=$1; shift
  local log=/work/scale-runs/$name.log
  {
    echo "date: $(date -u '+%Y-%m-%d %H:%M:%S UTC')"
    lscpu | grep -E 'Model name|^CPU\(s\)'
    lscpu | grep -o -w -E 'avx|avx2|avx512[a-z]*|fma' | sort -u | tr '\n' ' '; echo
    free -g | sed -n 2p
    echo "load before: $(uptime)"
    echo "code: $(git log --oneline -1)"
    echo "command: nice -n 19 /usr/bin/time -v $py -m bitextforge.cli $*"
  } > "$log"
  nice -n 19 /usr/bin/time -v "$py" -m bitextforge.cli "$@" >> "$log" 2>&1 &
  local pid=$!
  "$py" benchmarks/studies/scale/watch_tree.py "$pid" --every 2 > "/work/scale-runs/$name.tree" &
  wait "$pid"
  sleep 3; tail -1 "/work/scale-runs/$name.tree" >> "$log"
  echo "load after: $(uptime)" >> "$log"
  echo "date end: $(date -u '+%Y-%m-%d %H:%M:%S UTC')" >> "$log"
  grep -E 'Maximum resident|Elapsed|User time|System time|peak' "$log" | sed "s/^/$name: /"
}

feature_sets() {  # DIR: the classifier's features read the models under DIR
  echo --set "prepare[3].with.features[0].with.tables=$1/lexical-deen" \
       --set "prepare[3].with.features[1].with.tables=$1/lexical-deen" \
       --set "prepare[3].with.features[4].with.model=$1/lm/de.binary" \
       --set "prepare[3].with.features[5].with.model=$1/lm/en.binary" \
       --set "prepare[3].with.output=$1/pair-classifier-deen.joblib"
}

r=recipes/wmt-filter-deen.yaml
case $mode in
crawl)
  d=/work/scale-runs/train-crawl
  case $what in
  tables) measure "crawl-tables-${sample:=1000000}" prepare $r --only 0 \
            --set "prepare[0].with.corpus=[$pool]" --set "prepare[0].with.sample=$sample" \
            --set "prepare[0].with.output=$d/lexical-deen" ;;
  lm-de|lm-en)
    i=$([ "$what" = lm-de ] && echo 1 || echo 2); l=${what#lm-}
    s=()
    [ "${sample:=1000000}" != all ] && s=(--set "prepare[$i].with.sample=$sample")
    measure "crawl-$what-$sample" prepare $r --only "$i" --set "prepare[$i].with.text=[$pool]" \
      "${s[@]}" --set "prepare[$i].with.memory=2G" --set "prepare[$i].with.output=$d/lm/$l.binary" ;;
  classifier)
    # shellcheck disable=SC2046
    measure crawl-classifier prepare $r --only 3 \
      --set "prepare[3].with.corpus=[$pool, [$news/newstest2016.de, $news/newstest2016.en]]" \
      $(feature_sets $d) ;;
  esac ;;
curve)
  measure "curve-tables-$what" prepare $r --only 0 --set "prepare[0].with.corpus=[$pool]" \
    --set "prepare[0].with.sample=$what" \
    --set "prepare[0].with.output=/work/scale-runs/train-curve-$what/lexical-deen" ;;
pool)
  d=/work/scale-runs/train-pool-$what
  s=()
  if [ "$what" != full ]; then
    s=(--set "prepare[0].with.sample=$what" --set "prepare[1].with.sample=$what"
       --set "prepare[2].with.sample=$what")
  fi
  # shellcheck disable=SC2046
  measure "pool-$what" prepare $r "${s[@]}" --set "prepare[0].with.output=$d/lexical-deen" \
    --set "prepare[1].with.output=$d/lm/de.binary" --set "prepare[2].with.output=$d/lm/en.binary" \
    $(feature_sets $d)
  [ -f /work/scale-runs/noisy-deen.tsv ] ||
    "$py" benchmarks/make_noisy_deen.py /work/scale-runs/noisy-deen.tsv
  nice -n 19 "$py" -m bitextforge.cli run benchmarks/studies/wmt-filter-design/recipes/auc.yaml \
    --set input.path=/work/scale-runs/noisy-deen.tsv \
    --set "steps[0].with.model=$d/pair-classifier-deen.joblib" \
    --set "steps[1].with.tables=$d/lexical-deen" --set "output.dir=$d/auc" \
    > "/work/scale-runs/pool-$what-auc.log" 2>&1
  tail -20 "/work/scale-runs/pool-$what-auc.log" ;;
esac
