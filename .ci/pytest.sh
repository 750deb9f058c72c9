#!/usr/bin/env bash
# Run the test suite with a given venv, in a throw-away AIRFLOW_HOME with examples off.
# Usage: bash .ci/pytest.sh VENV [pytest args...]
set -euo pipefail
venv=${1:?usage: pytest.sh VENV [pytest args]}
shift
home=$(mktemp -d -t docsign-airflow-home-XXXXXX)
trap 'rm -rf "$home"' EXIT
export AIRFLOW_HOME="$home"
export AIRFLOW__CORE__LOAD_EXAMPLES=False
export AIRFLOW__CORE__UNIT_TEST_MODE=True
unset AIRFLOW_CONN_DOCSIGN_DEFAULT || true
"$venv/bin/python" -m pytest -p no:cacheprovider -ra "$@"
