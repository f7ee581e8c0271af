#!/usr/bin/env bash
# Bans functions with unbounded or unchecked behaviour (after curl's scripts/checksrc.pl). Numbers are parsed
# with basic/parse-util.h; children run through posix_spawn with an argv, never a shell.
set -euo pipefail
cd "$(dirname "$0")/.."
banned='\b(sprintf|vsprintf|strcpy|strcat|strncat|gets|atoi|atol|atoll|atof|strtok|system|popen|tmpnam|tempnam|mktemp|alloca|strerror_r|asctime|ctime|gmtime|localtime|inet_addr|inet_ntoa|rand|srand|qsort)[[:space:]]*\('
found=$(grep -rnE "$banned" src tests/unit tests/fuzz --include='*.c' --include='*.h' | grep -v 'banned-ok' || true)
if [[ -n $found ]]; then
        echo "check-banned: banned functions used (see STYLE.md):"
        echo "$found"
        exit 1
fi
echo "check-banned: ok"
