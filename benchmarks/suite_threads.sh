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
RUNS=${1:-3}
source benchmarks/_suite.sh
for r in $(seq "$RUNS"); do
  suite_run A "$r" -- --no-loadscope-reorder
  suite_run B "$r" OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 -- --no-loadscope-reorder
done
