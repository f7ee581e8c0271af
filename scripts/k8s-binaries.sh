#!/usr/bin/env bash
# Builds the Kubernetes 1.20.2 server binaries (and a matching kubectl and kubeadm) from Debian's `kubernetes` source
# package with Debian's Go, into a cache outside the repository, once: later runs print the directory and
# exit. The system's apt sources are not touched (a private APT_CONFIG adds deb-src for the download).
#
#   scripts/k8s-binaries.sh       -> prints the bin directory (after building it if absent); the build time
#                                    on stderr
#   scripts/k8s-binaries.sh --dir -> prints the bin directory and exits, built or not (for the tests' skips)
#   PROTOKUBE_K8S_CACHE=DIR          where the cache lives (default /var/cache/protokube/k8s-1.20.2)
#
# The cache is keyed by the upstream version, 1.20.2, which is what is built: the binaries come from the
# source package's orig tarball (upstream 1.20.2 with vendor/), without Debian's patches. Those patch only
# kubectl's printing (1.1+deb12u1: CVE-2021-25743) and the Debian packaging, which builds kubernetes-client
# alone. Whichever Debian revision of it bookworm's archive offers is downloaded: the archive keeps only the
# latest (1.20.5+really1.20.2-1 was replaced by -1.1+deb12u1 in a point release, and a script pinned to the
# old revision could no longer download anything). The revision used is kept in the cache's source-version
# file. The binaries are static (CGO_ENABLED=0). On this machine (2 cores) a cold build took 16 minutes.
set -euo pipefail

UPSTREAM=1.20.2
DEBIAN_UPSTREAM=1.20.5+really$UPSTREAM # how Debian's versions of this source spell the upstream version
CACHE=${PROTOKUBE_K8S_CACHE:-/var/cache/protokube/k8s-$UPSTREAM}
BIN=$CACHE/bin

if [[ ${1:-} == --dir ]]; then
        echo "$BIN"
        exit 0
elif (($#)); then
        echo "usage: $0 [--dir]" >&2
        exit 2
fi
# kubeadm: the peer of the benchmarks (bench/), built from the same source and Go as the server binaries
WHAT=(kube-apiserver kube-controller-manager kube-scheduler kubelet kube-proxy kubectl kubeadm)
# kubeadm is built with two changes, both as a Go build overlay (the source stays as shipped):
# - Debian's github.com/modern-go/reflect2 1.0.2 in place of the vendored 1.0.1, which panics under Go >= 1.18
#   (a nil dereference in frozenConfig.Type2: `kubeadm init`'s kubelet-start and `kubeadm config print` crash);
# - kubeadm's own fix from its release-1.20 branch (kubernetes PR 102704, in 1.20.8): the etcd static pod no
#   longer requests ephemeral storage. A kubelet that has just bootstrapped may not know its node's storage yet
#   and refuses the pod for good (kubernetes issue 99305): `kubeadm join --control-plane` then waits for an
#   etcd member that never starts. It did so here on the third master.
# This file marks a kubeadm built so: a cache from before it rebuilds kubeadm alone, once.
KUBEADM_STAMP=kubeadm.build-2
REFLECT2_DEB=/usr/share/gocode/src/github.com/modern-go/reflect2
ETCD_POD=cmd/kubeadm/app/phases/etcd/local.go
ETCD_POD_EPHEMERAL='v1.ResourceEphemeralStorage: resource.MustParse("100Mi"),'

complete() {
        local w
        for w in "${WHAT[@]}" "$KUBEADM_STAMP"; do
                [[ -e $BIN/$w ]] || return 1
        done
}

# The overlay (go help build, -overlay) of kubeadm's two changes (above), under both names the build sees the
# source by: the tree and hack/'s GOPATH link to it. Writes the patched etcd pod source next to the overlay.
kubeadm_overlay() {
        local out=$1 tree f first=1
        local trees=("$PWD" "$PWD/_output/local/go/src/k8s.io/kubernetes")
        local etcd_pod=${out%.json}-etcd-local.go
        grep -vF -- "$ETCD_POD_EPHEMERAL" "$ETCD_POD" >"$etcd_pod"
        if (($(wc -l <"$ETCD_POD") - $(wc -l <"$etcd_pod") != 1)); then
                echo "k8s-binaries: $ETCD_POD does not have the one line '$ETCD_POD_EPHEMERAL' to remove" >&2
                exit 1
        fi
        {
                printf '{"Replace": {'
                for tree in "${trees[@]}"; do
                        for f in "$tree"/vendor/github.com/modern-go/reflect2/*.go "$tree"/vendor/github.com/modern-go/reflect2/*.s; do
                                ((first)) || printf ','
                                first=0
                                printf '\n"%s": ""' "$f"
                        done
                        for f in "$REFLECT2_DEB"/*.go "$REFLECT2_DEB"/*.s; do
                                [[ $f == *_test.go ]] && continue
                                printf ',\n"%s/vendor/github.com/modern-go/reflect2/%s": "%s"' "$tree" "${f##*/}" "$f"
                        done
                        printf ',\n"%s/%s": "%s"' "$tree" "$ETCD_POD" "$etcd_pod"
                done
                printf '}}\n'
        } >"$out"
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
for p in golang-go rsync jq dpkg-dev golang-github-modern-go-reflect2-dev; do
        dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || need+=("$p")
done
if ((${#need[@]})); then
        apt-get install -y --no-install-recommends "${need[@]}" >&2
fi

SRC=$CACHE/src
if [[ ! -d $SRC/kubernetes-$UPSTREAM ]]; then
        A=$(mktemp -d)
        trap 'rm -rf "$A"' EXIT
        mkdir -p "$A/lists/partial" "$A/cache/archives/partial" "$A/etc"
        sed 's/^Types: deb$/Types: deb deb-src/' /etc/apt/sources.list.d/debian.sources >"$A/etc/debian.sources"
        printf 'Dir::Etc::SourceList "/dev/null";\nDir::Etc::SourceParts "%s/etc";\nDir::State::Lists "%s/lists";\nDir::Cache "%s/cache";\n' \
                "$A" "$A" "$A" >"$A/apt.conf"
        APT_CONFIG=$A/apt.conf apt-get update >&2
        offered=$(APT_CONFIG=$A/apt.conf apt-cache showsrc kubernetes | awk '/^Version:/ {print $2}')
        version=$(grep -F -- "$DEBIAN_UPSTREAM-" <<<"$offered" | sort -V | tail -n 1 || true)
        if [[ -z $version ]]; then
                echo "k8s-binaries: the archive offers no 'kubernetes' source of upstream $UPSTREAM" \
                        "($DEBIAN_UPSTREAM-*); it offers: ${offered:-none}" >&2
                exit 1
        fi
        rm -rf "$SRC.tmp"
        mkdir -p "$SRC.tmp"
        (cd "$SRC.tmp" && APT_CONFIG=$A/apt.conf apt-get source --download-only "kubernetes=$version" >&2)
        (cd "$SRC.tmp" && tar xzf "kubernetes_$DEBIAN_UPSTREAM.orig.tar.gz")
        [[ -d $SRC.tmp/kubernetes-$UPSTREAM ]] || {
                echo "k8s-binaries: kubernetes_$DEBIAN_UPSTREAM.orig.tar.gz did not unpack to kubernetes-$UPSTREAM" >&2
                exit 1
        }
        echo "$version" >"$SRC.tmp/source-version"
        rm -rf "$SRC"
        mv "$SRC.tmp" "$SRC"
fi

cd "$SRC/kubernetes-$UPSTREAM"
export GOCACHE=$CACHE/go-cache GOFLAGS=-mod=vendor KUBE_BUILD_PLATFORMS=linux/amd64
mkdir -p "$BIN.tmp"
if [[ -d $BIN ]]; then # a cache that lacks only a binary added since: build that one alone
        for w in "${WHAT[@]}" "$KUBEADM_STAMP" source-version; do
                [[ $w == kubeadm && ! -e $BIN/$KUBEADM_STAMP ]] && continue
                [[ ! -e $BIN/$w || -e $BIN.tmp/$w ]] || cp -a "$BIN/$w" "$BIN.tmp/$w"
        done
fi
for w in "${WHAT[@]}"; do
        if [[ ! -x $BIN.tmp/$w ]]; then
                echo "k8s-binaries: building $w" >&2
                what=cmd/$w
                if [[ $w == kubeadm ]]; then
                        [[ -d $REFLECT2_DEB ]] || {
                                echo "k8s-binaries: $REFLECT2_DEB is missing (golang-github-modern-go-reflect2-dev)" >&2
                                exit 1
                        }
                        kubeadm_overlay "$CACHE/kubeadm-overlay.json"
                        # build.sh passes arguments that start with a dash to go build (GOFLAGS would not do:
                        # hack/ takes build tags out of it with a pattern that keeps any other flag)
                        what="$what -overlay=$CACHE/kubeadm-overlay.json"
                fi
                make WHAT="$what" >&2
                cp _output/bin/$w "$BIN.tmp/$w.new"
                mv "$BIN.tmp/$w.new" "$BIN.tmp/$w"
                [[ $w != kubeadm ]] || echo "reflect2 $(dpkg-query -W -f='${Version}' golang-github-modern-go-reflect2-dev); etcd pod without ephemeral-storage" >"$BIN.tmp/$KUBEADM_STAMP"
        fi
done
# the crash the overlay avoids: a kubeadm that cannot print its defaults is not kept
"$BIN.tmp/kubeadm" config print init-defaults >/dev/null
"$BIN.tmp/kube-apiserver" --version >&2
[[ ! -f $SRC/source-version ]] || cp "$SRC/source-version" "$BIN.tmp/source-version"
rm -rf "$BIN"
mv "$BIN.tmp" "$BIN"
echo "k8s-binaries: built in $(($(date +%s) - started)) s" >&2
echo "$BIN"
