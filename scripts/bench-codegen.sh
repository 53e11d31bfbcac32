#!/usr/bin/env bash
# Compile latency of port's codegen against numba-cuda's compile_ptx.
#
#   scripts/bench-codegen.sh [RUNS]        (default 11 runs per measurement)
#
# 1. Whole process, one kernel: `port compile K.pir --arch sm_80 -o F` (or, while
#    the subcommand is not wired, the stand-alone `compile` example of
#    port-codegen; set PORT_BIN=target/release/port to time the real CLI)
#    against `python -c "import numba.cuda; compile_ptx(...)"` for the same
#    kernel written for numba-cuda (codegen/bench/numba_kernels.py). Median
#    wall-clock of RUNS runs each, and the ratio.
# 2. In process, per kernel: IR → PTX (and IR → host JIT) in port, and
#    compile_ptx in Numba after import (first compile and median of the rest).
#
# Needs .venv-oracle (scripts/setup.sh --oracle) for the Numba side.
set -euo pipefail
cd "$(dirname "$0")/.."

RUNS=${1:-11}
ARCH=sm_80
PY=.venv-oracle/bin/python
NUMBA_KERNELS=codegen/bench/numba_kernels.py
TARGET=${CARGO_TARGET_DIR:-target}

if [ ! -x "$PY" ]; then
  echo "bench-codegen: $PY missing; run scripts/setup.sh --oracle" >&2
  exit 1
fi

echo "building release binaries..." >&2
cargo build --release -q -p port-codegen --example compile --example bench_compile

if [ -n "${PORT_BIN:-}" ]; then
  PORT=("$PORT_BIN" compile)
  PORT_NAME="port compile"
else
  PORT=("$TARGET/release/examples/compile")
  PORT_NAME="codegen example 'compile'"
fi

OUT=$(mktemp -d)
trap 'rm -rf "$OUT"' EXIT

# Median wall-clock milliseconds of RUNS runs of a command.
median_ms() {
  local times=()
  for _ in $(seq "$RUNS"); do
    local t0 t1
    t0=$(date +%s%N)
    "$@" >/dev/null
    t1=$(date +%s%N)
    times+=($(( (t1 - t0) / 1000 )))
  done
  printf '%s\n' "${times[@]}" | sort -n | awk '{a[NR]=$1} END {printf "%.1f", a[int((NR+1)/2)]/1000}'
}

echo
echo "== whole process, one kernel, --arch $ARCH, median of $RUNS runs =="
printf '%-16s %14s %14s %8s\n' kernel port_ms numba_ms ratio
for k in saxpy elementwise_2d reduction; do
  p=$(median_ms "${PORT[@]}" "codegen/tests/kernels/$k.pir" --arch "$ARCH" -o "$OUT/$k.ptx")
  n=$(median_ms "$PY" "$NUMBA_KERNELS" one "$k" "$ARCH")
  r=$(awk -v n="$n" -v p="$p" 'BEGIN {printf "%.0fx", n / p}')
  printf '%-16s %14s %14s %8s\n' "$k" "$p" "$n" "$r"
done
echo "(port side: $PORT_NAME; numba side: python start-up + import numba.cuda + compile_ptx)"

i=$(median_ms "$PY" -c "import numba.cuda")
echo "numba import alone: ${i} ms"

echo
echo "== in process, per kernel (ms) =="
echo "-- port: parse + verify + lower + O3 + PTX; host JIT for the simulator"
"$TARGET/release/examples/bench_compile" "$ARCH" "$RUNS"
echo "-- numba-cuda compile_ptx after import: first, median of the rest"
"$PY" "$NUMBA_KERNELS" each "$ARCH" 5 | awk '{printf "%-17s %12s  %13s\n", $1, $2, $3}'
