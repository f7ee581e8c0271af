#!/usr/bin/env bash
# clang-format 14 over every C file we own; prints the offending files. --fix rewrites them.
set -euo pipefail
cd "$(dirname "$0")/.."
cf=$(command -v clang-format-14 || command -v clang-format)
mapfile -t files < <(git ls-files -co --exclude-standard -- '*.c' '*.h' | grep -v '^tests/k8s/')
if [[ ${1:-} == --fix ]]; then
        "$cf" -i "${files[@]}"
        exit 0
fi
bad=0
for f in "${files[@]}"; do
        if ! "$cf" --dry-run -Werror "$f" >/dev/null 2>&1; then
                echo "check-format: $f is not clang-formatted (run scripts/check-format.sh --fix)"
                bad=1
        fi
done
((bad == 0)) && echo "check-format: ok (${#files[@]} files)"
exit $bad
