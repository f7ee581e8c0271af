#!/usr/bin/env bash
# A lower layer never includes a higher one: every #include "room/..." in src/ is checked against the
# table in scripts/layers.txt (one line per room: the room, then the rooms it may include). A room missing
# from the table is an error too, so a new room is placed in the layering when it is made.
set -euo pipefail
cd "$(dirname "$0")/.."
declare -A allowed
while read -r room deps; do
        [[ -z $room || $room == \#* ]] && continue
        allowed[$room]=" $room ${deps:-} "
done <scripts/layers.txt

bad=0
for dir in src/*/; do
        room=$(basename "$dir")
        if [[ -z ${allowed[$room]+set} ]]; then
                echo "check-layers: src/$room is not in scripts/layers.txt"
                bad=1
                continue
        fi
        while IFS=: read -r file line text; do
                inc=$(sed -E 's/^[[:space:]]*#[[:space:]]*include[[:space:]]*"([a-z0-9_-]+)\/.*/\1/' <<<"$text")
                [[ $inc == "$text" ]] && continue # not a "room/..." include
                if [[ ${allowed[$room]} != *" $inc "* ]]; then
                        echo "check-layers: $file:$line: '$room' may not include '$inc' ($text)"
                        bad=1
                fi
        done < <(grep -nE '^[[:space:]]*#[[:space:]]*include[[:space:]]*"[a-z0-9_-]+/' "$dir"*.[ch] /dev/null || true)
done
if ((bad)); then
        echo "check-layers: a lower layer includes a higher one (scripts/layers.txt)"
        exit 1
fi
echo "check-layers: ok"
