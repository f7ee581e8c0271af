#!/bin/sh
# The version of a checkout, for meson's vcs_tag: the tag (v1.2.3 -> 1.2.3) when HEAD has one in its
# history, else PROJECT_VERSION-gHASH; -dirty with uncommitted changes. Fails outside a git checkout, and
# meson then uses the project version.
# usage: version.sh SOURCE_ROOT PROJECT_VERSION
set -eu
src=$1
project=$2
git -C "$src" rev-parse --git-dir >/dev/null 2>&1 || exit 1
if d=$(git -C "$src" describe --tags --dirty --match 'v[0-9]*' 2>/dev/null); then
        echo "${d#v}"
else
        echo "$project-g$(git -C "$src" describe --always --dirty --abbrev=7)"
fi
