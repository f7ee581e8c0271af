#!/usr/bin/env bash
# Builds the container images protokube's manifests name, from local files (no registry is reachable), into a
# cache outside the repository keyed by a hash of every input; a second run with the same inputs only prints
# the directory. Each image is an OCI layout tarball named by the io.containerd.image.name annotation;
# DIR/images.json lists {name, tar}. Import one with `ctr -a SOCK -n k8s.io images import TAR`
# (tests/k8s/node.py does this for every node).
#
#   scripts/k8s-images.sh [ETCD_IMAGE...]   -> prints the cache directory; the build time on stderr
#                                              (default etcd images: registry.k8s.io/etcd:3.4.13-0 and
#                                              registry.k8s.io/etcd:3.5.16-0)
#   PROTOKUBE_IMAGES_CACHE=DIR                 parent of the cache directories (default /var/cache/protokube)
#
# Images: registry.k8s.io/pause:3.2 (gcc -Os -static of the Kubernetes tree's build/pause/linux/pause.c);
# protokube.test/podnet:1, the tests' and demos' workload (tools/podnet/podnet.c, static: a server that says
# its pod's name, and a client);
# registry.k8s.io/kubelet:v1.20.2 (the managed kubelet: the binary, dash, mount, umount, du, find, iptables);
# registry.k8s.io/kube-{apiserver,controller-manager,scheduler,proxy}:v1.20.2 (the static binaries of
# scripts/k8s-binaries.sh at /usr/local/bin/<name> and our /go-runner, tools/go-runner/go-runner.c; kube-proxy
# also gets Debian's legacy iptables); each etcd image: an etcd at /usr/local/bin/etcd with the libraries it
# links and ld.so, and its etcdctl (and etcdutl where the version has one) beside it. The tag says which etcd:
# 3.5.16-N is Debian trixie's 3.5.16 (scripts/etcd-binaries.sh fetches it), any other tag this system's
# /usr/bin/etcd (bookworm's etcd-server, 3.4; its image keeps kops' tag 3.4.13-0). All but pause have a minimal /etc/passwd, /etc/group, /etc/nsswitch.conf
# (files before dns) and /tmp.
set -euo pipefail

top=$(cd "$(dirname "$0")/.." && pwd)
if (($# == 0)); then
        set -- registry.k8s.io/etcd:3.4.13-0 registry.k8s.io/etcd:3.5.16-0
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
# Each etcd image's binaries: NAME=DIR for k8s-images.py (DIR holds etcd, etcdctl and maybe etcdutl), or NAME
# alone for this system's etcd. Only the tags of the versions protokube knows (docs/etcd-versions.md) are
# mapped; a 3.5 tag other than 3.5.16 has no binaries here and is refused rather than built from 3.4.
etcd_specs=()
etcd_bins=("$etcd" "$etcdctl")
for img in "$@"; do
        tag=${img##*:}
        case $tag in
        3.5.16 | 3.5.16-*)
                dir=$("$top/scripts/etcd-binaries.sh")
                etcd_specs+=("$img=$dir")
                etcd_bins+=("$dir/etcd" "$dir/etcdctl" "$dir/etcdutl")
                ;;
        3.5* | 3.6* | 3.7*)
                echo "k8s-images: no etcd binaries for '$img' (this machine has 3.4 and 3.5.16)" >&2
                exit 1
                ;;
        *) etcd_specs+=("$img") ;;
        esac
done

# The key: the contents of the sources and scripts, the etcd binaries and their libraries, the image names, and
# the identity (size, mtime) of the large Kubernetes binaries (hashing 400 MB on every run costs seconds).
key=$({
        # contents only: the same files reached by another path (the script run as ./scripts/... or by its
        # absolute path) are the same key
        sha256sum "$pause_c" "$top/tools/go-runner/go-runner.c" "$top/tools/podnet/podnet.c" "$top/scripts/k8s-images.py" "$0" "${etcd_bins[@]}" /bin/dash | cut -d' ' -f1
        ldd "${etcd_bins[@]}" | awk '$2 == "=>" && $3 ~ /^\// {print $3} $1 ~ /^\// && $1 !~ /:$/ {print $1}' | sort -u | xargs -r readlink -f | xargs -r sha256sum
        stat -L -c '%n %s %Y' "$bin"/kube-* "$bin"/kubelet /usr/sbin/xtables-legacy-multi /bin/mount /bin/umount \
                /usr/bin/du /usr/bin/find 2>/dev/null || true
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
gcc -std=gnu11 -Os -static -Wall -Wextra -Werror -o "$work/podnet" "$top/tools/podnet/podnet.c"
# pause.c as upstream builds it (build/pause/Makefile: -Os -Wall -Werror -static, VERSION defined).
gcc -Os -Wall -Werror -static -DVERSION=v3.2-protokube -o "$work/pause" "$pause_c"
args=()
for spec in "${etcd_specs[@]}"; do
        args+=(--etcd-image "$spec")
done
/usr/bin/python3 "$top/scripts/k8s-images.py" --out "$work/images" --k8s-bin "$bin" \
        --go-runner "$work/go-runner" --pause "$work/pause" --podnet "$work/podnet" --etcd "$etcd" "${args[@]}"
rm -rf "$out"
mv "$work/images" "$out"
echo "k8s-images: built in $(($(date +%s) - started)) s: $(ls "$out" | grep -c '\.tar$') images" >&2
echo "$out"
