#!/usr/bin/env bash
# Runs the pytest integration suite with Debian's python (its modules import only under /usr/bin/python3).
set -euo pipefail
cd "$(dirname "$0")/.."
export PROTOKUBE_BIN=${PROTOKUBE_BIN:-$PWD/build/src/cli/protokube}
# --durations: the CI log names the slowest tests (the warm run is kept under 30 minutes)
exec /usr/bin/python3 -m pytest -q -p no:cacheprovider --durations=25 tests/integration "$@"
