# Sourced (not run) by the lent-GPU scripts, gpu_check.sh, gpu_session.sh and gpu_news_lr.sh,
# from the repository root: makes this project and what the device image lacks importable.
# The wheels carried in .whl/ (ctranslate2, pydantic, sacremoses, ..., and this project's own,
# built by gpu_prepare.sh for that image's Python 3.12) go to /tmp/site, on PYTHONPATH, only
# where something they hold is missing, not in a full environment such as this project's own;
# without wheels, this project is installed from the tree without its dependencies (offline:
# setuptools from the machine, no build isolation). PY is the interpreter (default python3).
PY=${PYTHON:-python3}
if compgen -G ".whl/*.whl" > /dev/null \
        && ! "$PY" -c "import bitextforge, ctranslate2, pydantic, sacremoses" 2>/dev/null; then
    "$PY" -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
        --target /tmp/site .whl/*.whl
fi
if [ -d /tmp/site ]; then
    export PYTHONPATH=/tmp/site${PYTHONPATH:+:$PYTHONPATH}
fi
if ! "$PY" -c "import bitextforge" 2>/dev/null; then
    "$PY" -m pip install -q --no-deps --no-build-isolation --no-index -e .
fi
export PYTHONUNBUFFERED=1
