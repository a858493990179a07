# Shared by the suite side-by-side scripts (suite_order.sh, suite_threads.sh): source it from the
# repository root. suite_run ARM RUN [VAR=VALUE ...] -- [PYTEST OPTION ...] runs the whole suite
# as `make test` does (WORKERS workers, one file per worker, bytecode written) with those
# variables and options, prints "ARM RUN SECONDS s" (wall), and on a failure prints the tail of
# pytest's output and exits 1.
WORKERS=${WORKERS:-$(( $(nproc) + 1 ))}
_suite_log=$(mktemp); trap 'rm -f "$_suite_log"' EXIT

suite_run() {
  local arm=$1 run=$2; shift 2
  local vars=()
  while [ $# -gt 0 ] && [ "$1" != -- ]; do vars+=("$1"); shift; done
  [ $# -gt 0 ] && shift
  local s; s=$(date +%s.%N)
  env "${vars[@]}" PYTHONDONTWRITEBYTECODE= .venv/bin/python -m pytest -q -n "$WORKERS" \
      --dist loadfile -p no:cacheprovider "$@" tests > "$_suite_log" 2>&1 \
      || { echo "run $arm $run failed:" >&2; tail -20 "$_suite_log" >&2; exit 1; }
  printf '%s %d %.1f s\n' "$arm" "$run" "$(echo "$(date +%s.%N) - $s" | bc)"
}
