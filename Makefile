# port — the two commands of the README's Quick start, and the developer extras.
# Everything installs itself: LLVM 19 from Debian, a .venv with numpy and the
# CUDA compiler pieces, and (for tests) the Numba oracle venv.

CARGO ?= cargo
export LLVM_SYS_191_PREFIX ?= /usr/lib/llvm-19
export CARGO_TERM_PROGRESS_WHEN ?= never

.PHONY: setup setup-test demo test test-sim lint bench bench-gpu gpu-bundle wheel test-wheel fuzz fuzz-diff

setup:
	@bash scripts/setup.sh

setup-test:
	@bash scripts/setup.sh --oracle

## make demo: set up, build, and analyse a bundled fixture
demo: setup
	@$(CARGO) build --release --quiet
	@./target/release/port analyze --static fixtures/classify/seeds.py
	@echo
	@./target/release/port explain PORT204 | head -n 12

## make test: set up, then every test, formatting and lints
# CI builds once from clean, so incremental state (gigabytes) only costs disk.
# The wheel comes first: the GPU bundle's test packs it, and it is then
# installed and run in a fresh venv and in Debian 11 (scripts/test-wheel.sh).
WHEEL = target/wheels/port-$(shell sed -n 's/^version = "\(.*\)"/\1/p' Cargo.toml | head -n 1)-py3-none-manylinux_2_17_x86_64.whl
test: setup-test
	@bash scripts/wheel.sh
	CARGO_INCREMENTAL=0 PORT_TEST_WHEEL=$(CURDIR)/$(WHEEL) $(CARGO) test --workspace --quiet
	@bash scripts/test-wheel.sh $(WHEEL) --bullseye
	$(CARGO) fmt --all -- --check
	$(CARGO) clippy --workspace --all-targets --quiet -- -D warnings

## make test-sim: the migrated fixtures with every patched module run under Numba's CUDA simulator (make test runs a fixed half of them)
test-sim: setup-test
	PORT_CHECK_SIM=all $(CARGO) test --test migrate_fixtures --quiet

lint:
	$(CARGO) fmt --all -- --check
	$(CARGO) clippy --workspace --all-targets -- -D warnings

## make bench: analyzer throughput on a large real codebase
bench: setup
	@bash scripts/bench-analyze.sh

## make bench-gpu: port's kernels against numba-cuda, @njit and CPython on this GPU (ARGS="--simulate --quick" without one)
bench-gpu: setup-test
	@bash scripts/bench-gpu.sh $(ARGS)

## make gpu-bundle: one archive (target/gpu-bundle/port-gpu.tar.xz, under 60 MiB) that runs the GPU tests and bench-gpu on a bare GPU machine (scripts/run-gpu.sh)
gpu-bundle: setup
	@bash scripts/gpu-bundle.sh $(ARGS)

## make wheel: the wheel users install (target/wheels/port-*.whl, at most 60 MiB): port with LLVM linked in, and the C library it needs for machines whose own is older
wheel: setup
	@bash scripts/wheel.sh $(ARGS)

## make test-wheel: make wheel, then install it offline into a fresh venv and into a Debian 11 (glibc 2.31) root file system, and migrate there
test-wheel: wheel
	@bash scripts/test-wheel.sh $(WHEEL) --bullseye

## make fuzz [RUNS=1000000] [TARGET=analyze|plan]: crash-fuzz parse → analyse → classify, or the static pass with the planner (nightly, cargo-fuzz)
RUNS ?= 1000000
TARGET ?= analyze
fuzz:
	@bash scripts/fuzz.sh $(RUNS) $(TARGET)

## make fuzz-diff N=300 [SEED=1] [JOBS=2]: N random NumPy programs migrated on the simulator and checked against CPython (every 10th also under Numba's CUDA simulator); ends with "programs N, verified V, refused R, mismatch M, failed F"
N ?= 300
SEED ?= 1
JOBS ?= $(shell nproc)
fuzz-diff: setup-test
	@$(CARGO) build --release --quiet
	@.venv/bin/python scripts/fuzz_diff.py $(N) --seed $(SEED) --jobs $(JOBS) --numba-every 10 --out target/fuzz-diff
