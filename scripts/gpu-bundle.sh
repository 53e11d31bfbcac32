#!/usr/bin/env bash
# One archive with everything a bare GPU machine (NVIDIA driver, python3 with
# numpy + numba-cuda; no Rust, no LLVM, no package registry) needs to run
# port's GPU path: the wheel users install (scripts/wheel.sh: port with
# LLVM linked in, and the C library it needs where the machine's is older),
# the gated GPU test binaries, the shared libraries they link that such a
# machine may lack, libdevice, the fixtures, the benchmark harness and
# run-gpu.sh, which installs the wheel with the machine's own python3
# (pip install --no-index --target) before anything else runs.
#
#   scripts/gpu-bundle.sh [--out FILE] [--level N] [--max-mib N]
#   scripts/gpu-bundle.sh --wheel FILE --test BIN [--test BIN ...] [--out FILE] [--level N] [--max-mib N]
#
# By default it runs scripts/wheel.sh and builds the test binaries the same
# way (cargo profile `wheel`, LLVM linked statically: they need only glibc
# and libgcc_s), and writes target/gpu-bundle/port-gpu.tar.xz. --wheel and
# --test take ones already built instead (make test's bundle test gives the
# dev-profile test binaries, which link libLLVM.so: those libraries are
# bundled under lib/, found through an $ORIGIN run path, never through the
# machine's LLVM nor LD_LIBRARY_PATH). --level is xz's preset (default 9;
# 0 is fast and larger). An archive over --max-mib (default 60: what a
# device call can carry, with the checkout) is an error.
#
# The newest glibc symbol the test binaries need is recorded in MANIFEST;
# where the machine's glibc is older, run-gpu.sh runs them through the
# loader and C library the wheel carries.
# Exit: 0 done (prints the archive's path and size), 1 failed, 2 bad usage.
set -euo pipefail
cd "$(dirname "$0")/.."
REPO=$(pwd)

say() { printf 'gpu-bundle: %s\n' "$*" >&2; }
die() { say "$*"; exit 1; }
usage() { say "$* (usage: scripts/gpu-bundle.sh [--wheel FILE --test BIN...] [--out FILE] [--level N] [--max-mib N])"; exit 2; }

MAX_MIB=60
OUT=
LEVEL=9
WHEEL=
TESTS=()
GIVEN=
while [ $# -gt 0 ]; do
  case "$1" in
    --out) [ $# -ge 2 ] || usage "--out needs a file"; OUT=$2; shift ;;
    --level) [ $# -ge 2 ] && [[ "$2" =~ ^[0-9]$ ]] || usage "--level needs a digit 0-9"; LEVEL=$2; shift ;;
    --max-mib) [ $# -ge 2 ] && [[ "$2" =~ ^[0-9]+$ ]] || usage "--max-mib needs a whole number"; MAX_MIB=$2; shift ;;
    --wheel) [ $# -ge 2 ] || usage "--wheel needs a file"; WHEEL=$2; shift ;;
    --test) [ $# -ge 2 ] || usage "--test needs a file"; TESTS+=("$2"); shift ;;
    *) usage "unknown argument: $1" ;;
  esac
  shift
done
if [ -n "$WHEEL" ] && [ ${#TESTS[@]} -eq 0 ]; then usage "--wheel needs the test binaries too (--test BIN)"; fi
if [ -z "$WHEEL" ] && [ ${#TESTS[@]} -gt 0 ]; then usage "--test needs --wheel"; fi
OUT=${OUT:-target/gpu-bundle/port-gpu.tar.xz}

need_root() {
  if [ "$(id -u)" -eq 0 ]; then "$@"; elif command -v sudo >/dev/null; then sudo "$@"; else
    die "need root to run: $*"; fi
}
# The tools this script needs beyond a Rust toolchain; installed when missing.
missing=()
for tool in patchelf xz; do command -v "$tool" >/dev/null || missing+=("$tool"); done
if [ ${#missing[@]} -gt 0 ]; then
  pkgs=$(printf '%s\n' "${missing[@]}" | sed 's/^xz$/xz-utils/' | tr '\n' ' ')
  say "installing $pkgs from Debian"
  need_root apt-get update -qq
  need_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $pkgs >/dev/null
fi

# 1. The wheel and the test binaries: built here, or given.
GIVEN=$WHEEL
if [ -z "$WHEEL" ]; then
  WHEEL=$(bash scripts/wheel.sh | awk '{print $1}')
  # cargo's JSON messages name each artifact's executable.
  executables() {
    python3 -c '
import json, sys
for line in sys.stdin:
    if not line.startswith("{"):
        continue
    m = json.loads(line)
    if m.get("reason") == "compiler-artifact" and m.get("executable"):
        print(m["target"]["name"], m["executable"])'
  }
  say "building the GPU test binaries (profile wheel, LLVM linked statically)"
  export LLVM_SYS_191_PREFIX=${LLVM_SYS_191_PREFIX:-/usr/lib/llvm-19}
  built=$(PORT_LLVM_STATIC=1 cargo test --profile wheel --quiet --no-run -p port-verify --test gpu_verify --test gpu_codegen \
    --test plan_runs --message-format=json-render-diagnostics | executables)
  while read -r name path; do TESTS+=("$path"); done <<<"$built"
  [ ${#TESTS[@]} -eq 3 ] || die "cargo did not report 3 test binaries"
fi
[ -f "$WHEEL" ] || die "$WHEEL is not a file"
case "$(basename "$WHEEL")" in port-*.whl) ;; *) die "$WHEEL is not port's wheel (port-VERSION-TAG.whl)" ;; esac
for f in "${TESTS[@]}"; do [ -x "$f" ] || die "$f is not an executable"; done

LIBDEVICE=${PORT_LIBDEVICE:-$(ls .venv/lib/python3*/site-packages/nvidia/cuda_nvcc/nvvm/libdevice/libdevice.10.bc 2>/dev/null | awk 'NR == 1')}
[ -n "$LIBDEVICE" ] && [ -f "$LIBDEVICE" ] || die "libdevice.10.bc not found in .venv (run scripts/setup.sh) and PORT_LIBDEVICE is not set"

# 2. The tree.
STAGE=$(mktemp -d "${TMPDIR:-/tmp}/port-gpu-bundle.XXXXXX")
trap 'rm -rf "$STAGE"' EXIT
B=$STAGE/port-gpu
mkdir -p "$B/lib" "$B/tests" "$B/wheel" "$B/libdevice" "$B/repo/scripts" "$B/repo/codegen/tests" "$B/repo/fixtures"
cp "$WHEEL" "$B/wheel/"
for t in "${TESTS[@]}"; do
  name=$(basename "$t" | sed 's/-[0-9a-f]\{16\}$//')  # cargo's hash suffix
  strip -o "$B/tests/$name" "$t"
done
cp "$LIBDEVICE" "$B/libdevice/"
cp -r fixtures/migrate "$B/repo/fixtures/"
cp -r codegen/tests/kernels "$B/repo/codegen/tests/"
cp scripts/bench_gpu.py scripts/gpu_sweep.py scripts/bench_persist.py scripts/harness.py "$B/repo/scripts/"
mkdir -p "$B/repo/tests" && cp tests/migrate_fixtures.rs "$B/repo/tests/"
install -m 755 scripts/run-gpu.sh "$B/run-gpu.sh"
find "$B/repo" -name __pycache__ -prune -exec rm -rf {} +

# 3. The libraries: every one ldd lists that is not glibc's own, copied
# under its soname; each binary and library then looks beside itself.
is_glibc() {
  case "$1" in
    linux-vdso.so.*|ld-linux*.so.*|libc.so.*|libm.so.*|libdl.so.*|libpthread.so.*|librt.so.*|libutil.so.*|libresolv.so.*|libmvec.so.*) return 0 ;;
  esac
  return 1
}
for f in "$B"/tests/*; do
  lost=$(ldd "$f" | awk '/not found/ {print $1}')  # (no `| grep -q` under pipefail: SIGPIPE)
  [ -z "$lost" ] || die "$(basename "$f") links a library this machine lacks: $(echo $lost)"
  while read -r soname path; do
    is_glibc "$soname" && continue
    [ -e "$B/lib/$soname" ] || cp -L "$path" "$B/lib/$soname"
  done < <(ldd "$f" | awk '$2 == "=>" && $3 ~ /^\// {print $1, $3}')
done
chmod u+w "$B"/lib/*
for t in "$B"/tests/*; do patchelf --set-rpath '$ORIGIN/../lib' "$t"; done
for l in "$B"/lib/*; do [ -e "$l" ] && patchelf --set-rpath '$ORIGIN' "$l"; done

# Every library must now resolve inside the bundle or to glibc.
for f in "$B"/tests/* "$B"/lib/*; do
  [ -e "$f" ] || continue
  while read -r soname path; do
    is_glibc "$soname" && continue
    case "$(realpath -m "$path")" in "$B"/lib/*) ;; *) die "$(basename "$f"): $soname resolves to $path, outside the bundle" ;; esac
  done < <(env -u LD_LIBRARY_PATH ldd "$f" | awk '$2 == "=>" {print $1, $3}')
done
glibc=$(for f in "$B"/tests/* "$B"/lib/*; do [ -e "$f" ] || continue; objdump -T "$f" | grep -o 'GLIBC_[0-9][0-9.]*'; done | sort -uV | tail -n 1)
{
  echo "port GPU bundle"
  echo "commit: $(git -C "$REPO" rev-parse --short HEAD 2>/dev/null || echo unknown)$(git -C "$REPO" diff --quiet HEAD 2>/dev/null || echo ' (with uncommitted changes)')"
  echo "profile: $([ -n "$GIVEN" ] && echo "given wheel and test binaries" || echo "wheel (LLVM linked statically)")"
  echo "wheel: $(basename "$WHEEL")"
  echo "built: $(date -u +%Y-%m-%dT%H:%M:%SZ) on $(uname -m), $(getconf GNU_LIBC_VERSION)"
  echo "needs: ${glibc/GLIBC_/glibc }"
  echo "files:"
  (cd "$B" && find . -type f ! -path './repo/*' ! -name MANIFEST -printf '  %p %s\n' | sort)
} > "$B/MANIFEST"

# 4. The archive (xz: a bare machine has xz or Python's lzma, not always zstd).
mkdir -p "$(dirname "$OUT")"
tmp_out="$OUT.tmp.$$"
tar -C "$STAGE" -cf - port-gpu | xz -T2 "-$LEVEL" > "$tmp_out"
size=$(stat -c %s "$tmp_out")
mv "$tmp_out" "$OUT"
mib=$(awk -v s="$size" 'BEGIN {printf "%.1f", s / 1048576}')
if [ "$size" -gt $((MAX_MIB * 1024 * 1024)) ]; then
  say "$OUT is $mib MiB, over the $MAX_MIB MiB limit"
  exit 1
fi
shown=$(realpath "$OUT"); shown=${shown#"$REPO"/}
echo "$shown ($mib MiB, $size bytes)"
