#!/usr/bin/env bash
# Analyzer throughput on a large real codebase nobody here wrote: the Python
# sources of an installed scipy. Prints lines/second for port's whole static
# analysis (parse, symbols, classify, call graph, JSON) and, as a baseline
# measured in the same run, for CPython's own ast.parse of the same files.
# usage: scripts/bench-analyze.sh [SOURCE_DIR] [REPEATS]
set -euo pipefail
cd "$(dirname "$0")/.."
REPEATS=${2:-5}
SRC=${1:-}
if [ -z "$SRC" ]; then
  for py in .venv-oracle/bin/python .venv/bin/python; do
    [ -x "$py" ] || continue
    SRC=$("$py" -c 'import os, scipy; print(os.path.dirname(scipy.__file__))' 2>/dev/null) && break
  done
fi
if [ -z "$SRC" ] || [ ! -d "$SRC" ]; then
  echo "bench: no scipy found; installing it into .venv" >&2
  .venv/bin/pip install -q scipy
  SRC=$(.venv/bin/python -c 'import os, scipy; print(os.path.dirname(scipy.__file__))')
fi
cargo build --release --quiet
PORT=$PWD/target/release/port
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT

python3 - "$PORT" "$SRC" "$REPEATS" "$WORK" <<'PY'
import ast, os, statistics, subprocess, sys, time
port, src, repeats, work = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
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

run_port()  # warm the page cache
port_times, cpy_times = [], []
for _ in range(repeats):
    dt, out = run_port()
    port_times.append(dt)
    cpy_times.append(run_cpython())
import json
a = json.loads(out)
p, c = statistics.median(port_times), statistics.median(cpy_times)
print(f"source: {src}")
print(f"files: {len(files)}  lines: {lines}  functions: {len(a['functions'])}  parse errors: {len(a['parse_errors'])}")
print(f"port analyze --static: median {p:.3f} s of {repeats} -> {lines / p:,.0f} lines/s (target >= 300,000)")
print(f"CPython ast.parse only: median {c:.3f} s -> {lines / c:,.0f} lines/s")
print(f"ratio port/CPython-parse throughput: {(lines / p) / (lines / c):.2f}x  (cores: {os.cpu_count()})")
PY
