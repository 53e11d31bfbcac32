#!/usr/bin/env bash
# Fuzz parse → analyse → classify with cargo-fuzz (needs the nightly
# toolchain; installs cargo-fuzz if missing). Seeds the corpus with the
# fixtures. usage: scripts/fuzz.sh [RUNS] (default 1,000,000 inputs)
set -euo pipefail
cd "$(dirname "$0")/.."
RUNS=${1:-1000000}
command -v cargo-fuzz >/dev/null || cargo install -q cargo-fuzz
mkdir -p fuzz/corpus/analyze
find fixtures -name '*.py' -exec cp {} fuzz/corpus/analyze/ \;
# libFuzzer's threads have small stacks: the target runs the analysis
# directly, so give the process room for deeply nested input.
ulimit -s unlimited 2>/dev/null || true
cargo +nightly fuzz run analyze fuzz/corpus/analyze -- \
  -runs="$RUNS" -max_len=4096 -rss_limit_mb=4096 -print_final_stats=1
