# The two commands that matter: `make demo` and `make test`. Both install any
# missing Debian packages first (scripts/setup.sh), then build with CMake presets.
SHELL := /bin/bash
PRESET ?= default
JOBS ?= $(shell nproc)

.PHONY: all setup configure build test demo asan bench chart-test format clean fuzz fuzz-smoke e2e

all: build

setup:
	@scripts/setup.sh

configure: setup
	@cmake --preset $(PRESET) >/dev/null

build: configure
	@cmake --build --preset $(PRESET) -j $(JOBS)

# The fuzz-labelled tests (fuzz-smoke) run after the rest.
test: build
	@ctest --preset $(PRESET) -LE fuzz
	@$(FUZZ_SMOKE)
	@if [ -x scripts/chart-test.sh ]; then scripts/chart-test.sh; fi

demo: build
	@scripts/demo.sh build/$(PRESET)

# The stock kube-scheduler (scheduler/go.mod pins the release) schedules the
# seed scenario through an in-process kube-apiserver + etcd, consulting the
# real extender and agent of this build; then the faults (docs/e2e.md).
e2e: build
	@scripts/e2e.sh build/$(PRESET)

# Same tests under AddressSanitizer + UndefinedBehaviorSanitizer.
asan:
	@$(MAKE) test PRESET=asan

# Fuzzing (docs/fuzzing.md). fuzz-smoke replays every fuzz target's seeds and
# crash regressions once, in this preset's build. fuzz builds the libFuzzer
# targets with clang (build/fuzz) and runs each in turn, for FUZZ_SECONDS or
# FUZZ_RUNS inputs, whichever comes first; FUZZ_TARGETS picks some.
FUZZ_SMOKE = ctest --preset $(PRESET) -L fuzz
FUZZ_SECONDS ?= 60
FUZZ_RUNS ?= 10000000
FUZZ_TARGETS ?=

fuzz-smoke: build
	@$(FUZZ_SMOKE)

fuzz: setup
	@cmake --preset fuzz >/dev/null
	@cmake --build --preset fuzz -j $(JOBS)
	@fuzz/run_fuzzers.sh build/fuzz $(FUZZ_SECONDS) $(FUZZ_RUNS) $(FUZZ_TARGETS)

bench: build
	@scripts/bench.sh build/$(PRESET)

format:
	@git ls-files '*.cc' '*.h' | xargs clang-format -i

clean:
	@rm -rf build
