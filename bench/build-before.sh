#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# Builds protokube as it was at a commit, for the "before" column of figure 10 (bench/README.md):
#   bench/build-before.sh REV [DIR]       prints the binary's path on stdout (the build's output on stderr)
# The tree of REV is exported with `git archive` into DIR/src (default /tmp/protokube-before-SHORTREV: no
# worktree, nothing changes in the repository), built with meson (-Dversion=REV) in DIR/build; a second call
# reuses the binary. Then: PROTOKUBE_BIN_BEFORE=$(bench/build-before.sh REV) BENCH_ONLY=10 bench/run.sh
set -eu
if [ $# -lt 1 ] || [ $# -gt 2 ]; then
	echo "usage: bench/build-before.sh REV [DIR]" >&2
	exit 2
fi
root=$(git -C "$(dirname "$0")" rev-parse --show-toplevel)
sha=$(git -C "$root" rev-parse --verify "$1^{commit}")
short=$(git -C "$root" rev-parse --short "$sha")
dir=${2:-/tmp/protokube-before-$short}
bin=$dir/build/src/cli/protokube
if [ ! -x "$bin" ]; then
	rm -rf "$dir/src" "$dir/build"
	mkdir -p "$dir/src"
	git -C "$root" archive "$sha" | tar -x -C "$dir/src"
	meson setup -Dversion="$short" "$dir/build" "$dir/src" >&2
	ninja -C "$dir/build" src/cli/protokube >&2
fi
echo "$bin"
