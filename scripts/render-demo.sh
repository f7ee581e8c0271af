#!/usr/bin/env bash
# Renders the example cluster's control plane (with etcd member a of a,b,c) into demo-out/ and shows it.
set -euo pipefail
cd "$(dirname "$0")/.."
bin=${1:-build/src/cli/protokube}
rm -rf demo-out && mkdir -p demo-out
"$bin" render -c examples/cluster.yaml --out demo-out --etcd-member main=a/a,b,c --etcd-member events=a/a,b,c \
        --etcd-mount main=/mnt/master-vol-main-a --etcd-mount events=/mnt/master-vol-events-a
for f in demo-out/*.manifest; do
        echo "==> $f"
        cat "$f"
done
