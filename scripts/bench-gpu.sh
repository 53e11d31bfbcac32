#!/usr/bin/env bash
# port's GPU kernels against numba-cuda, numba @njit and CPython, on one GPU
# in one run: a times table, port's speedups, and % of peak bandwidth for the
# memory-bound kernels. The harness and its methodology: scripts/bench_gpu.py.
#
#   scripts/bench-gpu.sh [--simulate] [--quick] [--size N] [--repeats N]
#                        [--cpu-budget S] [--only f,g] [--json-out FILE]
#
# --simulate runs the whole harness without a GPU (port on its simulator,
# numba-cuda with NUMBA_ENABLE_CUDASIM=1): it proves the harness works, it
# measures nothing. Results also go to FILE (default target/bench-gpu.json).
# PORT_BIN=path uses that port binary instead of building target/release/port.
# Exit: 0 done, 1 a case failed, 2 no GPU here (or no oracle venv).
set -euo pipefail
if [ -n "${PORT_BIN:-}" ]; then PORT_BIN=$(realpath "$PORT_BIN"); fi
cd "$(dirname "$0")/.."

PY=.venv-oracle/bin/python
SIMULATE=0
ARGS=()
for a in "$@"; do
  if [ "$a" = "--simulate" ]; then SIMULATE=1; else ARGS+=("$a"); fi
done

if [ "$SIMULATE" = 0 ] && [ ! -e /dev/nvidiactl ]; then
  echo "bench-gpu: no CUDA GPU here (no NVIDIA driver: /dev/nvidiactl is missing); run this on a GPU machine, or --simulate to exercise the harness" >&2
  exit 2
fi
if [ ! -x "$PY" ]; then
  echo "bench-gpu: $PY is missing (numba + numba-cuda); run scripts/setup.sh --oracle" >&2
  exit 2
fi

if [ -z "${PORT_BIN:-}" ]; then
  export LLVM_SYS_191_PREFIX=${LLVM_SYS_191_PREFIX:-/usr/lib/llvm-19}
  echo "bench-gpu: building port (release)..." >&2
  cargo build --release --quiet
  PORT_BIN=$(realpath "${CARGO_TARGET_DIR:-target}/release/port")
fi

export NUMBA_ENABLE_CUDASIM=$SIMULATE
exec "$PY" scripts/bench_gpu.py --port "$PORT_BIN" ${ARGS[@]+"${ARGS[@]}"}
