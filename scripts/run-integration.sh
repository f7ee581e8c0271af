#!/usr/bin/env bash
# Runs the pytest integration suite with Debian's python (its modules import only under /usr/bin/python3).
set -euo pipefail
cd "$(dirname "$0")/.."
export PROTOKUBE_BIN=${PROTOKUBE_BIN:-$PWD/build/src/cli/protokube}
exec /usr/bin/python3 -m pytest -q -p no:cacheprovider tests/integration "$@"
