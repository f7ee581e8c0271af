#!/usr/bin/env bash
# Builds the Kubernetes 1.20.2 server binaries (and a matching kubectl) from Debian's `kubernetes` source
# package with Debian's Go, into a cache outside the repository, once: later runs print the directory and
# exit. The system's apt sources are not touched (a private APT_CONFIG adds deb-src for the download).
#
#   scripts/k8s-binaries.sh    -> prints the bin directory (after building it if absent); the build time on
#                                 stderr
#   PROTOKUBE_K8S_CACHE=DIR       where the cache lives (default /var/cache/protokube/k8s-<source version>)
#
# The cache is keyed by the Debian source version (1.20.5+really1.20.2-1: upstream 1.20.2). The binaries are
# static (CGO_ENABLED=0). On this machine (2 cores) a cold build took 16 minutes (niced, next to other work).
set -euo pipefail

SOURCE_VERSION=1.20.5+really1.20.2-1 # bookworm's `kubernetes` source package
CACHE=${PROTOKUBE_K8S_CACHE:-/var/cache/protokube/k8s-$SOURCE_VERSION}
BIN=$CACHE/bin
WHAT=(kube-apiserver kube-controller-manager kube-scheduler kubelet kube-proxy kubectl)

complete() {
        local w
        for w in "${WHAT[@]}"; do
                [[ -x $BIN/$w ]] || return 1
        done
}

if complete; then
        echo "$BIN"
        exit 0
fi

started=$(date +%s)
mkdir -p "$CACHE"
exec 9>"$CACHE/.lock"
flock 9
if complete; then # another run built it while we waited
        echo "$BIN"
        exit 0
fi

need=()
for p in golang-go rsync jq dpkg-dev; do
        dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || need+=("$p")
done
if ((${#need[@]})); then
        apt-get install -y --no-install-recommends "${need[@]}" >&2
fi

SRC=$CACHE/src
if [[ ! -d $SRC/kubernetes-1.20.2 ]]; then
        A=$(mktemp -d)
        trap 'rm -rf "$A"' EXIT
        mkdir -p "$A/lists/partial" "$A/cache/archives/partial" "$A/etc"
        sed 's/^Types: deb$/Types: deb deb-src/' /etc/apt/sources.list.d/debian.sources >"$A/etc/debian.sources"
        printf 'Dir::Etc::SourceList "/dev/null";\nDir::Etc::SourceParts "%s/etc";\nDir::State::Lists "%s/lists";\nDir::Cache "%s/cache";\n' \
                "$A" "$A" "$A" >"$A/apt.conf"
        APT_CONFIG=$A/apt.conf apt-get update >&2
        mkdir -p "$SRC.tmp"
        (cd "$SRC.tmp" && APT_CONFIG=$A/apt.conf apt-get source --download-only "kubernetes=$SOURCE_VERSION" >&2)
        (cd "$SRC.tmp" && tar xzf kubernetes_*.orig.tar.gz)
        [[ -d $SRC.tmp/kubernetes-1.20.2 ]] || {
                echo "k8s-binaries: the source package did not unpack to kubernetes-1.20.2" >&2
                exit 1
        }
        rm -rf "$SRC"
        mv "$SRC.tmp" "$SRC"
fi

cd "$SRC/kubernetes-1.20.2"
export GOCACHE=$CACHE/go-cache GOFLAGS=-mod=vendor KUBE_BUILD_PLATFORMS=linux/amd64
mkdir -p "$BIN.tmp"
for w in "${WHAT[@]}"; do
        if [[ ! -x $BIN.tmp/$w ]]; then
                echo "k8s-binaries: building $w" >&2
                make WHAT=cmd/$w >&2
                cp _output/bin/$w "$BIN.tmp/$w.new"
                mv "$BIN.tmp/$w.new" "$BIN.tmp/$w"
        fi
done
"$BIN.tmp/kube-apiserver" --version >&2
rm -rf "$BIN"
mv "$BIN.tmp" "$BIN"
echo "k8s-binaries: built in $(($(date +%s) - started)) s" >&2
echo "$BIN"
