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

log=$(mktemp)
work=""
trap 'rm -rf "$log" ${work:+"$work"}' EXIT
started=$SECONDS
# On a terminal pip shows its own download bars; otherwise (a log, CI) it runs quietly, each stage
# is one line with the time it usually takes, and pip's full output is shown only when it fails.
if [ -t 1 ]; then
  PIP=("$VENV/bin/python" -m pip --disable-pip-version-check)
  quiet() { "$@"; }
else
  PIP=("$VENV/bin/python" -m pip --disable-pip-version-check -q)
  quiet() { "$@" >"$log" 2>&1 || { grep -v '^WARNING: Location' "$log" | tail -40; return 1; }; }
fi
# stage TEXT COMMAND...: one line saying what is installed and how long it usually takes, then how
# long it took
stage() {
  local text=$1 t0=$SECONDS
  shift
  echo "[setup] $text"
  "$@"
  echo "[setup]   done in $(( (SECONDS - t0) / 60 ))m$(( (SECONDS - t0) % 60 ))s"
}

if [ ! -x "$VENV/bin/python" ]; then
  echo "[setup] creating $VENV; a first set-up takes 5-20 minutes (pip downloads and unpacks" \
       "about 2.3 GB; measured 4 minutes from pip's cache on 2 quiet cores, 11 on 2 busy cores" \
       "from the network); later runs skip what is in place"
  "$PY" -m venv "$VENV"
fi

if [ "$(cat "$STAMP" 2>/dev/null)" != "$want" ]; then
  # torch first, pinned: otherwise sentence-transformers pulls a multi-GB CUDA build
  stage "1/3 torch 2.13.0, CPU build (about 200 MB; 1-4 minutes)" \
    quiet "${PIP[@]}" install -c constraints.txt "torch==2.13.0"
  stage "2/3 bitextforge with every extra and the test tools (transformers, CTranslate2, Ray, "\
"faiss, ...; 3-10 minutes, a rerun with nothing new under a minute)" \
    quiet "${PIP[@]}" install -c constraints.txt -e ".[full,test]"
  # OpusTrainer, for the test that loads the configuration a run writes: without its declared
  # dependencies, since it pins sentencepiece==0.1.99, which would replace the newer one the
  # project uses (its configuration loader needs neither; typo is what its modifiers import)
  stage "3/3 OpusTrainer (seconds)" \
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
echo "[setup] environment ready: $VENV ($(( (SECONDS - started) / 60 ))m$(( (SECONDS - started) % 60 ))s)"
