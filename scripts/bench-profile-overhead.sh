#!/usr/bin/env bash
# How much does sampling slow the app down? Runs APP plain and under the
# profiler (capture off: the sampled run only), alternating, REPEATS times each
# in the same session, and prints the median wall times and their ratio.
# Target: <= 1.03x at 100 Hz.
#
#   scripts/bench-profile-overhead.sh [--rate HZ] [--repeats N] [APP.py [-- ARGS...]]
#
# Uses target/release/port (`port analyze --no-capture`) when it is built and
# has the analyze subcommand, else the profiler's example binary
# (`cargo build --release -p port-profiler --example profile`).
# PYTHON overrides the interpreter (default .venv/bin/python, else python3).
set -euo pipefail
cd "$(dirname "$0")/.."

rate=100
repeats=5
app=fixtures/apps/mixed_app.py
app_args=()
while [ $# -gt 0 ]; do
  case "$1" in
    --rate) rate=$2; shift 2 ;;
    --repeats) repeats=$2; shift 2 ;;
    --) shift; app_args=("$@"); break ;;
    -*) echo "bench: unknown option $1" >&2; exit 2 ;;
    *) app=$1; shift ;;
  esac
done
[ -f "$app" ] || { echo "bench: app $app not found" >&2; exit 2; }

python=${PYTHON:-}
if [ -z "$python" ]; then
  if [ -x .venv/bin/python ]; then python=.venv/bin/python; else python=python3; fi
fi

target=${CARGO_TARGET_DIR:-target}
if [ -x target/release/port ] && target/release/port analyze --help >/dev/null 2>&1; then
  profiled=(target/release/port analyze --python "$python" --rate "$rate" --no-capture "$app")
  [ ${#app_args[@]} -gt 0 ] && profiled+=(-- "${app_args[@]}")
  tool="port analyze"
else
  echo "bench: building the profiler example (release)" >&2
  cargo build -q --release -p port-profiler --example profile >&2
  profiled=("$target/release/examples/profile" --python "$python" --rate "$rate" --no-capture --quiet "$app")
  [ ${#app_args[@]} -gt 0 ] && profiled+=(-- "${app_args[@]}")
  tool="profiler example"
fi
plain=("$python" "$app" "${app_args[@]}")

now() { date +%s.%N; }
run_timed() {
  local t0 t1
  t0=$(now)
  "$@" >/dev/null 2>&1 || { echo "bench: failed: $*" >&2; exit 1; }
  t1=$(now)
  echo "$t1 - $t0" | bc -l
}
median() { sort -g | awk '{a[NR]=$1} END {if (NR%2) print a[(NR+1)/2]; else print (a[NR/2]+a[NR/2+1])/2}'; }

# One warm-up of each so the page cache and .pyc files are equal for both.
run_timed "${plain[@]}" >/dev/null
run_timed "${profiled[@]}" >/dev/null

plain_times=()
profiled_times=()
for i in $(seq 1 "$repeats"); do
  plain_times+=("$(run_timed "${plain[@]}")")
  profiled_times+=("$(run_timed "${profiled[@]}")")
  printf 'bench: run %d/%d  plain %.3f s  profiled %.3f s\n' "$i" "$repeats" \
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
printf 'app:        %s %s\n' "$app" "${app_args[*]:-}"
printf 'profiler:   %s at %s Hz, capture off\n' "$tool" "$rate"
printf 'plain:      median %.3f s over %d runs\n' "$p" "$repeats"
printf 'profiled:   median %.3f s over %d runs\n' "$q" "$repeats"
printf 'best:       plain %.3f s, profiled %.3f s: %.3fx\n' "$pmin" "$qmin" "$ratio_min"
printf 'ratio:      %.3fx of medians (target <= 1.03x)\n' "$ratio"
