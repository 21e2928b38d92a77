# The two commands that matter: `make demo` and `make test`. Both install any
# missing Debian packages first (scripts/setup.sh), then build with CMake presets.
SHELL := /bin/bash
PRESET ?= default
JOBS ?= $(shell nproc)

.PHONY: all setup configure build test demo asan bench chart-test format clean

all: build

setup:
	@scripts/setup.sh

configure: setup
	@cmake --preset $(PRESET) >/dev/null

build: configure
	@cmake --build --preset $(PRESET) -j $(JOBS)

test: build
	@ctest --preset $(PRESET)
	@if [ -x scripts/chart-test.sh ]; then scripts/chart-test.sh; fi

demo: build
	@scripts/demo.sh build/$(PRESET)

# Same tests under AddressSanitizer + UndefinedBehaviorSanitizer.
asan:
	@$(MAKE) test PRESET=asan

bench: build
	@scripts/bench.sh build/$(PRESET)

format:
	@git ls-files '*.cc' '*.h' | xargs clang-format -i

clean:
	@rm -rf build
