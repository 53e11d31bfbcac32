#!/usr/bin/env bash
# make wheel: one wheel a Python user installs as they install ruff or
# py-spy (`pip install port-*.whl`), holding everything port runs on.
#
#   scripts/wheel.sh [--binary BIN] [--out DIR] [--max-mib N]
#
# What is in it (package `port`, platlib):
#   bin/port        port-backend (every command of port), LLVM linked
#                   statically (codegen/build.rs with PORT_LLVM_STATIC=1,
#                   cargo profile `wheel`): it needs only glibc and libgcc_s
#   libc/           the loader, glibc (its run-time libraries: the ones port
#                   links and those the CUDA libraries it loads need) and
#                   libgcc_s it was linked against,
#                   used only where the machine's C library is older
#                   (port/_launch.py decides; PORT_BUNDLED_LIBC=1 forces it)
#   libdevice/      NVIDIA's libdevice.10.bc (math functions in kernels),
#                   from .venv's nvidia-cuda-nvcc-cu12, as the GPU bundle has
#   bundle.json     the glibc the binary needs, the loader's name, the
#                   Debian packages the libraries come from, the commit
#   _launch.py      the `port` console script and `python -m port`
#
# The tag is py3-none-manylinux_2_17_x86_64: with its own loader and C
# library the binary needs nothing from the machine but a Linux kernel
# (glibc 2.36 asks for 3.2), and the launcher is plain Python 3.
#
# --binary takes a port-backend already built with PORT_LLVM_STATIC=1
# instead of building one. Writes target/wheels/port-VERSION-….whl and
# prints its path and size. An archive over --max-mib (default 60) is an
# error. Exit: 0 done, 1 failed, 2 bad usage.
set -euo pipefail
cd "$(dirname "$0")/.."
REPO=$(pwd)

say() { printf 'wheel: %s\n' "$*" >&2; }
die() { say "$*"; exit 1; }
usage() { say "$* (usage: scripts/wheel.sh [--binary BIN] [--out DIR] [--max-mib N])"; exit 2; }

BIN=
OUT=target/wheels
MAX_MIB=60
while [ $# -gt 0 ]; do
  case "$1" in
    --binary) [ $# -ge 2 ] || usage "--binary needs a file"; BIN=$2; shift ;;
    --out) [ $# -ge 2 ] || usage "--out needs a folder"; OUT=$2; shift ;;
    --max-mib) [ $# -ge 2 ] && [[ "$2" =~ ^[0-9]+$ ]] || usage "--max-mib needs a whole number"; MAX_MIB=$2; shift ;;
    *) usage "unknown argument: $1" ;;
  esac
  shift
done

need_root() {
  if [ "$(id -u)" -eq 0 ]; then "$@"; elif command -v sudo >/dev/null; then sudo "$@"; else
    die "need root to run: $*"; fi
}
# Static zstd (LLVM's compression) comes with libzstd-dev; without it the
# binary would need the machine's libzstd.so.1.
# (No `cmd | grep -q` or `| head` under pipefail here: the early exit of the
# reader kills the writer with SIGPIPE, and the pipeline fails at random.)
if [ -z "$BIN" ] && [ "$(dpkg-query -W -f='${Status}' libzstd-dev 2>/dev/null)" != "install ok installed" ]; then
  say "installing libzstd-dev from Debian (LLVM's zstd, linked statically)"
  need_root apt-get update -qq
  need_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends libzstd-dev >/dev/null
fi
PY=.venv/bin/python
[ -x "$PY" ] || die "no .venv (run scripts/setup.sh first)"
if ! "$PY" -c 'import wheel' 2>/dev/null; then
  say "installing the wheel package (wheel pack) into .venv"
  "$PY" -m pip install -q --disable-pip-version-check "wheel>=0.40"
fi

VERSION=$(sed -n 's/^version = "\(.*\)"/\1/p' Cargo.toml | awk 'NR == 1')
[ -n "$VERSION" ] || die "cannot read the version from Cargo.toml"

if [ -z "$BIN" ]; then
  say "building port with LLVM linked statically (profile wheel; about 5 minutes from clean on 2 cores)"
  export LLVM_SYS_191_PREFIX=${LLVM_SYS_191_PREFIX:-/usr/lib/llvm-19}
  PORT_LLVM_STATIC=1 CARGO_TERM_PROGRESS_WHEN=never cargo build --quiet --profile wheel --bin port-backend
  BIN=target/wheel/port-backend
fi
[ -x "$BIN" ] || die "$BIN is not an executable"
LIBDEVICE=${PORT_LIBDEVICE:-$(ls .venv/lib/python3*/site-packages/nvidia/cuda_nvcc/nvvm/libdevice/libdevice.10.bc 2>/dev/null | awk 'NR == 1')}
[ -n "$LIBDEVICE" ] && [ -f "$LIBDEVICE" ] || die "libdevice.10.bc not found in .venv (run scripts/setup.sh) and PORT_LIBDEVICE is not set"

STAGE=$(mktemp -d "${TMPDIR:-/tmp}/port-wheel.XXXXXX")
trap 'rm -rf "$STAGE"' EXIT
ROOT=$STAGE/port-$VERSION
P=$ROOT/port
mkdir -p "$P/bin" "$P/libc" "$P/libdevice"
cp python/port/*.py "$P/"
cp "$LIBDEVICE" "$P/libdevice/"
cat > "$P/libdevice/README" <<EOF
libdevice.10.bc, NVIDIA's math library for CUDA kernels, as the
nvidia-cuda-nvcc-cu12 wheel on PyPI ships it (a redistributable file of the
CUDA Toolkit under NVIDIA's CUDA EULA). port links it into the kernels it
compiles; PORT_LIBDEVICE, CUDA_HOME or a CUDA package in your Python win.
EOF
strip -o "$P/bin/port" "$BIN"
chmod 755 "$P/bin/port"

# Every library the binary loads must be glibc's or libgcc_s: anything
# else would be missing on some machine (LLVM, zlib, zstd and libstdc++
# are linked in).
loader=
while read -r soname path; do
  case "$soname" in
    linux-vdso.so.*) continue ;;
    ld-linux*.so.*) loader=$soname ;;
    libc.so.*|libm.so.*|libdl.so.*|libpthread.so.*|librt.so.*|libgcc_s.so.*) ;;
    *) die "bin/port links $soname ($path): link it statically (is libzstd-dev installed? PORT_LLVM_STATIC=1 set?)" ;;
  esac
  cp -L "$path" "$P/libc/$soname"
done < <(ldd "$P/bin/port" | awk '$2 == "=>" && $3 ~ /^\// {print $1, $3} $1 ~ /^\// {n=split($1, a, "/"); print a[n], $1}')
[ -n "$loader" ] || die "ldd names no loader for bin/port"
# The rest of glibc's run-time libraries (most are stubs since 2.34): the
# libraries port loads at run time (libcuda, cuBLAS, cuSOLVER) need
# libdl, libpthread and librt, and under the carried loader those must be
# the carried glibc's, never the machine's older ones.
libc_dir=$(dirname "$(realpath "$(ldd "$P/bin/port" | awk '$1 == "libc.so.6" {print $3}')")")
for soname in libdl.so.2 libpthread.so.0 librt.so.1 libutil.so.1 libresolv.so.2 libanl.so.1 libmvec.so.1 \
  libnss_files.so.2 libnss_dns.so.2 libnss_compat.so.2; do
  [ -e "$P/libc/$soname" ] || [ ! -e "$libc_dir/$soname" ] || cp -L "$libc_dir/$soname" "$P/libc/$soname"
done
for soname in libdl.so.2 libpthread.so.0 librt.so.1; do
  [ -e "$P/libc/$soname" ] || die "$soname not found beside $libc_dir/libc.so.6"
done
chmod 755 "$P/libc/$loader"
"$P/libc/$loader" --library-path "$P/libc" "$P/bin/port" --version >/dev/null \
  || die "bin/port does not start through the bundled loader"

glibc=$(for f in "$P/bin/port" "$P"/libc/libgcc_s.so.*; do objdump -T "$f" | grep -o 'GLIBC_[0-9][0-9.]*'; done | sort -uV | tail -n 1)
glibc=${glibc#GLIBC_}
packages=$(dpkg-query -W -f='${Package} ${Version}\n' libc6 libgcc-s1 2>/dev/null | paste -sd ';' -)
commit=$(git rev-parse --short HEAD 2>/dev/null || echo unknown)
git diff --quiet HEAD 2>/dev/null || commit="$commit (with uncommitted changes)"
"$PY" - "$P/bundle.json" "$glibc" "$loader" "$packages" "$commit" <<'EOF'
import json, sys
out, glibc, loader, packages, commit = sys.argv[1:]
json.dump({"glibc": glibc, "loader": loader, "libc_from": [p for p in packages.split(";") if p],
           "commit": commit}, open(out, "w"), indent=2)
EOF
cat > "$P/libc/README" <<EOF
The GNU C library (LGPL-2.1-or-later) and libgcc_s (GPL-3.0 with the GCC
Runtime Library Exception) as Debian ships them ($packages), unmodified:
port's binary runs through them on machines whose own C library is older
than glibc $glibc. Sources: https://sources.debian.org/src/glibc/ and
https://sources.debian.org/src/gcc-12/.
EOF

DI=$ROOT/port-$VERSION.dist-info
mkdir -p "$DI"
cat > "$DI/METADATA" <<EOF
Metadata-Version: 2.1
Name: port
Version: $VERSION
Summary: Move the hotspots of a Python/NumPy program onto an NVIDIA GPU, safely and measurably
License: MIT OR Apache-2.0
Requires-Python: >=3.8
Classifier: Environment :: GPU :: NVIDIA CUDA
Classifier: Operating System :: POSIX :: Linux
Classifier: Programming Language :: Rust

port profiles a Python program (py-spy), classifies every function in
Numba's terms, rewrites a chosen function into kernels, verifies them
against the original (on the GPU, or on a simulator without one) and
measures the speedup. Run \`port --help\`.
EOF
cat > "$DI/WHEEL" <<EOF
Wheel-Version: 1.0
Generator: port scripts/wheel.sh
Root-Is-Purelib: false
Tag: py3-none-manylinux_2_17_x86_64
EOF
cat > "$DI/entry_points.txt" <<EOF
[console_scripts]
port = port._launch:main
EOF

mkdir -p "$OUT"
built=$("$PY" -m wheel pack "$ROOT" --dest-dir "$OUT" | sed -n 's/.*Repacking wheel as \(.*\)\.\.\.ok/\1/p; s/^\(.*\.whl\)$/\1/p' | tail -n 1)
whl=$OUT/port-$VERSION-py3-none-manylinux_2_17_x86_64.whl
[ -f "$whl" ] || die "wheel pack did not write $whl${built:+ (it said $built)}"
size=$(stat -c %s "$whl")
mib=$(awk -v s="$size" 'BEGIN {printf "%.1f", s / 1048576}')
[ "$size" -le $((MAX_MIB * 1024 * 1024)) ] || die "$whl is $mib MiB, over the $MAX_MIB MiB limit"
shown=$(realpath "$whl"); shown=${shown#"$REPO"/}
echo "$shown ($mib MiB, $size bytes; binary needs glibc $glibc, carries its own)"
