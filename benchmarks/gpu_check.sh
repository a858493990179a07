#!/usr/bin/env bash
# The GPU check of issue #36 on a lent device machine (docs/benchmarks.md, "GPU check").
#
# Run from the repository root of the copy on that machine, e.g. through the device tool:
#   bash benchmarks/gpu_check.sh --data .gpu-data --out "$OUT/gpu_check.json"
# It installs the wheels carried in .whl/ (what that machine lacks: ctranslate2, pydantic,
# sacremoses, ..., and this project's own wheel where one was built), else this project without
# its dependencies (pip install -e .), then runs gpu_check.py with the
# arguments given (--smoke --device cpu checks the script itself on any machine).
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
# the wheels only where something they hold is missing (the device image), not in a full
# environment such as this project's own (they are built for that image's Python 3.12)
if compgen -G ".whl/*.whl" > /dev/null \
        && ! "$PY" -c "import bitextforge, ctranslate2, pydantic, sacremoses" 2>/dev/null; then
    "$PY" -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
        --target /tmp/site .whl/*.whl
    export PYTHONPATH=/tmp/site${PYTHONPATH:+:$PYTHONPATH}
fi
if ! "$PY" -c "import bitextforge" 2>/dev/null; then
    # offline: setuptools from the machine, no build isolation, no dependencies
    "$PY" -m pip install -q --no-deps --no-build-isolation --no-index -e .
fi
export PYTHONUNBUFFERED=1
exec "$PY" benchmarks/gpu_check.py "$@"
