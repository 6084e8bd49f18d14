# A thin layer over the CMake presets (CMakePresets.json), as DuckDB does.
#   make demo   build everything, then judge the bundled QuantVLA problem (GPU, or CPU fallback)
#   make test   build everything, then run every test (GPU tests skip where there is no GPU)
# Both first run scripts/bootstrap.sh, which installs what is missing (apt packages; torch from
# PyPI into .venv) and records the python3 to embed in build/python-path.

PRESET ?= release
BUILD := build
JOBS ?= $(shell nproc 2>/dev/null || echo 2)

.PHONY: all deps configure build demo test test-gpu format format-check lint clean

all: build

deps:
	@scripts/bootstrap.sh $(BUILD)/python-path

configure: deps
	cmake --preset $(PRESET) -DKJ_PYTHON="$$(cat $(BUILD)/python-path)"

build: configure
	cmake --build --preset $(PRESET) -j $(JOBS)

demo: build
	@scripts/demo.sh

test: export KJ_BOOTSTRAP_TEST = 1
test: build format-check lint
	ctest --preset $(PRESET) -j $(JOBS)

test-gpu: build
	ctest --preset gpu

format:
	@scripts/format.sh fix

format-check:
	@scripts/format.sh check

lint:
	@scripts/lint.sh

clean:
	rm -rf $(BUILD) build-debug
