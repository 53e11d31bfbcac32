#!/usr/bin/env bash
# One-time, idempotent set-up for building and testing port on a fresh
# Debian machine. Quiet when everything is already there.
#   - LLVM 19 development files (inkwell links libLLVM.so.19 dynamically)
#   - .venv: numpy for the fixtures, nvidia-cuda-nvcc-cu12 for ptxas and libdevice
#   - with --oracle: .venv-oracle, real Numba + numba-cuda (the classifier's ground truth),
#     and scipy in .venv (fixtures calling scipy.special)
set -euo pipefail
cd "$(dirname "$0")/.."

say() { printf 'setup: %s\n' "$*" >&2; }

need_root() {
  if [ "$(id -u)" -eq 0 ]; then "$@"; elif command -v sudo >/dev/null; then sudo "$@"; else
    say "need root to run: $*"; exit 1; fi
}

if ! command -v llvm-config-19 >/dev/null 2>&1; then
  say "installing llvm-19-dev from Debian (about 20 s)"
  need_root apt-get update -qq
  need_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends llvm-19-dev >/dev/null
fi

PY=${PYTHON:-python3}
if [ ! -x .venv/bin/python ]; then
  say "creating .venv"
  "$PY" -m venv .venv
fi
if ! .venv/bin/python -c 'import numpy' 2>/dev/null || [ ! -f .venv/.port-ready ] \
  || [ ! -x .venv/bin/ruff ]; then
  say "installing numpy, the CUDA compiler pieces (ptxas, libdevice) and ruff (the migrated code's lint check) into .venv"
  .venv/bin/pip install -q --disable-pip-version-check "numpy>=1.24" "nvidia-cuda-nvcc-cu12==12.9.86" "ruff>=0.6"
  touch .venv/.port-ready
fi

# The capture catches first calls with sys.monitoring on Python 3.12+ and
# with trampolines before: when .venv's Python is older, a second venv on a
# 3.12+ Python (if the machine has one) lets the tests run that path too.
if [ "${1:-}" = "--oracle" ] && [ ! -f .venv-monitoring/.port-ready ] \
  && ! .venv/bin/python -c 'import sys; sys.exit(sys.version_info < (3, 12))'; then
  for py in python3.13 python3.12 /usr/bin/python3.1[2-9] \
    "${PYENV_ROOT:-$HOME/.pyenv}"/versions/3.1[2-9]*/bin/python3; do
    if command -v "$py" >/dev/null 2>&1 && "$py" -c 'import sys; sys.exit(sys.version_info < (3, 12))' 2>/dev/null; then
      say "creating .venv-monitoring ($py, numpy) for the capture's sys.monitoring tests"
      rm -rf .venv-monitoring
      # Optional: without it those tests say they were skipped.
      if "$py" -m venv .venv-monitoring \
        && .venv-monitoring/bin/pip install -q --disable-pip-version-check "numpy>=1.26"; then
        touch .venv-monitoring/.port-ready
      else
        say "could not make .venv-monitoring; the sys.monitoring capture tests will be skipped"
        rm -rf .venv-monitoring
      fi
      break
    fi
  done
fi

if [ "${1:-}" = "--oracle" ] && ! command -v chromium >/dev/null 2>&1; then
  say "installing chromium from Debian (the HTML report's headless-browser test)"
  need_root apt-get update -qq
  need_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends chromium fonts-dejavu-core >/dev/null
fi

if [ "${1:-}" = "--oracle" ] && ! .venv/bin/python -c 'import scipy' 2>/dev/null; then
  say "installing scipy into .venv (the fixtures that call scipy.special)"
  .venv/bin/pip install -q --disable-pip-version-check "scipy>=1.11"
fi

if [ "${1:-}" = "--oracle" ] && [ ! -f .venv-oracle/.port-ready ]; then
  # The oracle's set-up lives in this repository (scripts/oracle/), so a
  # clone anywhere builds the same venv and runs the differential tests.
  say "building the Numba oracle venv (.venv-oracle, under a minute)"
  bash scripts/oracle/setup.sh .venv-oracle >/dev/null
  touch .venv-oracle/.port-ready
fi
