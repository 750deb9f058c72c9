# Two commands for users: `make demo` and `make test`. Both install what they need, idempotently,
# on a fresh machine with Python 3.11, make and git (uv is installed into the venv with pip).
SHELL := /bin/bash
.ONESHELL:
.DEFAULT_GOAL := help

PYTHON ?= python3
AIRFLOW3_VERSION ?= 3.3.2
AIRFLOW2_VERSION ?= 2.11.2
VENV ?= .venv
VENV2 ?= .venv-af2
EXTRAS := sandbox,preview,test
# The distributed stack (Celery, PostgreSQL driver, Playwright) is Airflow 3 only.
EXTRAS3 := $(EXTRAS),stack

# Each venv is (re)installed only when pyproject.toml or this Makefile changes.
$(VENV)/.installed: pyproject.toml Makefile
	test -x $(VENV)/bin/python || $(PYTHON) -m venv $(VENV)
	$(VENV)/bin/python -m pip install --quiet --disable-pip-version-check uv
	$(VENV)/bin/uv pip install --python $(VENV)/bin/python --compile-bytecode \
		"apache-airflow==$(AIRFLOW3_VERSION)" -e ".[$(EXTRAS3)]"
	touch $@

$(VENV2)/.installed: pyproject.toml Makefile
	test -x $(VENV2)/bin/python || $(PYTHON) -m venv $(VENV2)
	$(VENV2)/bin/python -m pip install --quiet --disable-pip-version-check uv
	$(VENV2)/bin/uv pip install --python $(VENV2)/bin/python --compile-bytecode \
		"apache-airflow==$(AIRFLOW2_VERSION)" -e ".[$(EXTRAS)]"
	touch $@

.PHONY: help install install-airflow2 lint typecheck test test-airflow2 system-test demo bench clean stack stack-down bench-distributed

help:
	@echo "make demo           run the contract-signing pipeline end to end against the local sandbox"
	@echo "make test           lint, type-check and run the test suite on Airflow $(AIRFLOW3_VERSION)"
	@echo "make test-airflow2  run the same suite on Airflow $(AIRFLOW2_VERSION) (second venv)"
	@echo "make bench          run the benchmarks in bench/ (results in bench/results/)"
	@echo "make system-test    run the system tests against a real Documenso (needs DOCSIGN_SYSTEM_URL and"
	@echo "                    DOCSIGN_SYSTEM_API_KEY)"
	@echo "make stack          start a distributed Airflow $(AIRFLOW3_VERSION) on 127.0.0.1 (Celery, PostgreSQL, Redis, S3)"
	@echo "make stack-down     stop exactly the processes make stack started"
	@echo "make bench-distributed  the bulk DAG at scale on the stack vs LocalExecutor (bench/results/)"
	@echo "make docs           build the guides under docs/ into site/ (MkDocs, strict: a warning fails)"
	@echo "make install        create .venv (Airflow $(AIRFLOW3_VERSION), the package editable, test tools)"
	@echo "make install-airflow2  create .venv-af2 with Airflow $(AIRFLOW2_VERSION)"
	@echo "make lint           ruff check and ruff format --check"
	@echo "make typecheck      mypy (strict on the package)"
	@echo "make clean          remove .demo/, site/ and the tools' caches"

install: $(VENV)/.installed
install-airflow2: $(VENV2)/.installed

lint: install
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .

typecheck: install
	$(VENV)/bin/mypy

test: lint typecheck
	bash .ci/pytest.sh $(VENV)

# The distributed stack runs Airflow $(AIRFLOW3_VERSION); on 2.11 its tests are deselected, not skipped.
test-airflow2: install-airflow2
	bash .ci/pytest.sh $(VENV2) -m "not distributed"

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

demo: install
	$(VENV)/bin/python scripts/demo.py

# The benchmarks' baselines (documenso-sdk, apache-airflow-providers-http) come with the `bench` extra.
$(VENV)/.bench-installed: $(VENV)/.installed
	$(VENV)/bin/uv pip install --python $(VENV)/bin/python --compile-bytecode \
		"apache-airflow==$(AIRFLOW3_VERSION)" -e ".[$(EXTRAS3),bench]"
	touch $@

bench: $(VENV)/.bench-installed
	$(VENV)/bin/python bench/run_all.py

# Two stacks in a row (Celery + PostgreSQL, then LocalExecutor + SQLite): about 15 minutes on 2 cores.
bench-distributed: install
	$(VENV)/bin/python bench/bench_distributed.py

stack: install
	$(VENV)/bin/python scripts/stack.py up

stack-down:
	$(VENV)/bin/python scripts/stack.py down

# The guides (docs/*.md, nav in mkdocs.yml) as a static site in site/; strict mode fails on any warning.
.PHONY: docs
docs: install
	NO_MKDOCS_2_WARNING=1 $(VENV)/bin/mkdocs build --strict --site-dir site

clean:
	rm -rf .demo site .pytest_cache .mypy_cache .ruff_cache
