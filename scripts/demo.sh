#!/usr/bin/env bash
# make demo: the no-ops etcd cluster end to end (tests/e2e/scenario.py), with readable output and a timeline.
set -euo pipefail
cd "$(dirname "$0")/.."
if [[ $(id -u) -ne 0 ]]; then
        echo "make demo needs root (network namespaces, loop devices, mounts); try: sudo make demo" >&2
        exit 2
fi
export PROTOKUBE_BIN=$(realpath "${1:-build/src/cli/protokube}")
exec /usr/bin/python3 tests/e2e/scenario.py
