#!/usr/bin/env bash
# The GPU check of issue #36 on a lent device machine (docs/benchmarks.md, "GPU check").
#
# Run from the repository root of the copy on that machine, e.g. through the device tool:
#   bash benchmarks/gpu_check.sh --data .gpu-data --out "$OUT/gpu_check.json"
# It installs what that machine lacks (benchmarks/_gpu_env.sh: the wheels carried in .whl/, else
# this project without its dependencies), then runs gpu_check.py with the arguments given
# (--smoke --device cpu checks the script itself on any machine).
set -euo pipefail
cd "$(dirname "$0")/.."
. benchmarks/_gpu_env.sh
exec "$PY" benchmarks/gpu_check.py "$@"
