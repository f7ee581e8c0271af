#!/usr/bin/env bash
# Regenerates tests/golden/worker/ (a worker's kubelet files: config.yaml, kubelet.env, bootstrap-kubeconfig)
# through the step's own unit test, from the build the given protokube binary belongs to
# (scripts/update-golden.sh runs every update-golden-*.sh). Review the diff before committing: a golden
# change is a change of what every worker's kubelet runs with.
set -euo pipefail
cd "$(dirname "$0")/.."
bin=$(realpath "${1:-build/src/cli/protokube}")
build=$(dirname "$(dirname "$(dirname "$bin")")")
mkdir -p tests/golden/worker
PROTOKUBE_UPDATE_GOLDEN=1 CMOCKA_TEST_ABORT=0 "$build/tests/unit/test-step-kubelet-boot" > /dev/null
echo "tests/golden/worker: $(ls tests/golden/worker | tr '\n' ' ')"
