#!/usr/bin/env bash
# Regenerates tests/golden/spec/*.expected: the exact stderr of `protokube validate -c` on each input, run from
# the repository root so the file names in the messages are stable. Review the diff before committing it.
# usage: scripts/update-golden-spec.sh [BINARY]
set -euo pipefail
cd "$(dirname "$0")/.."
bin=$(realpath "${1:-build/src/cli/protokube}")
n=0
for input in tests/golden/spec/*.yaml; do
        expected=${input%.yaml}.expected
        rc=0
        env -u PROTOKUBE_CONFIG "$bin" validate -c "$input" 2>"$expected.tmp" >/dev/null || rc=$?
        # A valid file prints nothing on stderr and exits 0; an invalid one exits 1. Anything else is a bug
        # (crash, sanitizer report, usage error) and must not become a golden file.
        if { [[ $rc -eq 0 ]] && [[ -s $expected.tmp ]]; } || { [[ $rc -ne 0 ]] && [[ $rc -ne 1 ]]; } ||
                { [[ $rc -eq 1 ]] && [[ ! -s $expected.tmp ]]; }; then
                echo "update-golden-spec: $input: unexpected exit $rc" >&2
                cat "$expected.tmp" >&2
                rm -f "$expected.tmp"
                exit 1
        fi
        mv "$expected.tmp" "$expected"
        n=$((n + 1))
done
echo "update-golden-spec: $n cases written"
