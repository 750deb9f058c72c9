#!/usr/bin/env bash
# Run the test suite with a given venv, in a throw-away AIRFLOW_HOME with examples off.
# Usage: bash .ci/pytest.sh VENV [pytest args...]
#
# With DOCSIGN_REPORT_DIR set (as .ci/run sets it), the run also writes its JUnit XML there as
# <venv name>.xml: .ci/report.py reads it for the test count, the wall time against its budget and the
# slowest tests. Parallelism (-n, --dist) is the caller's choice: the Makefile's targets pass it.
set -euo pipefail
venv=${1:?usage: pytest.sh VENV [pytest args]}
shift
home=$(mktemp -d -t docsign-airflow-home-XXXXXX)
trap 'rm -rf "$home"' EXIT
export AIRFLOW_HOME="$home"
export AIRFLOW__CORE__LOAD_EXAMPLES=False
export AIRFLOW__CORE__UNIT_TEST_MODE=True
unset AIRFLOW_CONN_DOCSIGN_DEFAULT || true
# Only `make system-test` may reach a real instance; every other run stays on 127.0.0.1.
if [ "${DOCSIGN_RUN_SYSTEM_TESTS:-}" != 1 ]; then unset DOCSIGN_SYSTEM_URL DOCSIGN_SYSTEM_API_KEY || true; fi
report=()
if [ -n "${DOCSIGN_REPORT_DIR:-}" ]; then
    mkdir -p "$DOCSIGN_REPORT_DIR"
    report=(--junitxml="$DOCSIGN_REPORT_DIR/$(basename "$venv").xml")
fi
"$venv/bin/python" -m pytest -p no:cacheprovider -ra "${report[@]}" "$@"
