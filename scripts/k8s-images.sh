#!/usr/bin/env bash
# Builds the container images protokube's manifests name, from local files (no registry is reachable), into a
# cache outside the repository keyed by a hash of every input; a second run with the same inputs only prints
# the directory. Each image is an OCI layout tarball named by the io.containerd.image.name annotation;
# DIR/images.json lists {name, tar}. Import one with `ctr -a SOCK -n k8s.io images import TAR`
# (tests/k8s/node.py does this for every node).
#
#   scripts/k8s-images.sh [ETCD_IMAGE...]   -> prints the cache directory; the build time on stderr
#                                              (default etcd image: registry.k8s.io/etcd:3.4.13-0)
#   PROTOKUBE_IMAGES_CACHE=DIR                 parent of the cache directories (default /var/cache/protokube)
#
# Images: registry.k8s.io/pause:3.2 (gcc -Os -static of the Kubernetes tree's build/pause/linux/pause.c);
# registry.k8s.io/kube-{apiserver,controller-manager,scheduler,proxy}:v1.20.2 (the static binaries of
# scripts/k8s-binaries.sh at /usr/local/bin/<name> and our /go-runner, tools/go-runner/go-runner.c; kube-proxy
# also gets Debian's legacy iptables); each etcd image: Debian's /usr/bin/etcd at /usr/local/bin/etcd with the
# libraries it links and ld.so. All but pause have a minimal /etc/passwd, /etc/group, /etc/nsswitch.conf
# (files before dns) and /tmp.
set -euo pipefail

top=$(cd "$(dirname "$0")/.." && pwd)
if (($# == 0)); then
        set -- registry.k8s.io/etcd:3.4.13-0
fi
bin=$("$top/scripts/k8s-binaries.sh")
src=$(dirname "$bin")/src/kubernetes-1.20.2
pause_c=$src/build/pause/linux/pause.c
[[ -f $pause_c ]] || {
        echo "k8s-images: no pause source at '$pause_c'" >&2
        exit 1
}
etcd=/usr/bin/etcd
[[ -x $etcd ]] || {
        echo "k8s-images: no '$etcd' (install etcd-server)" >&2
        exit 1
}
etcdctl=/usr/bin/etcdctl # a restore's init container runs it (docs/etcd-restore.md)
[[ -x $etcdctl ]] || {
        echo "k8s-images: no '$etcdctl' (install etcd-client)" >&2
        exit 1
}

# The key: the contents of the sources and scripts, the etcd binary and its libraries, the image names, and
# the identity (size, mtime) of the large Kubernetes binaries (hashing 400 MB on every run costs seconds).
key=$({
        sha256sum "$pause_c" "$top/tools/go-runner/go-runner.c" "$top/scripts/k8s-images.py" "$0" "$etcd" "$etcdctl" /bin/dash
        ldd "$etcd" | awk '$2 == "=>" && $3 ~ /^\// {print $3} $1 ~ /^\// {print $1}' | xargs -r readlink -f | xargs -r sha256sum
        stat -L -c '%n %s %Y' "$bin"/kube-* /usr/sbin/xtables-legacy-multi 2>/dev/null || true
        gcc --version | head -1
        printf '%s\n' "$@"
} | sha256sum | cut -c1-16)
parent=${PROTOKUBE_IMAGES_CACHE:-/var/cache/protokube}
out=$parent/images-$key
if [[ -f $out/images.json ]]; then
        echo "$out"
        exit 0
fi

started=$(date +%s)
mkdir -p "$parent"
exec 9>"$parent/.images-$key.lock"
flock 9
if [[ -f $out/images.json ]]; then # another run built it while we waited
        echo "$out"
        exit 0
fi
work=$(mktemp -d "$parent/.images-$key.XXXXXX")
trap 'rm -rf "$work"' EXIT
gcc -std=gnu11 -Os -static -Wall -Wextra -Werror -o "$work/go-runner" "$top/tools/go-runner/go-runner.c"
# pause.c as upstream builds it (build/pause/Makefile: -Os -Wall -Werror -static, VERSION defined).
gcc -Os -Wall -Werror -static -DVERSION=v3.2-protokube -o "$work/pause" "$pause_c"
args=()
for img in "$@"; do
        args+=(--etcd-image "$img")
done
/usr/bin/python3 "$top/scripts/k8s-images.py" --out "$work/images" --k8s-bin "$bin" \
        --go-runner "$work/go-runner" --pause "$work/pause" --etcd "$etcd" "${args[@]}"
rm -rf "$out"
mv "$work/images" "$out"
echo "k8s-images: built in $(($(date +%s) - started)) s: $(ls "$out" | grep -c '\.tar$') images" >&2
echo "$out"
