#!/usr/bin/env bash
# Regenerates every golden file from the given protokube binary: each golden set has its own script.
set -euo pipefail
cd "$(dirname "$0")/.."
bin=$(realpath "${1:-build/src/cli/protokube}")
for s in scripts/update-golden-*.sh; do
        [[ -x $s ]] && "$s" "$bin"
done
