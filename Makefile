# The two commands that matter: `make demo` and `make test`. Both install any
# missing Debian packages first (scripts/setup.sh), then build with CMake presets.
SHELL := /bin/bash
PRESET ?= default
JOBS ?= $(shell nproc)

.PHONY: all setup configure build test demo asan bench chart-test format clean fuzz fuzz-smoke \
        image image-test scheduler-image e2e bench-scheduler \
        bench-placement

all: build

setup:
	@scripts/setup.sh

configure: setup
	@cmake --preset $(PRESET) >/dev/null

build: configure
	@cmake --build --preset $(PRESET) -j $(JOBS)

# The fuzz-labelled tests (fuzz-smoke) run after the rest, then the chart
# tests, then the image test (docs/operations.md, "The image"; about 20 s, plus
# about 2.5 minutes the first time for the debootstrap base). NEIGHBORLY_IMAGE_TEST=0
# skips the image test, saying so (machines without root, podman or the
# Debian mirror).
NEIGHBORLY_IMAGE_TEST ?= 1
test: build
	@ctest --preset $(PRESET) -LE fuzz
	@$(FUZZ_SMOKE)
	@if [ -x scripts/chart-test.sh ]; then scripts/chart-test.sh --build build/$(PRESET); fi
	@if [ "$(NEIGHBORLY_IMAGE_TEST)" = 0 ]; then \
	  echo "image-test: SKIPPED (NEIGHBORLY_IMAGE_TEST=0); run make image-test"; \
	else $(MAKE) --no-print-directory image-test; fi

# The image (deploy/Dockerfile) from this build's binaries, with podman on a
# debootstrap base: localhost/neighborly:VERSION. image-test builds it under a
# tag of its own and runs the demo through it (test/image/image_test.sh).
image: build
	@scripts/setup.sh --image
	@scripts/image.sh build build/$(PRESET)

image-test: build
	@scripts/setup.sh --image
	@scripts/image.sh test build/$(PRESET)

# The neighborly-scheduler image (kube-scheduler + the Neighborly plugin, Go)
# on the same base: localhost/neighborly-scheduler:VERSION. make e2e tests it.
scheduler-image:
	@scripts/setup.sh --image
	@scripts/image.sh scheduler

demo: build
	@scripts/demo.sh build/$(PRESET)

# The stock kube-scheduler (scheduler/go.mod pins the release) schedules the
# seed scenario through an in-process kube-apiserver + etcd, consulting the
# real extender and agent of this build; then the faults (docs/e2e.md).
e2e: build
	@scripts/e2e.sh build/$(PRESET)

# kube-scheduler's own throughput benchmark (scheduler_perf) at 500 and 5,000
# nodes without Neighborly, with the chart's HTTP extender entry and with the
# framework plugin, in one run (docs/performance.md; 20-30 minutes). Not part
# of test or e2e. BENCH_FILTER=smoke: five nodes per mode.
bench-scheduler: build
	@scripts/bench-scheduler.sh build/$(PRESET)

# The placement fleet benchmark: seeded fleets placed by kube-scheduler's
# default scoring alone and with the real extender, judged by the benchmark's
# own interference ground truth, also under moved parameters
# (docs/placement-benchmark.md; numbers in docs/performance.md). Under a minute.
bench-placement: build
	@scripts/bench-placement.sh build/$(PRESET)

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
