#!/usr/bin/env bash
# The test suite's wall time as `make test` runs it (A) and with every library's OpenMP and BLAS
# pools at one thread unless a test asks for more (B: OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1),
# in turn A, B, A, B, ... so that both see the same machine (issue #35, docs/testing.md). The
# suite runs nproc + 1 workers, so a library that starts a thread per core oversubscribes the
# cores, and OpenMP threads wait for one another at every parallel region. Usage, from the
# repository root after `make env`:
#   bash benchmarks/suite_threads.sh [RUNS, default 3]
set -euo pipefail
cd "$(dirname "$0")/.."
RUNS=${1:-3}; WORKERS=$(( $(nproc) + 1 ))
log=$(mktemp); trap 'rm -f "$log"' EXIT
for r in $(seq "$RUNS"); do
  for arm in A B; do
    env=(); [ "$arm" = B ] && env=(OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1)
    s=$(date +%s.%N)
    env "${env[@]}" PYTHONDONTWRITEBYTECODE= .venv/bin/python -m pytest -q -n "$WORKERS" \
        --dist loadfile --no-loadscope-reorder -p no:cacheprovider tests > "$log" 2>&1 \
        || { echo "run $arm $r failed:" >&2; tail -20 "$log" >&2; exit 1; }
    printf '%s %d %.1f s\n' "$arm" "$r" "$(echo "$(date +%s.%N) - $s" | bc)"
  done
done
