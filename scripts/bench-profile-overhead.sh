#!/usr/bin/env bash
# What does `port analyze` cost over running the app alone? For each app, runs
# it plain (`python APP ARGS`) and under `port analyze` (default: sampling and
# capture in the same run), alternating, REPEATS times each in the same
# invocation, and prints the median wall times and their ratio.
# Target: <= 1.05x of a plain run (median), capture included.
#
#   scripts/bench-profile-overhead.sh [--rate HZ] [--repeats N] [--no-capture]
#                                     [APP.py [-- ARGS...]]
#
# Without an app it measures the fixture apps, a call-heavy one included
# (pure_python.py: 150,000 small calls; capture_cases.py: 300,000).
# PORT overrides the binary (default target/release/port, built if missing).
# PYTHON overrides the interpreter (default .venv/bin/python, else python3).
set -euo pipefail
cd "$(dirname "$0")/.."

rate=100
repeats=5
mode=(  )
apps=()
while [ $# -gt 0 ]; do
  case "$1" in
    --rate) rate=$2; shift 2 ;;
    --repeats) repeats=$2; shift 2 ;;
    --no-capture) mode=(--no-capture); shift ;;
    --) shift; apps=("${apps[-1]} $*"); break ;;
    -*) echo "bench: unknown option $1" >&2; exit 2 ;;
    *) apps+=("$1"); shift ;;
  esac
done
if [ ${#apps[@]} -eq 0 ]; then
  apps=(
    "fixtures/apps/mixed_app.py 2"
    "fixtures/apps/black_scholes.py 1000000 20"
    "fixtures/apps/nbody.py"
    "fixtures/apps/pure_python.py 150000"
    "fixtures/apps/capture_cases.py"
  )
fi

python=${PYTHON:-}
if [ -z "$python" ]; then
  if [ -x .venv/bin/python ]; then python=.venv/bin/python; else python=python3; fi
fi
port=${PORT:-target/release/port}
if [ ! -x "$port" ]; then
  echo "bench: building $port" >&2
  cargo build -q --release >&2
fi
# Absolute, symlinks kept: a venv's python is a link to the base interpreter.
abs() { case "$1" in */*) echo "$(cd "$(dirname "$1")" && pwd)/$(basename "$1")" ;; *) echo "$1" ;; esac; }
python=$(abs "$python")
port=$(abs "$port")
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

now() { date +%s.%N; }
run_timed() {
  local t0 t1
  t0=$(now)
  (cd "$work" && "$@" >/dev/null 2>&1) || { echo "bench: failed: $*" >&2; exit 1; }
  t1=$(now)
  echo "$t1 - $t0" | bc -l
}
median() { sort -g | awk '{a[NR]=$1} END {if (NR%2) print a[(NR+1)/2]; else print (a[NR/2]+a[NR/2+1])/2}'; }

summary=()
for spec in "${apps[@]}"; do
  read -r app app_args <<<"$spec"
  [ -f "$app" ] || { echo "bench: app $app not found" >&2; exit 2; }
  app=$(realpath "$app")
  # shellcheck disable=SC2206
  args=($app_args)
  plain=("$python" "$app" "${args[@]}")
  profiled=("$port" analyze --python "$python" --rate "$rate" "${mode[@]}" "$app")
  [ ${#args[@]} -gt 0 ] && profiled+=(-- "${args[@]}")

  # One warm-up of each so the page cache and .pyc files are equal for both.
  run_timed "${plain[@]}" >/dev/null
  run_timed "${profiled[@]}" >/dev/null
  plain_times=()
  profiled_times=()
  for i in $(seq 1 "$repeats"); do
    plain_times+=("$(run_timed "${plain[@]}")")
    profiled_times+=("$(run_timed "${profiled[@]}")")
    printf 'bench: %s run %d/%d  plain %.3f s  port analyze %.3f s\n' "$(basename "$app")" "$i" "$repeats" \
      "${plain_times[-1]}" "${profiled_times[-1]}" >&2
  done
  p=$(printf '%s\n' "${plain_times[@]}" | median)
  q=$(printf '%s\n' "${profiled_times[@]}" | median)
  ratio=$(echo "$q / $p" | bc -l)
  # Best-of-N: a run can only be slowed by other load, so the minimum is the
  # steadier figure on a busy machine.
  pmin=$(printf '%s\n' "${plain_times[@]}" | sort -g | head -1)
  qmin=$(printf '%s\n' "${profiled_times[@]}" | sort -g | head -1)
  ratio_min=$(echo "$qmin / $pmin" | bc -l)
  summary+=("$(printf '%-22s %-16s plain %7.3f s  port analyze %7.3f s  ratio %.3fx  (best-of-%d %.3fx)' \
    "$(basename "$app")" "${app_args:--}" "$p" "$q" "$ratio" "$repeats" "$ratio_min")")
done

printf 'port analyze %s at %s Hz, %s; medians of %d runs each, alternating (cores: %s)\n' \
  "$([ ${#mode[@]} -gt 0 ] && echo '--no-capture' || echo '(default: capture in the sampled run)')" \
  "$rate" "$("$python" -V 2>&1)" "$repeats" "$(nproc)"
printf '%s\n' "${summary[@]}"
echo 'target: ratio <= 1.05x of medians'
