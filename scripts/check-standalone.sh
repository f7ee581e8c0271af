#!/usr/bin/env bash
# A clone must build and test with nothing beside it: no tracked file may point at a sibling "shared"
# directory of the machine the code was written on (test vectors live in tests/vectors, the style and the
# architecture in docs/). Catches the path written out and meson's form, the two joined with its / operator.
set -euo pipefail
cd "$(dirname "$0")/.."
pattern="\.\.[/]shared|'\.\.'[[:space:]]*/[[:space:]]*'shared'"
if git rev-parse --is-inside-work-tree >/dev/null 2>&1; then
        found=$(git grep -nIE "$pattern" -- . || true)
else
        found=$(grep -rnIE "$pattern" --exclude-dir='build*' --exclude-dir=node_modules --exclude-dir=.git . ||
                true)
fi
if [[ -n $found ]]; then
        echo "check-standalone: these reference a directory outside the repository:"
        echo "$found"
        exit 1
fi
echo "check-standalone: ok"
