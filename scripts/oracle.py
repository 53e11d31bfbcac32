#!/usr/bin/env python3
"""Ask real Numba what it thinks of a fixture: the ground truth for port's
object vs nopython/cuda split.

usage: oracle.py FIXTURE.py SPEC.json [--oracle-dir DIR]

Runs scripts/oracle/classify.py (this repository's copy of the oracle) on a copy of FIXTURE whose
functions are all wrapped in lazy `numba.njit` first, the way a user who
decorates everything would see them: a function calling another app function
compiles exactly when the callee does too. Prints the oracle's JSON.
"""
import argparse
import os
import subprocess
import sys
import tempfile

SHIM = """

# --- appended by port's scripts/oracle.py: jit every function lazily ---
import inspect as _port_inspect
import json as _port_json
import numba as _port_numba
from numba.core import types as _port_types
for _port_n, _port_f in list(globals().items()):
    if _port_inspect.isfunction(_port_f) and _port_f.__module__ == __name__:
        globals()[_port_n] = _port_numba.njit(_port_f)
# Compile each dispatcher once for its spec'd signature, ignoring failures
# (classify.py reports them): a recursive function then finds itself
# compiled instead of re-entering the compiler from a second dispatcher.
for _port_n, _port_sig in _port_json.load(open(%r)).items():
    _port_d = globals().get(_port_n)
    if hasattr(_port_d, "py_func") and isinstance(_port_sig, list):
        try:
            _port_d.compile(tuple(eval(t, {"__builtins__": {}}, dict(_port_types.__dict__)) for t in _port_sig))
        except Exception:
            pass
del _port_n, _port_f, _port_sig, _port_d
"""


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("fixture")
    ap.add_argument("spec")
    here = os.path.dirname(os.path.abspath(__file__))
    ap.add_argument("--oracle-dir", default=os.path.join(here, "oracle"))
    ap.add_argument("--python", default=os.path.join(here, "..", ".venv-oracle", "bin", "python"))
    a = ap.parse_args()
    src = open(a.fixture, encoding="utf-8").read()
    with tempfile.TemporaryDirectory() as d:
        name = os.path.splitext(os.path.basename(a.fixture))[0] + "_oracle.py"
        path = os.path.join(d, name)
        with open(path, "w", encoding="utf-8") as f:
            f.write(src + SHIM % os.path.abspath(a.spec))
        r = subprocess.run([a.python, os.path.join(a.oracle_dir, "classify.py"), path,
                            os.path.abspath(a.spec), "--no-cuda"],
                           capture_output=True, text=True, cwd=os.path.dirname(os.path.abspath(a.fixture)))
        if r.returncode != 0:
            sys.stderr.write(r.stderr)
            sys.exit(r.returncode)
        sys.stdout.write(r.stdout)


if __name__ == "__main__":
    main()
