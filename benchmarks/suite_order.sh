#!/usr/bin/env bash
# The test suite's wall time with pytest-xdist's own file order (A: most tests first) and with
# the longest files first (B: tests/conftest.py's LONGEST_FILES and --no-loadscope-reorder, what
# `make test` uses), in turn A, B, A, B, ... so that both see the same machine (issue #35,
# docs/testing.md). Usage, from the repository root after `make env`:
#   bash benchmarks/suite_order.sh [RUNS, default 3] [WORKERS, default nproc + 1]
set -euo pipefail
cd "$(dirname "$0")/.."
RUNS=${1:-3}; WORKERS=${2:-$(( $(nproc) + 1 ))}
source benchmarks/_suite.sh
for r in $(seq "$RUNS"); do
  suite_run A "$r" --
  suite_run B "$r" -- --no-loadscope-reorder
done
