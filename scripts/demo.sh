#!/usr/bin/env bash
# make demo: the no-ops etcd cluster end to end (tests/e2e/scenario.py), with readable output and a timeline.
# make demo-selfhosted: demo.sh PROTOKUBE selfhosted runs tests/e2e/scenario_selfhosted.py (real masters only).
# make demo-workers: demo.sh PROTOKUBE workers runs tests/e2e/scenario_workers.py (three masters, two workers).
set -euo pipefail
cd "$(dirname "$0")/.."
if [[ $(id -u) -ne 0 ]]; then
        echo "make demo needs root (network namespaces, loop devices, mounts); try: sudo make demo" >&2
        exit 2
fi
export PROTOKUBE_BIN=$(realpath "${1:-build/src/cli/protokube}")
# Real masters (the default; PROTOKUBE_DEMO_REAL=0 runs etcd alone under the small pod runner): the
# Kubernetes 1.20.2 binaries and the images, built from Debian's packages once and cached outside the repository.
if [[ ${PROTOKUBE_DEMO_REAL:-1} != 0 || -n ${2:-} ]]; then
        scripts/k8s-binaries.sh >/dev/null
        scripts/k8s-images.sh registry.k8s.io/etcd:3.4.13-0 >/dev/null
fi
exec /usr/bin/python3 "tests/e2e/scenario${2:+_$2}.py"
