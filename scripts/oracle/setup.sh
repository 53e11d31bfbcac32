#!/usr/bin/env bash
# Builds a Python venv holding real Numba (CPU) and numba-cuda with the CUDA
# compiler pieces from PyPI, so functions can be compiled to PTX with no GPU.
# port's copy of the oracle (scripts/setup.sh --oracle runs it; `make test` does).
# usage: setup.sh [VENV_DIR]   (default: .venv-oracle in the current folder)
set -euo pipefail
V=${1:-.venv-oracle}
HERE=$(cd "$(dirname "$0")" && pwd)
python3 -m venv "$V"
"$V/bin/pip" install -q --upgrade pip
# requirements.lock.txt pins what these pull in, so every clone gets the same oracle.
"$V/bin/pip" install -q ${PIP_EXTRA:-} -c "$HERE/requirements.lock.txt" \
  "numpy==2.4.6" "numba==0.68.1" "llvmlite==0.50.0" \
  "numba-cuda[cu12]==0.30.4" "py-spy==0.4.3" "scipy==1.17.1"
# numba-cuda finds libnvvm, libdevice.10.bc, libnvrtc and libcudart inside
# site-packages/nvidia/ by itself; no environment variables are needed.
# ptxas is at $V/lib/python3*/site-packages/nvidia/cuda_nvcc/bin/ptxas.
"$V/bin/python" - <<'PY'
from numba import cuda, float32
def vadd(a, b, out):
    s = cuda.grid(1); st = cuda.gridsize(1)
    for i in range(s, out.shape[0], st):
        out[i] = a[i] + b[i]
ptx, _ = cuda.compile_ptx(vadd, (float32[:], float32[:], float32[:]), device=False, cc=(9, 0))
assert ".entry" in ptx
print("numba oracle ready: PTX", len(ptx.splitlines()), "lines")
PY
