#!/usr/bin/env bash
# The test suite's wall time with pytest-xdist's own file order (A: most tests first) and with
# the longest files first (B: tests/conftest.py's LONGEST_FILES and --no-loadscope-reorder, what
# `make test` uses), in turn A, B, A, B, ... so that both see the same machine (issue #35,
# docs/testing.md). Usage, from the repository root after `make env`:
#   bash benchmarks/suite_order.sh [RUNS, default 3] [WORKERS, default nproc + 1]
set -euo pipefail
cd "$(dirname "$0")/.."
RUNS=${1:-3}; WORKERS=${2:-$(( $(nproc) + 1 ))}
for r in $(seq "$RUNS"); do
  for arm in A B; do
    extra=(); [ "$arm" = B ] && extra=(--no-loadscope-reorder)
    s=$(date +%s.%N)
    PYTHONDONTWRITEBYTECODE= .venv/bin/python -m pytest -q -n "$WORKERS" --dist loadfile \
        "${extra[@]}" -p no:cacheprovider tests > /dev/null 2>&1 || { echo "run $arm $r failed" >&2; exit 1; }
    printf '%s %d %.1f s\n' "$arm" "$r" "$(echo "$(date +%s.%N) - $s" | bc)"
  done
done
