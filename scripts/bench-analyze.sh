#!/usr/bin/env bash
# Analyzer throughput on a large real codebase nobody here wrote: the Python
# sources of an installed numpy and scipy (about 820,000 lines). Prints
# lines/second for port's whole static pass (parse, symbols, classify, call
# graph, the planner's answer on every function it may take, JSON) and, as
# baselines measured in the same run, `ruff check` of the same files and
# CPython's own ast.parse.
# usage: [PORT=path/to/port] scripts/bench-analyze.sh [SOURCE_DIR] [REPEATS]
set -euo pipefail
cd "$(dirname "$0")/.."
REPEATS=${2:-5}
SRC=${1:-}
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
if [ -z "$SRC" ]; then
  PY=""
  for py in .venv-oracle/bin/python .venv/bin/python; do
    [ -x "$py" ] || continue
    "$py" -c 'import numpy, scipy' 2>/dev/null && PY=$py && break
  done
  if [ -z "$PY" ]; then
    echo "bench: no scipy found; installing it into .venv" >&2
    .venv/bin/pip install -q scipy
    PY=.venv/bin/python
  fi
  # The .py files of both packages, copied into one folder (nothing else:
  # the measurement is of Python source).
  SRC=$WORK/src
  "$PY" - "$SRC" <<'COPY'
import os, shutil, sys, numpy, scipy
dest = sys.argv[1]
for pkg in (numpy, scipy):
    root = os.path.dirname(pkg.__file__)
    for d, dirs, names in os.walk(root):
        dirs[:] = [x for x in dirs if x != "__pycache__"]
        for n in names:
            if n.endswith(".py"):
                out = os.path.join(dest, os.path.relpath(d, os.path.dirname(root)), n)
                os.makedirs(os.path.dirname(out), exist_ok=True)
                shutil.copyfile(os.path.join(d, n), out)
COPY
fi
# PORT=path/to/port compares another build (an older one) on the same
# files and baselines.
if [ -z "${PORT:-}" ]; then
  cargo build --release --quiet
  PORT=$PWD/target/release/port
fi
RUFF=$PWD/.venv/bin/ruff
[ -x "$RUFF" ] || RUFF=$(command -v ruff || true)

python3 - "$PORT" "$SRC" "$REPEATS" "$WORK" "$RUFF" <<'PY'
import ast, os, statistics, subprocess, sys, time
port, src, repeats, work, ruff = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4], sys.argv[5]
files = []
for root, dirs, names in os.walk(src):
    dirs[:] = [d for d in dirs if not d.startswith('.') and d not in ('__pycache__',)]
    files += [os.path.join(root, n) for n in names if n.endswith('.py')]
texts = []
for f in files:
    with open(f, 'rb') as fh:
        texts.append(fh.read())
lines = sum(t.count(b'\n') for t in texts)

def run_port():
    t = time.perf_counter()
    # --json goes to /dev/null: the measurement is port's work, not a pipe's.
    r = subprocess.run([port, 'analyze', '--static', '--json', src], cwd=work,
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    dt = time.perf_counter() - t
    assert r.returncode == 0, r.returncode
    with open(os.path.join(work, '.port', 'analysis.json'), 'rb') as f:
        return dt, f.read()

def run_cpython():
    t = time.perf_counter()
    for b in texts:
        try:
            ast.parse(b)
        except SyntaxError:
            pass
    return time.perf_counter() - t

def run_ruff():
    # Every rule ruff has on by default, no cache: its whole check.
    t = time.perf_counter()
    subprocess.run([ruff, 'check', '--no-cache', '--quiet', '--exit-zero', src], cwd=work,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return time.perf_counter() - t

run_port()  # warm the page cache
port_times, cpy_times, ruff_times = [], [], []
for _ in range(repeats):
    dt, out = run_port()
    port_times.append(dt)
    cpy_times.append(run_cpython())
    if ruff:
        ruff_times.append(run_ruff())
import json
a = json.loads(out)
p, c = statistics.median(port_times), statistics.median(cpy_times)
print(f"source: {src}")
print(f"files: {len(files)}  lines: {lines}  functions: {len(a['functions'])}  parse errors: {len(a['parse_errors'])}")
print(f"port analyze --static: median {p:.3f} s of {repeats} -> {lines / p:,.0f} lines/s (target >= 400,000)")
if ruff_times:
    r = statistics.median(ruff_times)
    print(f"ruff check (same files, no cache): median {r:.3f} s -> {lines / r:,.0f} lines/s; port takes {p / r:.2f}x ruff's time")
print(f"CPython ast.parse only: median {c:.3f} s -> {lines / c:,.0f} lines/s")
print(f"ratio port/CPython-parse throughput: {(lines / p) / (lines / c):.2f}x  (cores: {os.cpu_count()})")

# One generated file of N functions, then of 4N: planning each function must
# not cost in proportion to the file (it once did: 3,000 functions took 5.8 s,
# 6,000 took 67 s). Linear is 4x; the target is under 5x.
def generated(n):
    parts = ["import numpy as np", ""]
    for k in range(n):
        parts.append([
            f"def f{k}(x, out):\n    for i in range(x.shape[0]):\n        out[i] = 2.0 * x[i] + {k}\n",
            f"def f{k}(a):\n    s = 0.0\n    for i in range(a.shape[0]):\n        s += a[i] * a[i]\n    return s\n",
            f"class C{k}:\n    def m(self, u, v):\n        return np.sqrt(u * u + v * v) + {k}\n",
            f"def f{k}(n):\n    r = []\n    for i in range(n):\n        r.append(str(i))\n    return r\n",
        ][k % 4])
    d = os.path.join(work, f"gen{n}")
    os.makedirs(d, exist_ok=True)
    path = os.path.join(d, "big.py")
    with open(path, "w") as f:
        f.write("\n".join(parts))
    return path

def time_static(path):
    best = []
    for _ in range(max(3, repeats // 2)):
        t = time.perf_counter()
        r = subprocess.run([port, 'analyze', '--static', path], cwd=os.path.dirname(path),
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        best.append(time.perf_counter() - t)
        assert r.returncode == 0, r.returncode
    return statistics.median(best)

n = 1500
small, large = time_static(generated(n)), time_static(generated(4 * n))
print(f"one file of {n} functions: {small:.3f} s; of {4 * n}: {large:.3f} s -> {large / small:.2f}x for 4x the functions (linear 4x; target < 5x)")
PY
