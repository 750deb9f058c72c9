# Two commands for users: `make demo` and `make test`. Both install what they need, idempotently,
# on a fresh machine with Python 3.10-3.12, make and git (uv is installed into each venv with pip).
SHELL := /bin/bash
.ONESHELL:
# Every recipe runs as one bash script that stops at its first failing command (a pipeline fails if
# any part does): without -e a recipe's status would be its last line's, so `make lint` would pass
# with a ruff error and a failed install would still mark its venv done.
.SHELLFLAGS := -e -o pipefail -c
.DEFAULT_GOAL := help

PYTHON ?= python3
AIRFLOW3_VERSION ?= 3.3.2
AIRFLOW2_VERSION ?= 2.11.2
VENV ?= .venv
VENV2 ?= .venv-af2
DEMO_VENV ?= .demo/venv
# `make dist` needs only the build tool: uv in a venv of its own (a few MB), not the development venv.
BUILD_VENV ?= .build-venv
DIST_DIR ?= dist
# User-facing extras; the development tools are the PEP 735 dependency groups of pyproject.toml.
EXTRAS := sandbox,preview
GROUPS := --group dev
# The distributed stack (Celery, PostgreSQL driver, Playwright) is Airflow 3 only.
GROUPS3 := $(GROUPS) --group stack
UV_INSTALL = bin/uv pip install --compile-bytecode
# The suite runs on WORKERS pytest-xdist workers (4 on 2 cores: most tests wait on sockets and servers,
# not on the CPU). Each module runs whole on one worker, and the `distributed` group shares one worker
# and one stack (tests/conftest.py's scheduler); every worker has its own Airflow home, sandbox and S3
# server. WORKERS=0 runs everything in this one process, one test at a time, as before.
WORKERS ?= 4
PARALLEL = -n $(WORKERS)
# Every run ends with its twenty slowest tests, so a new slow test is seen the day it lands.
SLOWEST = --durations=20

# Each venv is (re)installed only when pyproject.toml or this Makefile changes. Its marker is touched
# last, so a failed install leaves none and the next `make` tries again.
$(VENV)/.installed: pyproject.toml Makefile
	test -x $(VENV)/bin/python || $(PYTHON) -m venv $(VENV)
	$(VENV)/bin/python -m pip install --quiet --disable-pip-version-check uv
	$(VENV)/$(UV_INSTALL) --python $(VENV)/bin/python \
		"apache-airflow==$(AIRFLOW3_VERSION)" -e ".[$(EXTRAS)]" $(GROUPS3)
	touch $@

$(VENV2)/.installed: pyproject.toml Makefile
	test -x $(VENV2)/bin/python || $(PYTHON) -m venv $(VENV2)
	$(VENV2)/bin/python -m pip install --quiet --disable-pip-version-check uv
	$(VENV2)/$(UV_INSTALL) --python $(VENV2)/bin/python \
		"apache-airflow==$(AIRFLOW2_VERSION)" -e ".[$(EXTRAS)]" $(GROUPS)
	touch $@

# The demo's own venv: Airflow and the provider with the `sandbox` extra, nothing else (quietly).
$(DEMO_VENV)/.installed: pyproject.toml Makefile
	@echo "[demo] installing Airflow $(AIRFLOW3_VERSION) and the provider (sandbox extra) into $(DEMO_VENV)"
	test -x $(DEMO_VENV)/bin/python || $(PYTHON) -m venv $(DEMO_VENV)
	$(DEMO_VENV)/bin/python -m pip install --quiet --disable-pip-version-check uv
	$(DEMO_VENV)/$(UV_INSTALL) -q --python $(DEMO_VENV)/bin/python \
		"apache-airflow==$(AIRFLOW3_VERSION)" ".[sandbox]"
	touch $@

.PHONY: help install install-airflow2 lint typecheck check test test-core test-airflow2 test-random system-test demo dist \
	bench clean stack stack-down bench-distributed bench-bulk

help:
	@echo "make demo           run the contract-signing pipeline end to end against the local sandbox"
	@echo "                    (its own venv in .demo/venv: Airflow and the provider's sandbox extra)"
	@echo "make test           lint, type-check and run the whole suite on Airflow $(AIRFLOW3_VERSION); first checks"
	@echo "                    PostgreSQL, Redis and Chromium (installs them with apt-get as root or with sudo)"
	@echo "make test-core      the same without the distributed group: no PostgreSQL, Redis or Chromium needed"
	@echo "make check          the loop while working: lint, format, types, unit, contract and quick hostile tests"
	@echo "make test-airflow2  run the suite (without the distributed group) on Airflow $(AIRFLOW2_VERSION) (.venv-af2)"
	@echo "make test-random    the integration and hostile suites RUNS=10 times in parallel, each in a random"
	@echo "                    order (the seed in the log; SEED=N repeats one)"
	@echo "make install        create .venv: Airflow $(AIRFLOW3_VERSION), the provider (editable) and the dev tools"
	@echo "make install-airflow2  the same on Airflow $(AIRFLOW2_VERSION) in .venv-af2"
	@echo "make lint           ruff check and ruff format --check"
	@echo "make typecheck      mypy (strict on the package)"
	@echo "make dist           build the sdist and the wheel into dist/ (with uv alone, in $(BUILD_VENV))"
	@echo "make bench          run the benchmarks in bench/ (results in bench/results/)"
	@echo "make system-test    run the system tests against a real Documenso (needs DOCSIGN_SYSTEM_URL and"
	@echo "                    DOCSIGN_SYSTEM_API_KEY)"
	@echo "make stack          start a distributed Airflow $(AIRFLOW3_VERSION) on 127.0.0.1 (Celery, PostgreSQL, Redis, S3)"
	@echo "make stack-down     stop exactly the processes make stack started"
	@echo "make bench-distributed  the bulk DAG at scale on the stack vs LocalExecutor (bench/results/)"
	@echo "make bench-bulk     bulk sending at the real rate limit: 10,000 + 2,000 rows and the mapped"
	@echo "                    DAG as baseline (35-45 minutes; make bench runs a small version)"
	@echo "make docs           build the guides under docs/ into site/ (MkDocs, strict: a warning fails)"
	@echo "make vendor-charts  re-fetch the pinned chart library (uPlot) from npm, checked against its hashes"
	@echo "make clean          remove .demo/, dist/, site/ and the tools' caches (not the venvs)"

install: $(VENV)/.installed
install-airflow2: $(VENV2)/.installed

lint: install
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .

typecheck: install
	$(VENV)/bin/mypy

# The pre-flight runs first, with the system Python (standard library only), before any install or
# test: it installs the distributed group's Debian packages when it can, or stops within seconds.
# Its output exports DOCSIGN_CHROMIUM, the browser the UI test drives. (Plain `make`, not $(MAKE):
# in a one-shell recipe $(MAKE) would make `make -n test` run the whole suite.)
test:
	@found=$$($(PYTHON) scripts/stack.py preflight --browser --install) || exit $$?
	eval "$$found"
	make --no-print-directory lint typecheck || exit $$?
	echo "bash .ci/pytest.sh $(VENV) $(PARALLEL) $(SLOWEST)"
	bash .ci/pytest.sh $(VENV) $(PARALLEL) $(SLOWEST)

# Everything but the distributed group: needs neither PostgreSQL, Redis nor Chromium, nor the network.
test-core: lint typecheck
	bash .ci/pytest.sh $(VENV) $(PARALLEL) $(SLOWEST) -m "not distributed"

# The loop while working (under 2 minutes on 2 cores): lint, format, types, then every unit and contract
# test and the hostile tests that use no server fixture (no sandbox, S3 server or metadata database):
# marker `quick`, set in tests/conftest.py.
check: lint typecheck
	bash .ci/pytest.sh $(VENV) $(PARALLEL) $(SLOWEST) -q -m "quick" tests/unit tests/contract tests/hostile

# The parallel suite (integration and hostile modules) RUNS times in a row, each in a new random order
# on the WORKERS workers. Every worker must collect the same order, so the seed is chosen here, printed,
# and given to all of them: rerun one with `make test-random RUNS=1 SEED=N`. Stops at the first red run.
RUNS ?= 10
SEED ?=
RANDOM_SUITE ?= tests/integration tests/hostile
test-random: install
	for run in $$(seq 1 $(RUNS)); do
		seed=$(if $(SEED),$(SEED),$$(( (RANDOM << 15) | RANDOM )))
		echo "[make test-random] run $$run of $(RUNS): seed $$seed (rerun: make test-random RUNS=1 SEED=$$seed)"
		bash .ci/pytest.sh $(VENV) $(PARALLEL) -q --random-order-bucket=global --random-order-seed=$$seed \
			$(RANDOM_SUITE)
	done

# The distributed stack runs Airflow $(AIRFLOW3_VERSION); on 2.11 its tests are deselected, not skipped.
test-airflow2: install-airflow2
	bash .ci/pytest.sh $(VENV2) $(PARALLEL) $(SLOWEST) -m "not distributed"

$(BUILD_VENV)/.installed: Makefile
	test -x $(BUILD_VENV)/bin/python || $(PYTHON) -m venv $(BUILD_VENV)
	$(BUILD_VENV)/bin/python -m pip install --quiet --disable-pip-version-check uv
	touch $@

# The sdist and the wheel, built by uv (in an isolated build environment with hatchling).
dist: $(BUILD_VENV)/.installed
	rm -rf $(DIST_DIR)
	$(BUILD_VENV)/bin/uv build --quiet --out-dir $(DIST_DIR)
	ls -1 $(DIST_DIR)

# Opt-in: the `system` group against a real Documenso instance. Everything it creates is deleted at the end.
system-test:
	@if [ -z "$${DOCSIGN_SYSTEM_URL:-}" ] || [ -z "$${DOCSIGN_SYSTEM_API_KEY:-}" ]; then
		echo "make system-test needs two environment variables:" >&2
		echo "  DOCSIGN_SYSTEM_URL      the instance's API base URL, e.g. https://sign.example.com/api/v2" >&2
		echo "  DOCSIGN_SYSTEM_API_KEY  a team API key of that instance (api_...)" >&2
		exit 2
	fi
	$(MAKE) --no-print-directory install
	DOCSIGN_RUN_SYSTEM_TESTS=1 bash .ci/pytest.sh $(VENV) -m system tests/system

demo: $(DEMO_VENV)/.installed
	@$(DEMO_VENV)/bin/python scripts/demo.py

# The benchmarks' baselines (documenso-sdk, apache-airflow-providers-http) are the `bench` group.
$(VENV)/.bench-installed: $(VENV)/.installed
	$(VENV)/$(UV_INSTALL) --python $(VENV)/bin/python \
		"apache-airflow==$(AIRFLOW3_VERSION)" -e ".[$(EXTRAS)]" $(GROUPS3) --group bench
	touch $@

bench: $(VENV)/.bench-installed
	$(VENV)/bin/python bench/run_all.py

# Two stacks in a row (Celery + PostgreSQL, then LocalExecutor + SQLite): about 15 minutes on 2 cores.
bench-distributed: install
	$(VENV)/bin/python bench/bench_distributed.py

# 10,000 template rows and 2,000 PDF rows against the real 1,000-a-minute window, then the mapped DAG
# (500 rows, LocalExecutor stack) as baseline: 35-45 minutes, mostly waiting for the rate limit.
bench-bulk: install
	$(VENV)/bin/python bench/bench_bulk.py

# The same pre-flight as `make test` (without Chromium), before the venv: it installs PostgreSQL and
# Redis from Debian as root or with passwordless sudo, or stops in one line naming them and the command.
stack:
	$(PYTHON) scripts/stack.py preflight --install --for "make stack" >/dev/null || exit $$?
	make --no-print-directory install
	$(VENV)/bin/python scripts/stack.py up

stack-down:
	$(VENV)/bin/python scripts/stack.py down

# Re-fetch the pinned chart library (ui/static/vendor/uplot.json) from the npm registry, checked
# against its integrity hash; the files are committed, so neither make demo nor make test needs this.
.PHONY: vendor-charts
vendor-charts: install
	$(VENV)/bin/python scripts/vendor_charts.py

# The guides (docs/*.md, nav in mkdocs.yml) as a static site in site/; strict mode fails on any warning.
.PHONY: docs
docs: install
	NO_MKDOCS_2_WARNING=1 $(VENV)/bin/mkdocs build --strict --site-dir site

clean:
	rm -rf .demo dist site .pytest_cache .mypy_cache .ruff_cache
