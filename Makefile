# Two commands on a fresh machine: `make run` and `make test`.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
PIP := $(PY) -m pip
STAMP := $(VENV)/.installed
DEV_STAMP := $(VENV)/.installed-dev
DOCS_STAMP := $(VENV)/.installed-docs

.PHONY: run test docs docs-check test-slow mutation mutation-ci mutation-mechanisms install install-dev lint bench bench-peers clean

$(PY):
	$(PYTHON) -m venv $(VENV)
	$(PIP) install --quiet --upgrade pip

# `make run` needs the 'reproduce' extra (matplotlib, markdown-it-py): the demo writes plots and a report.
$(STAMP): pyproject.toml | $(PY)
	$(PIP) install --quiet -e ".[reproduce]"
	touch $@

$(DEV_STAMP): pyproject.toml | $(PY)
	$(PIP) install --quiet -e ".[dev,reproduce]"
	touch $@ $(STAMP)

$(DOCS_STAMP): pyproject.toml | $(PY)
	$(PIP) install --quiet -e ".[docs]"
	touch $@ $(STAMP)

install: $(STAMP)
install-dev: $(DEV_STAMP)

## make run: create .venv, install, run the main job (the demo on scikit-learn's digits)
run: $(STAMP)
	$(VENV)/bin/dpspectral demo --out reports/demo

## make test: install the dev extras and run the test suite except the tests marked slow (what CI runs;
## pyproject.toml's addopts deselect them with -m 'not slow')
test: $(DEV_STAMP)
	$(PY) -m pytest -n 2 --dist loadfile

## make docs: the documentation site into docs/_build/html (Sphinx; warnings are errors). The gallery's
## examples run; DPSPECTRAL_GALLERY_QUICK=1 runs them in their quick mode (what CI does)
docs: $(DOCS_STAMP)
	$(PY) -m sphinx -b html -j auto -W --keep-going -q docs docs/_build/html

## make docs-check: the built site's internal links and anchors (offline), then screenshots of three pages
## in headless Chromium under reports/ci/ (needs /usr/bin/chromium)
docs-check: $(DOCS_STAMP)
	$(PY) tools/check_site_links.py docs/_build/html
	$(PY) tools/site_screenshots.py docs/_build/html --out reports/ci

## make test-slow: only the long statistical tests kept out of CI
test-slow: $(DEV_STAMP)
	$(PY) -m pytest -n 2 --dist loadfile -m slow

## make mutation: mutation testing (mutmut) of the privacy core, privacy/{gaussian,clipping,budget,
## pipeline,accounting}.py, against its own tests; writes reports/mutation.md (docs/privacy-audit.md)
mutation: $(DEV_STAMP)
	$(PY) tools/mutation.py --report reports/mutation.md

## make mutation-ci: the subset CI runs on every build (privacy/gaussian.py, clipping.py, budget.py; about 4 minutes on 2 cores)
mutation-ci: $(DEV_STAMP)
	$(PY) tools/mutation.py --ci --timeout 1500 --report reports/mutation-ci.md

## make mutation-mechanisms: the listed privacy-critical mechanism lines, one bug each (~15 min)
mutation-mechanisms: $(DEV_STAMP)
	$(PY) tools/mechanism_mutations.py

lint: $(DEV_STAMP)
	$(VENV)/bin/ruff check src tests benchmarks
	$(VENV)/bin/mypy

bench: $(DEV_STAMP)
	$(PY) benchmarks/bench_covariance.py

## make bench-peers: the quick peer benchmark against diffprivlib and OpenDP (a script, not a subcommand)
bench-peers: $(DEV_STAMP)
	$(PY) benchmarks/bench_peers.py --quick --out reports/bench-quick

clean:
	rm -rf $(VENV) reports .pytest_cache docs/_build docs/api docs/auto_examples
