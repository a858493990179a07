#!/usr/bin/env bash
# Creates (or updates) the project's virtual environment: pinned CPU torch, the package with every
# extra (full) and the test dependencies, and KenLM's lmplz/build_binary built from the kenlm sdist.
# Idempotent: each part is skipped when it is already in place. Usage: scripts/setup-env.sh [VENV]
set -euo pipefail
cd "$(dirname "$0")/.."
VENV=${1:-.venv}
PY=${PYTHON:-python3}
STAMP="$VENV/.bitextforge-setup"
want="$(cat pyproject.toml constraints.txt scripts/setup-env.sh | sha256sum | cut -c1-16)"

if [ ! -x "$VENV/bin/python" ]; then
  echo "[setup] creating $VENV"
  "$PY" -m venv "$VENV"
fi
PIP=("$VENV/bin/python" -m pip --disable-pip-version-check -q)
log=$(mktemp)
# pip is run quietly; its full output is shown only when it fails
quiet() { "$@" >"$log" 2>&1 || { grep -v '^WARNING: Location' "$log" | tail -40; return 1; }; }

if [ "$(cat "$STAMP" 2>/dev/null)" != "$want" ]; then
  echo "[setup] installing torch (CPU, pinned) and dependencies"
  # torch first, pinned: otherwise sentence-transformers pulls a multi-GB CUDA build
  quiet "${PIP[@]}" install -c constraints.txt "torch==2.13.0"
  quiet "${PIP[@]}" install -c constraints.txt -e ".[full,test]"
  # OpusTrainer, for the test that loads the configuration a run writes: without its declared
  # dependencies, since it pins sentencepiece==0.1.99, which would replace the newer one the
  # project uses (its configuration loader needs neither; typo is what its modifiers import)
  quiet "${PIP[@]}" install --no-deps "opustrainer==0.5" "typo==0.1.5"
  echo "$want" > "$STAMP"
fi

# KenLM's lmplz and build_binary are not in the kenlm wheel; build them from the sdist.
if [ ! -x "$VENV/bin/lmplz" ] || [ ! -x "$VENV/bin/build_binary" ]; then
  echo "[setup] building KenLM lmplz/build_binary from the kenlm sdist (about a minute)"
  if ! dpkg -s libboost-program-options-dev libboost-system-dev libboost-thread-dev \
        libboost-test-dev zlib1g-dev libbz2-dev liblzma-dev >/dev/null 2>&1; then
    if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
      apt-get update -qq
      DEBIAN_FRONTEND=noninteractive apt-get install -y -qq libboost-program-options-dev \
        libboost-system-dev libboost-thread-dev libboost-test-dev zlib1g-dev libbz2-dev liblzma-dev >/dev/null
    else
      echo "[setup] warning: Boost/zlib/bz2/lzma headers missing and not root; install" \
           "libboost-program-options-dev libboost-system-dev libboost-thread-dev libboost-test-dev" \
           "zlib1g-dev libbz2-dev liblzma-dev, then rerun. Skipping lmplz (kenlm filters still score" \
           "with existing models)." >&2
      exit 0
    fi
  fi
  work=$(mktemp -d)
  trap 'rm -rf "$work" "$log"' EXIT
  quiet "${PIP[@]}" download --no-deps --no-binary kenlm "kenlm==$("$VENV/bin/python" -c 'import importlib.metadata as m; print(m.version("kenlm"))')" -d "$work"
  tar xzf "$work"/kenlm-*.tar.gz -C "$work"
  src=$(ls -d "$work"/kenlm-*/)
  cmake -S "$src" -B "$work/build" -DCMAKE_BUILD_TYPE=Release >"$work/cmake.log" 2>&1 \
    || { tail -20 "$work/cmake.log"; exit 1; }
  make -C "$work/build" -j"$(nproc)" lmplz build_binary >"$work/make.log" 2>&1 \
    || { tail -20 "$work/make.log"; exit 1; }
  cp "$work/build/bin/lmplz" "$work/build/bin/build_binary" "$VENV/bin/"
fi
# Debian's chromium for the browser test of `bitextforge serve` (Playwright drives it; never
# `playwright install`, which downloads a browser). Without root the test skips with its reason.
if ! command -v chromium >/dev/null; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
    echo "[setup] installing chromium with apt (browser test of bitextforge serve)"
    { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null; } \
      || echo "[setup] warning: apt-get install chromium failed; the browser test will skip" >&2
  else
    echo "[setup] note: chromium missing and not root: the browser test of bitextforge serve" \
         "skips (apt-get install chromium)" >&2
  fi
fi
echo "[setup] environment ready: $VENV"
