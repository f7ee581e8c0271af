#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# Runs every benchmark against the given protokube binary and prints the table (bench/README.md).
#   bench/run.sh [--results] [BINARY]     (make bench: bench/run.sh build/src/cli/protokube)
# --results or BENCH_RESULTS=1 also writes bench/results.md. Needs root (loop devices, mounts, namespaces).
# PROTOKUBE_BIN_BEFORE=OLD-BINARY adds a "before" column to figure 10 (bench/build-before.sh REV builds one).
# Debian's python modules (dnspython, botocore) import only under /usr/bin/python3.
set -eu
here=$(dirname "$0")
if [ "$(id -u)" != 0 ]; then
	echo "bench: needs root (loop devices, mounts, network namespaces)" >&2
	exit 2
fi
results=
bin=
for a in "$@"; do
	case "$a" in
	--results) results=--results ;;
	-*) echo "usage: bench/run.sh [--results] [BINARY]" >&2; exit 2 ;;
	*) bin=$a ;;
	esac
done
exec /usr/bin/python3 "$here/bench.py" $results ${bin:+"$bin"}
