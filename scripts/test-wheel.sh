#!/usr/bin/env bash
# The wheel as a user gets it, with nothing of this checkout in reach:
#
#   scripts/test-wheel.sh WHEEL [--bullseye]
#
# 1. A fresh venv holding only NumPy; `pip install --no-index WHEEL`; then,
#    under `env -i` from a folder outside the checkout: `port --version`,
#    `python -m port --version`, `port analyze --static` on a fixture, and a
#    `port migrate` that verifies on the simulator — once with the
#    machine's C library and once through the one the wheel carries
#    (PORT_BUNDLED_LIBC=1); then a profiled `port analyze app.py` (py-spy
#    and the capture) and a migration on the inputs it captured.
# 2. With --bullseye (root, debootstrap from Debian's mirror; about a
#    minute): the same install and migrate inside a Debian 11 root file
#    system (glibc 2.31, Python 3.9), where the binary cannot start without
#    the C library it carries, profile and capture included. NumPy comes from PyPI as a wheel, downloaded
#    here and installed there offline.
#
# Prints one line per check; exit 0 when all pass, 1 on the first failure.
set -euo pipefail
cd "$(dirname "$0")/.."
REPO=$(pwd)

say() { printf 'test-wheel: %s\n' "$*" >&2; }
die() { say "FAILED: $*"; exit 1; }
ok() { printf 'test-wheel: ok  %s\n' "$*"; }

[ $# -ge 1 ] || { say "usage: scripts/test-wheel.sh WHEEL [--bullseye]"; exit 2; }
WHEEL=$(realpath "$1"); shift
BULLSEYE=
for a in "$@"; do
  case "$a" in --bullseye) BULLSEYE=1 ;; *) say "unknown argument: $a"; exit 2 ;; esac
done
[ -f "$WHEEL" ] || die "$WHEEL does not exist (make wheel)"

T=$(mktemp -d "${TMPDIR:-/tmp}/port-wheel-test.XXXXXX")
cleanup() {
  if [ -n "${ROOTFS:-}" ] && mountpoint -q "$ROOTFS/proc" 2>/dev/null; then umount "$ROOTFS/proc" || true; fi
  rm -rf "$T"
}
trap cleanup EXIT

# The fixtures: Black–Scholes' normal CDF (a function port verifies from a
# signature), and a small app to profile (py-spy) whose hot function is
# then migrated on the inputs its run captured.
mkdir -p "$T/work"
cp fixtures/migrate/pricing.py "$T/work/"
cp fixtures/apps/bandwidth.py "$T/work/app.py"
MIGRATE=(migrate pricing.py --function cnd --signature 'cnd(float64[:])' --backend simulator --json)
PROFILED=(migrate app.py --function density --backend simulator --json)
ON_GPU=(migrate pricing.py --function cnd --signature 'cnd(float64[:])' --backend gpu)

# verified JSON on stdin → ok, otherwise the reason
check_verified() {
  python3 -c '
import json, sys
text = sys.stdin.read()
try:
    doc = json.loads(text)
except ValueError:
    sys.exit("not JSON: " + text[-400:])
v = doc.get("verification") or {}
if doc.get("status") != "verified" or v.get("passed") is not True or v.get("backend") != "simulator":
    sys.exit("not verified: " + json.dumps(doc)[:600])
'
}

# --- 1. a fresh venv on this machine -------------------------------------
PY=${PYTHON:-python3}
"$PY" -m venv "$T/venv"
"$T/venv/bin/pip" install -q --disable-pip-version-check "numpy>=1.24" >/dev/null 2>&1 \
  || "$REPO/.venv/bin/pip" download -q --disable-pip-version-check numpy -d "$T/wh" --only-binary=:all: >/dev/null
[ -d "$T/wh" ] && "$T/venv/bin/pip" install -q --no-index --find-links "$T/wh" numpy
"$T/venv/bin/pip" install -q --disable-pip-version-check --no-index "$WHEEL" || die "pip install --no-index $WHEEL"
ok "installed offline into a fresh venv with NumPy ($(basename "$WHEEL"))"

clean_env=(env -i HOME="$T" PATH="$T/venv/bin:/usr/bin:/bin" LANG=C.UTF-8 TMPDIR="$T")
run_clean() { (cd "$T/work" && "${clean_env[@]}" "$@"); }

v=$(run_clean port --version) || die "port --version"
ok "port --version: $v"
v=$(run_clean python -m port --version) || die "python -m port --version"
ok "python -m port --version: $v"
out=$(run_clean port analyze --static pricing.py 2>&1) || die "port analyze --static: $out"
grep -q 'cnd' <<<"$out" || die "port analyze --static does not name cnd: $out"
ok "port analyze --static"
for choice in 0 1; do
  what=$([ $choice = 1 ] && echo "through the wheel's own C library" || echo "with this machine's C library")
  out=$(run_clean PORT_BUNDLED_LIBC=$choice port "${MIGRATE[@]}" 2>"$T/err") \
    || die "port migrate $what: $(tail -n 3 "$T/err")"
  check_verified <<<"$out" || die "port migrate $what"
  ok "port migrate verifies on the simulator $what"
done
# The user's path: profile the app (py-spy, the capture), then migrate its
# hot function on the captured inputs, through the wheel's own C library.
out=$(run_clean PORT_BUNDLED_LIBC=1 port analyze app.py 2>&1) || die "port analyze app.py (profiled): $out"
grep -q 'density .*cuda' <<<"$out" || die "the profile does not rank density as cuda: $out"
out=$(run_clean PORT_BUNDLED_LIBC=1 port "${PROFILED[@]}" 2>"$T/err") || die "port migrate on captured inputs: $(tail -n 3 "$T/err")"
check_verified <<<"$out" || die "port migrate on captured inputs"
ok "port analyze app.py samples and captures; density verifies on the captured inputs"
# Nothing of the checkout was in reach: the binary links no LLVM.
# (No `cmd | grep -q` or `| head` under pipefail: SIGPIPE fails them at random.)
linked=$(ldd "$T"/venv/lib/python3*/site-packages/port/bin/port)
! grep -q -i llvm <<<"$linked" || die "the installed binary links LLVM: $linked"
ok "the installed binary links only glibc and libgcc_s"

[ -n "$BULLSEYE" ] || exit 0

# --- 2. Debian 11 (glibc 2.31) ---------------------------------------------
[ "$(id -u)" -eq 0 ] || die "--bullseye needs root (debootstrap, chroot)"
if ! command -v debootstrap >/dev/null; then
  say "installing debootstrap from Debian"
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends debootstrap >/dev/null
fi
ROOTFS=$T/bullseye
MIRROR=${DEBIAN_MIRROR:-http://deb.debian.org/debian}
say "debootstrap bullseye (minbase, python3-venv) from $MIRROR"
debootstrap --variant=minbase --include=python3,python3-venv bullseye "$ROOTFS" "$MIRROR" >"$T/debootstrap.log" 2>&1 \
  || die "debootstrap bullseye: $(tail -n 3 "$T/debootstrap.log")"
"$REPO/.venv/bin/pip" download -q --disable-pip-version-check "numpy<2.1" --only-binary=:all: \
  --python-version 3.9 --implementation cp --platform manylinux_2_17_x86_64 -d "$ROOTFS/wh" >/dev/null \
  || die "pip download numpy for Python 3.9"
cp "$WHEEL" "$ROOTFS/wh/"
mkdir -p "$ROOTFS/work" && cp "$T/work/pricing.py" "$T/work/app.py" "$ROOTFS/work/"
mount -t proc proc "$ROOTFS/proc"
in_root() { chroot "$ROOTFS" env -i HOME=/root PATH=/v/bin:/usr/bin:/bin LANG=C.UTF-8 "$@"; }
glibc=$(in_root ldd --version | awk 'NR == 1')
in_root python3 -m venv /v
in_root pip install -q --disable-pip-version-check --no-index --find-links /wh numpy "/wh/$(basename "$WHEEL")" \
  || die "pip install in bullseye"
ok "installed in bullseye ($glibc)"
if in_root env PORT_BUNDLED_LIBC=0 port --version >/dev/null 2>&1; then
  die "the binary started on glibc 2.31 without its own C library: the bullseye check proves nothing"
fi
v=$(in_root port --version) || die "port --version in bullseye"
ok "port --version in bullseye: $v"
# Loading the CUDA driver goes through the carried loader too: with none
# here, one line and exit 2, not a crash of mixed C libraries.
rc=0; err=$(in_root sh -c "cd /work && port ${ON_GPU[*]@Q}" 2>&1 >/dev/null) || rc=$?
[ "$rc" = 2 ] && grep -q 'no CUDA driver' <<<"$err" || die "port migrate --backend gpu in bullseye (exit $rc): $err"
ok "port migrate --backend gpu in bullseye says there is no driver (exit 2)"
out=$(in_root sh -c "cd /work && port ${MIGRATE[*]@Q}" 2>"$T/err") \
  || die "port migrate in bullseye: $(tail -n 3 "$T/err")"
check_verified <<<"$out" || die "port migrate in bullseye"
ok "port migrate verifies on the simulator in bullseye"
out=$(in_root sh -c "cd /work && port analyze app.py" 2>&1) || die "port analyze app.py in bullseye: $out"
grep -q 'density .*cuda' <<<"$out" || die "the profile in bullseye does not rank density as cuda: $out"
out=$(in_root sh -c "cd /work && port ${PROFILED[*]@Q}" 2>"$T/err") \
  || die "port migrate on captured inputs in bullseye: $(tail -n 3 "$T/err")"
check_verified <<<"$out" || die "port migrate on captured inputs in bullseye"
ok "in bullseye, port analyze app.py samples and captures; density verifies on the captured inputs"
