#!/usr/bin/env bash
# port's GPU path on a bare GPU machine, in one call: the gated GPU tests,
# then the GPU benchmark (port's kernels against numba-cuda, @njit and
# CPython; scripts/bench_gpu.py has the methodology), from the archive
# `make gpu-bundle` builds. A short table comes last; the full JSON and
# logs go to OUT_DIR.
#
#   run-gpu.sh [--simulate] [--bundle FILE] [--budget S] [--size N]
#              [--repeats N] [--cpu-budget S] [--only f,g]
#              [--phases tests,persist,sweep,bench] [--sweep-size N]
#              [--sweep-only f,g] [--persist-scale S] OUT_DIR
#
# From the checkout (scripts/run-gpu.sh) it extracts the archive
# (default target/gpu-bundle/port-gpu.tar.xz) into a temporary folder and
# runs the copy inside it; inside an extracted bundle it runs directly.
# It uses the first python3 on PATH, which needs numpy, numba and
# numba-cuda. --simulate runs everything without a GPU (port's simulator,
# NUMBA_ENABLE_CUDASIM=1, toy sizes): it proves the bundle works, it
# measures nothing. --budget is the wall-clock budget for tests and
# benchmark together (default 540 s): cases that would start past it are
# reported as not run. Bench defaults here: --size 4194304 --cpu-budget 10
# (the harness' own defaults take longer than a 10-minute call).
# --phases picks what runs, in this order: `tests` (the gated GPU test
# binaries and plan_runs, their simulator twin), `persist`
# (scripts/bench_persist.py: host time loops as one persistent kernel
# against a launch per iteration, on the same device; --persist-scale S
# makes each step S times wider, past the pass's default bound), `sweep`
# (scripts/gpu_sweep.py: every array program of fixtures/migrate through
# `port migrate --backend gpu` at --sweep-size iterations, default 1048576,
# port's kernels and wrapper against the NumPy original and CuPy as a
# drop-in; --sweep-only names the functions), `bench`.
# Exit: 0 all passed, 1 a test or case failed, 2 this machine cannot run it.
set -uo pipefail

say() { printf 'run-gpu: %s\n' "$*" >&2; }
fail() { say "$*"; exit 2; }

HERE=$(cd "$(dirname "$0")" && pwd)

# From the checkout: extract the bundle, run its copy of this script.
if [ ! -f "$HERE/MANIFEST" ]; then
  ARCHIVE=
  args=()
  while [ $# -gt 0 ]; do
    if [ "$1" = --bundle ]; then
      [ $# -ge 2 ] || fail "--bundle needs the archive"
      ARCHIVE=$2; shift 2
    else
      args+=("$1"); shift
    fi
  done
  ARCHIVE=${ARCHIVE:-$HERE/../target/gpu-bundle/port-gpu.tar.xz}
  [ -f "$ARCHIVE" ] || fail "no bundle at $ARCHIVE: build it with 'make gpu-bundle' on a machine with Rust and LLVM, and carry target/gpu-bundle"
  DIR=$(mktemp -d "${TMPDIR:-/tmp}/port-gpu.XXXXXX")
  trap 'rm -rf "$DIR"' EXIT
  t0=$SECONDS
  if command -v xz >/dev/null; then
    tar -C "$DIR" -xJf "$ARCHIVE" || fail "cannot extract $ARCHIVE"
  else  # no xz: Python's tarfile reads it through lzma
    python3 -c 'import sys, tarfile; tarfile.open(sys.argv[1]).extractall(sys.argv[2])' "$ARCHIVE" "$DIR" \
      || fail "cannot extract $ARCHIVE (no xz, and python3's tarfile failed)"
  fi
  say "extracted $(basename "$ARCHIVE") in $((SECONDS - t0)) s"
  bash "$DIR/port-gpu/run-gpu.sh" ${args[@]+"${args[@]}"}
  exit $?
fi

# Inside the bundle.
B=$HERE
SIMULATE=0
BUDGET=540
OUT=
BENCH=()
PHASES_WANTED=tests,persist,sweep,bench
SWEEP_SIZE=
SWEEP_ONLY=
PERSIST_SCALE=1
while [ $# -gt 0 ]; do
  case "$1" in
    --simulate) SIMULATE=1 ;;
    --phases) [[ "${2:-}" =~ ^(tests|persist|sweep|bench)(,(tests|persist|sweep|bench))*$ ]] || fail "--phases takes tests, persist, sweep and bench, comma-separated"; PHASES_WANTED=$2; shift ;;
    --sweep-size) [[ "${2:-}" =~ ^[1-9][0-9]*$ ]] || fail "--sweep-size needs a positive whole number"; SWEEP_SIZE=$2; shift ;;
    --sweep-only) [ -n "${2:-}" ] || fail "--sweep-only needs function names (f,g)"; SWEEP_ONLY=$2; shift ;;
    --persist-scale) [[ "${2:-}" =~ ^[1-9][0-9]*$ ]] || fail "--persist-scale needs a positive whole number"; PERSIST_SCALE=$2; shift ;;
    --budget) [[ "${2:-}" =~ ^[0-9]+$ ]] || fail "--budget needs whole seconds"; BUDGET=$2; shift ;;
    --size|--repeats) [[ "${2:-}" =~ ^[1-9][0-9]*$ ]] || fail "$1 needs a positive whole number"; BENCH+=("$1" "$2"); shift ;;
    --cpu-budget) [[ "${2:-}" =~ ^[0-9]+(\.[0-9]+)?$ ]] || fail "$1 needs seconds"; BENCH+=("$1" "$2"); shift ;;
    --only) [ -n "${2:-}" ] || fail "--only needs function names (f,g)"; BENCH+=("$1" "$2"); shift ;;
    --bundle) fail "--bundle is for scripts/run-gpu.sh in the checkout; this is already an extracted bundle" ;;
    -*) fail "unknown option: $1 (see the top of run-gpu.sh)" ;;
    *) [ -z "$OUT" ] || fail "one OUT_DIR only (got $OUT and $1)"; OUT=$1 ;;
  esac
  shift
done
[ -n "$OUT" ] || fail "usage: run-gpu.sh [--simulate] [--budget S] [--size N] [--repeats N] [--cpu-budget S] [--only f,g] [--phases tests,persist,sweep,bench] [--sweep-size N] [--sweep-only f,g] [--persist-scale S] OUT_DIR"
mkdir -p "$OUT" || fail "cannot create $OUT"
OUT=$(cd "$OUT" && pwd)
START=$SECONDS
DEADLINE=$((START + BUDGET))

# What this machine must have.
PY=$(command -v python3) || fail "no python3 on PATH (it needs numpy, numba and numba-cuda)"
missing=$("$PY" - <<'EOF' 2>/dev/null
import importlib, importlib.metadata
gone = []
for module, dist in (("numpy", "numpy"), ("numba", "numba"), ("numba.cuda", "numba-cuda")):
    try:
        importlib.import_module(module)
        importlib.metadata.version(dist)
    except Exception:
        gone.append(dist)
print(" ".join(gone))
EOF
) || missing="numpy numba numba-cuda"
[ -z "$missing" ] || fail "$PY lacks ${missing// /, } (pip install numpy numba numba-cuda; or put a python3 that has them first on PATH)"
# port itself: the bundle's wheel, installed with this python3 into OUT,
# run through the `port` console script's own launcher (port/_launch.py:
# the wheel's C library where this machine's is older).
SITE=$OUT/port-site
rm -rf "$SITE"
whl=$(ls "$B"/wheel/port-*.whl 2>/dev/null | head -n 1)
[ -n "$whl" ] || fail "the bundle holds no wheel (wheel/port-*.whl): rebuild it with 'make gpu-bundle'"
if "$PY" -m pip --version >/dev/null 2>&1; then
  "$PY" -m pip install -q --disable-pip-version-check --no-index --no-deps --target "$SITE" "$whl" > "$OUT/install.log" 2>&1 \
    || fail "$PY -m pip install --no-index --target $SITE $(basename "$whl") failed: $(grep -v '^\s*$' "$OUT/install.log" | tail -n 1)"
  installed="pip install --no-index --target"
else
  # A venv made without pip (uv makes those): a wheel is a zip, and this
  # one's files all go to site-packages; unzip it as pip would.
  "$PY" - "$whl" "$SITE" > "$OUT/install.log" 2>&1 <<'EOF'
import os, stat, sys, zipfile
with zipfile.ZipFile(sys.argv[1]) as z:
    z.extractall(sys.argv[2])
    for info in z.infolist():
        mode = info.external_attr >> 16
        if mode & stat.S_IXUSR:
            os.chmod(os.path.join(sys.argv[2], info.filename), mode & 0o777)
EOF
  [ $? -eq 0 ] || fail "cannot unpack $(basename "$whl") with $PY: $(tail -n 1 "$OUT/install.log")"
  installed="unpacked (this python3 has no pip)"
fi
mkdir -p "$OUT/bin"
PORT=$OUT/bin/port
cat > "$PORT" <<EOF
#!/bin/sh
exec "$PY" -c 'import sys; sys.path.insert(0, sys.argv.pop(1)); from port._launch import main; sys.exit(main())' "$SITE" "\$@"
EOF
chmod +x "$PORT"
if ! version=$("$PORT" --version 2>&1); then
  fail "the bundle's port does not start: $(printf '%s' "$version" | tail -n 1)"
fi
# The wheel's loader, where this machine's glibc is older than the one the
# binaries were linked against: the test binaries run through it too.
loader=$("$PY" -c 'import sys; sys.path.insert(0, sys.argv[1]); from port._launch import bundled_loader; print(*(bundled_loader() or ()))' "$SITE") \
  || fail "the bundle's port/_launch.py does not run with $PY"
need=$(sed -n 's/^needs: glibc //p' "$B/MANIFEST")
have=$(getconf GNU_LIBC_VERSION 2>/dev/null | awk '{print $2}')
TEST_LOADER=
if [ -n "$loader" ] || { [ -n "$need" ] && [ -n "$have" ] && [ "$(printf '%s\n%s\n' "$need" "$have" | sort -V | head -n 1)" != "$need" ]; }; then
  [ -n "$loader" ] || loader=$(PORT_BUNDLED_LIBC=1 "$PY" -c 'import sys; sys.path.insert(0, sys.argv[1]); from port._launch import bundled_loader; print(*bundled_loader())' "$SITE")
  TEST_LOADER=${loader% *}
  TEST_LIBC=${loader#* }
fi
VIA=${TEST_LOADER:+", through the wheel's C library"}
if [ "$SIMULATE" = 0 ]; then
  [ -e /dev/nvidiactl ] || fail "no NVIDIA driver here (/dev/nvidiactl is missing); on a machine without a GPU use --simulate"
  "$PY" -c 'import ctypes; ctypes.CDLL("libcuda.so.1")' 2>/dev/null \
    || fail "the NVIDIA driver's libcuda.so.1 cannot be loaded (is the driver's user-space library installed?)"
fi

export PORT_LIBDEVICE=$B/libdevice/libdevice.10.bc PORT_TEST_REPO=$B/repo PORT_TEST_PYTHON=$PY
export NO_COLOR=1 NUMBA_ENABLE_CUDASIM=$SIMULATE
# Numba caches and the like need a writable home; env -i leaves none.
export HOME=${HOME:-$OUT}
if [ "$SIMULATE" = 1 ]; then
  unset PORT_GPU
  BENCH=(--quick ${BENCH[@]+"${BENCH[@]}"})
else
  export PORT_GPU=1
  # cuBLAS for `@`, cuSOLVER for np.linalg. port's cudarc (built for
  # CUDA 12.8) loads libcublas.so or libcublas.so.12, libcusolver.so or
  # .so.12; an image with CUDA 13's pip wheels (nvidia-cublas,
  # nvidia-cusolver) may have other versions only, so each is linked
  # under its plain name, and every wheel's lib folder (libcublasLt,
  # libcusparse, libnvJitLink: cuSOLVER's own dependencies) put on the
  # loader's path.
  for lib in cublas cusolver; do
    if "$PY" -c "import ctypes; ctypes.CDLL('lib$lib.so')" 2>/dev/null; then continue; fi
    found=$("$PY" -c '
import glob, os, site, sys
lib = sys.argv[1]
for base in site.getsitepackages() + [site.getusersitepackages()] + sys.path:
    for p in sorted(glob.glob(os.path.join(base, "nvidia", "**", "lib" + lib + ".so*"), recursive=True)):
        print(p)
        sys.exit()
' "$lib" 2>/dev/null)
    if [ -n "$found" ]; then
      mkdir -p "$OUT/lib"
      ln -sf "$found" "$OUT/lib/lib$lib.so"
      dirs=$(for d in "$(dirname "$(dirname "$found")")"/../*/lib; do [ -d "$d" ] && printf '%s:' "$(cd "$d" && pwd)"; done)
      path="$OUT/lib:$(dirname "$found"):$dirs${LD_LIBRARY_PATH:-}"
      export LD_LIBRARY_PATH="${path%:}"
      echo "lib$lib: $found"
    else
      echo "lib$lib: not found (that library's steps run on the host, and the GPU test that checks for it fails)"
    fi
  done
  BENCH=(--size 4194304 --cpu-budget 10 ${BENCH[@]+"${BENCH[@]}"})
  for ((i = 0; i < ${#BENCH[@]}; i++)); do
    if [ "${BENCH[$i]}" = --repeats ] && [ "${BENCH[$((i + 1))]}" -lt 10 ]; then fail "--repeats must be at least 10 on a GPU"; fi
  done
fi
# The benchmark's cases (checked now: bad input fails before anything runs).
mkdir -p "$OUT/cases"
cases=$(cd "$B/repo/scripts" && "$PY" -c 'import bench_gpu; print(" ".join(c.function for c in bench_gpu.CASES))' 2>"$OUT/cases/list.log") \
  || fail "the benchmark harness does not import: $(tail -n 1 "$OUT/cases/list.log")"
only=
for ((i = 0; i < ${#BENCH[@]}; i++)); do [ "${BENCH[$i]}" = --only ] && only=${BENCH[$((i + 1))]}; done
for f in ${only//,/ }; do
  [[ " $cases " == *" $f "* ]] || fail "--only $f: not a benchmark case (cases: ${cases// /, })"
done

# port sees the device: one small migration (saxpy, 1024 elements) on it
# (on the simulator with --simulate), in its first seconds, before the
# tests and the benchmark spend the budget. Exit 2 of port is a machine it
# cannot use (no driver, no device); a kernel that differs is for the
# tests below to report.
mkdir -p "$OUT/first"
cp "$B/repo/fixtures/migrate/seeds.py" "$OUT/first/"
backend=$([ "$SIMULATE" = 1 ] && echo simulator || echo gpu)
(cd "$OUT/first" && NO_COLOR=1 timeout -k 5 120 "$PORT" migrate seeds.py --function saxpy \
  --signature 'saxpy(float64, float64[:], float64[:], float64[:])' --backend "$backend" --size 1024 \
  --python "$PY" --json > first.json 2> first.log)
rc=$?
if [ "$rc" = 2 ] || [ "$rc" = 124 ] || [ "$rc" = 137 ] || [ ! -s "$OUT/first/first.json" ]; then
  fail "port cannot run a kernel here ($backend, exit $rc): $(grep -v '^\s*$' "$OUT/first/first.log" | tail -n 1)"
fi
seen=$("$PY" -c '
import json, sys
d = json.load(open(sys.argv[1]))
dev = d.get("device") or (d.get("verification") or {}).get("device") or {}
print(d.get("status"), "on", dev.get("name", "?") if isinstance(dev, dict) else dev)' "$OUT/first/first.json" 2>/dev/null)
say "first kernel: saxpy ${seen:-?} ($installed)"

mode=$([ "$SIMULATE" = 1 ] && echo "simulated, no GPU" || echo "GPU")
say "$version, $($PY --version 2>&1) ($PY), $mode; results in $OUT"

# Phase lines for the summary: kind<TAB>name<TAB>result<TAB>seconds.
PHASES=$OUT/phases.tsv
: > "$PHASES"
left() { echo $((DEADLINE - SECONDS)); }
wanted() { [[ ",$PHASES_WANTED," == *",$1,"* ]]; }

# 1. The tests, one binary at a time, the device to themselves.
# gpu_codegen and gpu_verify are gated on PORT_GPU=1 (with --simulate they
# only prove they start); plan_runs is their simulator twin.
tests=(gpu_codegen gpu_verify plan_runs)
wanted tests || tests=()
for t in ${tests[@]+"${tests[@]}"}; do
  limit=$(( $(left) * 2 / 5 ))
  [ "$t" = plan_runs ] && limit=$(( $(left) / 3 ))
  if [ "$limit" -lt 10 ]; then
    printf 'test\t%s\tnot run (out of time)\t0\n' "$t" >> "$PHASES"; continue
  fi
  say "tests: $t (at most $limit s$VIA)"
  t0=$SECONDS
  run=("$B/tests/$t")
  if [ -n "$TEST_LOADER" ]; then
    # Through the wheel's loader; gpu_verify re-runs itself the same way.
    lp=$TEST_LIBC${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
    run=("$TEST_LOADER" --library-path "$lp" "$B/tests/$t")
    export PORT_TEST_LOADER=$TEST_LOADER PORT_TEST_EXE=$B/tests/$t PORT_TEST_LIBRARY_PATH=$lp
  fi
  timeout -k 5 "$limit" "${run[@]}" --test-threads=1 --nocapture > "$OUT/test-$t.log" 2>&1
  rc=$?
  counts=$(grep -o 'test result: [A-Za-z]*\. [0-9]* passed; [0-9]* failed' "$OUT/test-$t.log" | tail -n 1 \
    | sed 's/test result: [A-Za-z]*\. //')
  if [ "$rc" = 124 ] || [ "$rc" = 137 ]; then result="FAILED: timed out after $limit s"
  elif [ "$rc" = 0 ]; then result="ok: $counts"
  else result="FAILED: ${counts:-exit $rc} (see test-$t.log)"; fi
  if [ "$SIMULATE" = 1 ] && [ "$t" != plan_runs ] && [ "$rc" = 0 ]; then result="ok: starts; gated, skipped without a GPU"; fi
  printf 'test\t%s\t%s\t%d\n' "$t" "$result" $((SECONDS - t0)) >> "$PHASES"
done

# 2. Persistent kernels against per-iteration launches: each case migrated
# twice on the same inputs (PORT_PERSIST=0 the second time). A third of
# what is left at most.
if wanted persist; then
  limit=$(( $(left) / 3 ))
  if [ "$limit" -lt 20 ]; then
    printf 'persist\tloops\tnot run (out of time)\t0\n' >> "$PHASES"
  else
    say "persist: host time loops, one kernel against a launch per iteration (at most $limit s)"
    t0=$SECONDS
    timeout -k 5 "$limit" "$PY" "$B/repo/scripts/bench_persist.py" --port "$PORT" --python "$PY" \
      --backend "$backend" --scale "$PERSIST_SCALE" --timeout $((limit / 4 + 5)) --json-out "$OUT/persist.json" > "$OUT/persist.log" 2>&1
    rc=$?
    if [ "$rc" = 124 ] || [ "$rc" = 137 ]; then result="FAILED: timed out after $limit s"
    elif [ "$rc" = 0 ]; then result="ok: $(grep -c '^bench-persist: .* persistent: ' "$OUT/persist.log") loops, both schedules verified"
    else result="FAILED: exit $rc (see persist.log)"; fi
    printf 'persist\tloops\t%s\t%d\n' "$result" $((SECONDS - t0)) >> "$PHASES"
  fi
fi

# 3. The sweep: every array program port plans, through port migrate, at
# a size that fills the GPU (a few calls on the simulator: it only proves
# the phase runs). Three fifths of what is left when the bench follows.
if wanted sweep; then
  limit=$(left)
  wanted bench && limit=$(( limit * 3 / 5 ))
  if [ "$limit" -lt 20 ]; then
    printf 'sweep\tprograms\tnot run (out of time)\t0\n' >> "$PHASES"
  else
    say "sweep: the array programs of fixtures/migrate (at most $limit s)"
    t0=$SECONDS
    if [ "$SIMULATE" = 1 ]; then
      sweep=(--backend simulator --size "${SWEEP_SIZE:-256}" --files programs_tensors.py)
    else
      sweep=(--backend gpu --size "${SWEEP_SIZE:-1048576}")
      # CuPy as a drop-in, for a fifth of the sweep's time at most.
      "$PY" -c 'import cupy' 2>/dev/null && sweep+=(--cupy --cupy-budget $((limit / 5)))
    fi
    [ -n "$SWEEP_ONLY" ] && sweep+=(--only "$SWEEP_ONLY")
    timeout -k 5 "$limit" "$PY" "$B/repo/scripts/gpu_sweep.py" --port "$PORT" --python "$PY" \
      "${sweep[@]}" --budget $((limit - 15)) --case-timeout 60 --json-out "$OUT/sweep.json" \
      > "$OUT/sweep.log" 2>&1
    rc=$?
    summary=$(grep '^gpu-sweep: .* on .*, [0-9]* s: ' "$OUT/sweep.log" | tail -n 1 | sed 's/^gpu-sweep: //')
    if [ "$rc" = 124 ] || [ "$rc" = 137 ]; then result="FAILED: timed out after $limit s"
    elif [ "$rc" = 0 ]; then result="ok: ${summary:-done}"
    else result="FAILED: ${summary:-exit $rc: $(grep -v '^\s*$' "$OUT/sweep.log" | tail -n 1)}"; fi
    printf 'sweep\tprograms\t%s\t%d\n' "$result" $((SECONDS - t0)) >> "$PHASES"
  fi
fi

# 4. The benchmark, one case per process, so that a case that overruns the
# budget costs only itself.
wanted bench || cases=
for f in $cases; do
  if [ -n "$only" ] && [[ ",$only," != *",$f,"* ]]; then continue; fi
  limit=$(( $(left) ))
  if [ "$limit" -lt 20 ]; then
    printf 'bench\t%s\tnot run (out of time)\t0\n' "$f" >> "$PHASES"; continue
  fi
  say "bench: $f (at most $limit s)"
  t0=$SECONDS
  args=()
  for ((i = 0; i < ${#BENCH[@]}; i++)); do
    if [ "${BENCH[$i]}" = --only ]; then i=$((i + 1)); else args+=("${BENCH[$i]}"); fi
  done
  rm -f "$OUT/cases/$f.json"
  timeout -k 5 "$limit" "$PY" "$B/repo/scripts/bench_gpu.py" --port "$PORT" --only "$f" \
    --json-out "$OUT/cases/$f.json" ${args[@]+"${args[@]}"} > "$OUT/cases/$f.log" 2>&1
  rc=$?
  if [ -f "$OUT/cases/$f.json" ]; then result=ok
  elif [ "$rc" = 124 ] || [ "$rc" = 137 ]; then result="timed out after $limit s"
  else result="exit $rc: $(grep -v '^\s*$' "$OUT/cases/$f.log" | tail -n 1)"; fi
  printf 'bench\t%s\t%s\t%d\n' "$f" "$result" $((SECONDS - t0)) >> "$PHASES"
done

# 5. One JSON (the harness' schema), the harness' tables, and the summary last.
cd "$B/repo/scripts" && "$PY" - "$OUT" "$B/MANIFEST" $((SECONDS - START)) <<'EOF'
import json, sys
from pathlib import Path

import bench_gpu as bg

out, manifest, seconds = Path(sys.argv[1]), Path(sys.argv[2]), int(sys.argv[3])
phases = [line.split("\t") for line in (out / "phases.tsv").read_text().splitlines() if line]
run, results = None, []
for kind, name, result, _ in phases:
    if kind != "bench":
        continue
    path = out / "cases" / (name + ".json")
    if result == "ok":
        case = json.loads(path.read_text())
        run = run or case
        results.extend(case["results"])
    else:
        results.append({"function": name, "error": result})
if run is not None:
    run = dict(run, results=results)
    (out / "bench-gpu.json").write_text(json.dumps(run, indent=2) + "\n")
    bg.print_report(run)

def short(e):
    """A case's outcome in a few words."""
    if e is None:
        return ""
    if "error" in e:
        return "FAILED: " + e["error"]
    if run["simulated"]:
        return "ok (simulated: ran, measured nothing)"
    r = e["ratios"]
    return "ok: port kernel %s, %s vs numba-cuda; e2e %s vs CPython" % (
        bg.fmt_time(bg.dig(e, "port", "timing", "kernel_s")),
        bg.fmt_ratio(r["kernel_vs_numba_cuda"]), bg.fmt_ratio(r["vs_cpython"], lower_bound=e["cpython"]["timed_out"]))

by_name = {e["function"]: e for e in results}
rows, failed = [], False
for kind, name, result, secs in phases:
    text = short(by_name.get(name)) if kind == "bench" else result
    failed |= not text.startswith("ok")
    rows.append([kind, name, text, secs + " s"])
commit = next((l.split(": ", 1)[1] for l in manifest.read_text().splitlines() if l.startswith("commit: ")), "?")
device = run["device"]["name"] if run else "?"
summary = {"schema": "port.run-gpu/1", "bundle_commit": commit, "device": device, "seconds": seconds,
           "passed": not failed, "phases": [dict(zip(("kind", "name", "result", "seconds"), r)) for r in rows]}
(out / "run-gpu.json").write_text(json.dumps(summary, indent=2) + "\n")
print()
print("run-gpu summary: bundle %s on %s, %d s" % (commit, device, seconds))
bg.print_table(["phase", "name", "result", "time"], rows)
print("%s; JSON and logs in %s" % ("FAILED" if failed else "all passed", out))
sys.exit(1 if failed else 0)
EOF
