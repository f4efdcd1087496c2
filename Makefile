# Two commands on a fresh machine: `make run` and `make test`.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
PIP := $(PY) -m pip
STAMP := $(VENV)/.installed
DEV_STAMP := $(VENV)/.installed-dev

.PHONY: run test install install-dev lint bench clean

$(PY):
	$(PYTHON) -m venv $(VENV)
	$(PIP) install --quiet --upgrade pip

$(STAMP): pyproject.toml | $(PY)
	$(PIP) install --quiet -e .
	touch $@

$(DEV_STAMP): pyproject.toml | $(PY)
	$(PIP) install --quiet -e ".[dev]"
	touch $@ $(STAMP)

install: $(STAMP)
install-dev: $(DEV_STAMP)

## make run: create .venv, install, run the main job (the demo on scikit-learn's digits)
run: $(STAMP)
	$(VENV)/bin/dpspectral demo --out reports/demo

## make test: install the dev extras and run the whole test suite
test: $(DEV_STAMP)
	$(PY) -m pytest -n 2 --dist loadfile

lint: $(DEV_STAMP)
	$(VENV)/bin/ruff check src tests benchmarks
	$(VENV)/bin/mypy

bench: $(DEV_STAMP)
	$(PY) benchmarks/bench_covariance.py

clean:
	rm -rf $(VENV) reports .pytest_cache
