#!/usr/bin/env bash
# Crash-fuzz port with cargo-fuzz (needs the nightly toolchain; installs
# cargo-fuzz if missing). Seeds each target's corpus with the fixtures.
#   usage: scripts/fuzz.sh [RUNS] [TARGET]
#   RUNS    inputs to run (default 1,000,000)
#   TARGET  analyze: parse → analyse → classify (the default)
#           plan:    the static pass with the planner (desugar → admit →
#                    lower → finish on every function worth asking about)
set -euo pipefail
cd "$(dirname "$0")/.."
RUNS=${1:-1000000}
TARGET=${2:-analyze}
export LLVM_SYS_191_PREFIX=${LLVM_SYS_191_PREFIX:-/usr/lib/llvm-19}
command -v cargo-fuzz >/dev/null || cargo install -q cargo-fuzz
mkdir -p "fuzz/corpus/$TARGET"
find fixtures -name '*.py' -exec cp {} "fuzz/corpus/$TARGET/" \;
# libFuzzer's threads have small stacks: the target runs the analysis
# directly, so give the process room for deeply nested input.
ulimit -s unlimited 2>/dev/null || true
cargo +nightly fuzz run "$TARGET" "fuzz/corpus/$TARGET" -- \
  -runs="$RUNS" -max_len=4096 -rss_limit_mb=4096 -print_final_stats=1
