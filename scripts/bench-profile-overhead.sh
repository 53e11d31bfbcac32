#!/usr/bin/env bash
# What does `port analyze` cost over running the app alone? For each app, runs
# it plain (`python APP ARGS`) and under `port analyze` (default: sampling and
# capture in the same run), REPEATS times each, in rounds whose order rotates, in the same
# invocation, and prints for each the median wall time and the median CPU time
# (user + system of the whole process tree: port, py-spy's threads, Python and
# whatever it starts), and their ratios.
# Target: <= 1.05x of a plain run (median), capture included.
#
#   scripts/bench-profile-overhead.sh [--rate HZ] [--repeats N] [--no-capture]
#                                     [--breakdown] [--compare PORT_BIN]
#                                     [APP.py [-- ARGS...]]
#
# Without an app it measures the fixture apps, a call-heavy one included
# (pure_python.py: 150,000 small calls; capture_cases.py: 300,000).
# --breakdown also runs `port analyze --no-capture` in each round, so the
# cost splits into sampling + analysis (no-capture minus plain) and capture
# (capture minus no-capture); the seconds the capture spent recording calls
# inside the app (describing, copying arrays, the manifest) and on its .npz
# writer thread are read from each run's manifest.
# --compare PORT_BIN also runs another build of port the same way in each
# round (say, the last release), so a change is measured against it in the
# same invocation, under the same load.
#
# Wall times are as noisy as the machine is busy; CPU times much less so, and
# on a shared machine they are the figures to compare. Each app's line also
# gives the median of the ratios paired within a round, with a 95% bootstrap
# interval and whether that interval settles the 1.05x target.
# PORT overrides the binary (default target/release/port, built if missing).
# PYTHON overrides the interpreter (default .venv/bin/python, else python3).
set -euo pipefail
cd "$(dirname "$0")/.."

rate=100
repeats=5
mode=()
breakdown=0
compare=
apps=()
while [ $# -gt 0 ]; do
  case "$1" in
    --rate) rate=$2; shift 2 ;;
    --repeats) repeats=$2; shift 2 ;;
    --no-capture) mode=(--no-capture); shift ;;
    --breakdown) breakdown=1; shift ;;
    --compare) compare=$2; shift 2 ;;
    --) shift; apps[-1]="${apps[-1]} $*"; break ;;
    -*) echo "bench: unknown option $1" >&2; exit 2 ;;
    *) apps+=("$1"); shift ;;
  esac
done
if [ ${#apps[@]} -eq 0 ]; then
  apps=(
    "fixtures/apps/mixed_app.py 2"
    "fixtures/apps/mixed_app.py 10"
    "fixtures/apps/black_scholes.py 1000000 20"
    "fixtures/apps/nbody.py"
    "fixtures/apps/pure_python.py 150000"
    "fixtures/apps/capture_cases.py"
  )
fi

python=${PYTHON:-}
if [ -z "$python" ]; then
  if [ -x .venv/bin/python ]; then python=.venv/bin/python; else python=python3; fi
fi
port=${PORT:-target/release/port}
if [ ! -x "$port" ]; then
  echo "bench: building $port" >&2
  cargo build -q --release >&2
fi
# Absolute, symlinks kept: a venv's python is a link to the base interpreter.
abs() { case "$1" in */*) echo "$(cd "$(dirname "$1")" && pwd)/$(basename "$1")" ;; *) echo "$1" ;; esac; }
python=$(abs "$python")
port=$(abs "$port")
[ -z "$compare" ] || compare=$(abs "$compare")
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# Runs a command in $work, output discarded; prints "WALL CPU" in seconds:
# CPU is user + system of every process it started and waited for
# (getrusage(RUSAGE_CHILDREN) of the measuring Python, whose own start-up is
# not counted).
measure() {
  (cd "$work" && "$python" -c '
import resource, subprocess, sys, time
t0 = time.perf_counter()
rc = subprocess.call(sys.argv[1:], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
wall = time.perf_counter() - t0
ru = resource.getrusage(resource.RUSAGE_CHILDREN)
if rc != 0:
    sys.exit("bench: failed (exit %d): %s" % (rc, " ".join(sys.argv[1:])))
print("%.4f %.4f" % (wall, ru.ru_utime + ru.ru_stime))
' "$@")
}
# Seconds the capture spent recording calls in the app's thread, saving .npz
# files on its writer thread, and waiting for that writer at exit, in the
# last run (0 0 0 without one).
capture_s() {
  "$python" -c '
import json, sys
try:
    m = json.load(open(sys.argv[1]))
    print(m.get("capture_s") or 0, m.get("write_s") or 0, m.get("drain_s") or 0)
except OSError:
    print(0, 0, 0)
' "$work/.port/captures/manifest.json"
}
median() { sort -g | awk '{a[NR]=$1} END {if (NR%2) print a[(NR+1)/2]; else print (a[NR/2]+a[NR/2+1])/2}'; }
# The ratios of the runs paired within each round (B_i / A_i: the two ran
# seconds apart, under the same load), their median, a 95% bootstrap
# interval of that median (2,000 resamples of the rounds, fixed seed), and
# the verdict against the 1.05x target that the interval allows: "met"
# when all of it is at or below, "missed" when all of it is above,
# "undecided" when the machine's noise straddles it. Args: N A... B...
paired() {
  "$python" -c '
import random, statistics, sys
n = int(sys.argv[1])
a = [float(x) for x in sys.argv[2 : 2 + n]]
b = [float(x) for x in sys.argv[2 + n : 2 + 2 * n]]
r = [y / x for x, y in zip(a, b)]
rng = random.Random(7)
meds = sorted(statistics.median(rng.choices(r, k=len(r))) for _ in range(2000))
lo, hi = meds[50], meds[1949]
verdict = "met" if hi <= 1.05 else "missed" if lo > 1.05 else "undecided"
print("%.3fx [%.3f, %.3f] %s" % (statistics.median(r), lo, hi, verdict))
' "$@"
}
med() { printf '%s\n' "$@" | median; }

summary=()
details=()
for spec in "${apps[@]}"; do
  read -r app app_args <<<"$spec"
  [ -f "$app" ] || { echo "bench: app $app not found" >&2; exit 2; }
  app=$(realpath "$app")
  # The file's name, with its folder's when that alone is ambiguous (app.py).
  label=$(basename "$app")
  if [ "$(printf '%s\n' "${apps[@]}" | awk '{print $1}' | xargs -n1 basename | grep -cx "$label")" -gt 1 ]; then
    label=$(basename "$(dirname "$app")")/$label
  fi
  # shellcheck disable=SC2206
  args=($app_args)
  plain=("$python" "$app" "${args[@]}")
  profiled=("$port" analyze --python "$python" --rate "$rate" "${mode[@]}" "$app")
  nocap=("$port" analyze --python "$python" --rate "$rate" --no-capture "$app")
  other=("${compare:-none}" analyze --python "$python" --rate "$rate" "${mode[@]}" "$app")
  if [ ${#args[@]} -gt 0 ]; then
    profiled+=(-- "${args[@]}"); nocap+=(-- "${args[@]}"); other+=(-- "${args[@]}")
  fi

  # One warm-up of each so the page cache and .pyc files are equal for all.
  measure "${plain[@]}" >/dev/null
  measure "${profiled[@]}" >/dev/null
  [ "$breakdown" = 1 ] && measure "${nocap[@]}" >/dev/null
  [ -n "$compare" ] && measure "${other[@]}" >/dev/null
  pw=(); pc=(); qw=(); qc=(); nw=(); nc=(); ow=(); oc=(); cs=(); ws=(); ds=()
  # Each round runs every kind once, in an order rotated by one each round:
  # a run's place in the round matters (the run after another inherits its
  # page cache, its freed memory and its files to delete), and measured in a
  # fixed order that bias reached 6% between two builds.
  kinds=(plain profiled)
  [ "$breakdown" = 1 ] && kinds+=(nocap)
  [ -n "$compare" ] && kinds+=(other)
  for i in $(seq 1 "$repeats"); do
    for k in $(seq 0 $((${#kinds[@]} - 1))); do
      kind=${kinds[$(((i - 1 + k) % ${#kinds[@]}))]}
      case $kind in
        plain) read -r w c < <(measure "${plain[@]}"); pw+=("$w"); pc+=("$c") ;;
        profiled)
          read -r w c < <(measure "${profiled[@]}"); qw+=("$w"); qc+=("$c")
          read -r c w d < <(capture_s); cs+=("$c"); ws+=("$w"); ds+=("$d") ;;
        nocap) read -r w c < <(measure "${nocap[@]}"); nw+=("$w"); nc+=("$c") ;;
        other) read -r w c < <(measure "${other[@]}"); ow+=("$w"); oc+=("$c") ;;
      esac
    done
    line=$(printf 'bench: %s %s run %d/%d  plain %.3f s (cpu %.3f)  port analyze %.3f s (cpu %.3f)' \
      "$label" "${app_args:--}" "$i" "$repeats" "${pw[-1]}" "${pc[-1]}" "${qw[-1]}" "${qc[-1]}")
    if [ "$breakdown" = 1 ]; then
      line+=$(printf '  --no-capture %.3f s (cpu %.3f)' "${nw[-1]}" "${nc[-1]}")
    fi
    if [ -n "$compare" ]; then
      line+=$(printf '  compared %.3f s (cpu %.3f)' "${ow[-1]}" "${oc[-1]}")
    fi
    echo "$line" >&2
  done
  p=$(med "${pw[@]}"); q=$(med "${qw[@]}")
  pcpu=$(med "${pc[@]}"); qcpu=$(med "${qc[@]}")
  summary+=("$(printf '%-18s %-14s wall %7.3f s -> %7.3f s  %.3fx   cpu %7.3f s -> %7.3f s  %.3fx   paired wall %s' \
    "$label" "${app_args:--}" "$p" "$q" "$(echo "$q / $p" | bc -l)" \
    "$pcpu" "$qcpu" "$(echo "$qcpu / $pcpu" | bc -l)" "$(paired "$repeats" "${pw[@]}" "${qw[@]}")")")
  if [ -n "$compare" ]; then
    o=$(med "${ow[@]}"); ocpu=$(med "${oc[@]}")
    summary+=("$(printf '%-18s %-14s compared: wall %7.3f s  %.3fx   cpu %7.3f s  %.3fx   (%s)' \
      "" "" "$o" "$(echo "$o / $p" | bc -l)" "$ocpu" "$(echo "$ocpu / $pcpu" | bc -l)" "$compare")")
  fi
  if [ "$breakdown" = 1 ]; then
    n=$(med "${nw[@]}"); ncpu=$(med "${nc[@]}")
    details+=("$(printf '%-18s %-14s sampling+analysis: wall %+.3f s cpu %+.3f s   capture: wall %+.3f s cpu %+.3f s   recording calls in the app %.3f s, saving .npz off its thread %.3f s (waited for at exit %.3f s)' \
      "$label" "${app_args:--}" "$(echo "$n - $p" | bc -l)" "$(echo "$ncpu - $pcpu" | bc -l)" \
      "$(echo "$q - $n" | bc -l)" "$(echo "$qcpu - $ncpu" | bc -l)" "$(med "${cs[@]}")" "$(med "${ws[@]}")" "$(med "${ds[@]}")")")
  fi
done

printf 'port analyze %s at %s Hz, %s; medians of %d runs each, in rounds of rotating order (cores: %s)\n' \
  "$([ ${#mode[@]} -gt 0 ] && echo '--no-capture' || echo '(default: capture in the sampled run)')" \
  "$rate" "$("$python" -V 2>&1)" "$repeats" "$(nproc)"
printf '%s\n' "${summary[@]}"
if [ "$breakdown" = 1 ]; then
  echo 'medians: sampling+analysis is --no-capture minus plain; capture is port analyze minus --no-capture:'
  printf '%s\n' "${details[@]}"
fi
echo 'target: ratio <= 1.05x of medians (cpu: user+sys of the process tree)'
echo 'paired wall: median of the per-round ratios, its 95% bootstrap interval, and whether that interval is all under 1.05x (met), all over (missed), or across it (undecided: the noise is larger than the margin)'
