#!/usr/bin/env bash
# Fetches etcd 3.5.16 (etcd, etcdctl, etcdutl) from Debian trixie's etcd-server and etcd-client packages into a
# cache outside the repository, once: later runs print the directory and exit. Nothing of trixie is installed
# and the system's apt sources are not touched: a private APT_CONFIG names trixie (and nothing else) for this
# one download, with its own lists and cache, and the packages are unpacked with dpkg-deb -x.
#
#   scripts/etcd-binaries.sh       -> prints the bin directory (after fetching it if absent); the time on stderr
#   scripts/etcd-binaries.sh --dir -> prints the bin directory and exits, fetched or not (for the tests' skips)
#   PROTOKUBE_ETCD35_CACHE=DIR        where the cache lives (default /var/cache/protokube/etcd-3.5.16)
#
# Trixie's etcd is a Go binary linked only against libc (glibc >= 2.34), so it runs on bookworm as it is. The
# cache is keyed by the upstream version, 3.5.16; whichever Debian revision of it trixie offers is fetched
# (the archive keeps only the latest) and named in the cache's source-version file. The binaries are checked
# to report 3.5.16 before the cache is put in place.
set -euo pipefail

UPSTREAM=3.5.16
SUITE=trixie
CACHE=${PROTOKUBE_ETCD35_CACHE:-/var/cache/protokube/etcd-$UPSTREAM}
BIN=$CACHE/bin
WHAT=(etcd etcdctl etcdutl)

if [[ ${1:-} == --dir ]]; then
        echo "$BIN"
        exit 0
elif (($#)); then
        echo "usage: $0 [--dir]" >&2
        exit 2
fi

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
if complete; then # another run fetched it while we waited
        echo "$BIN"
        exit 0
fi

A=$(mktemp -d)
trap 'rm -rf "$A" "$BIN.tmp"' EXIT
mkdir -p "$A/lists/partial" "$A/cache/archives/partial" "$A/etc" "$A/debs"
# the suite's packages only, signed by the archive's keys that bookworm's debian-archive-keyring carries
cat >"$A/etc/$SUITE.sources" <<EOF
Types: deb
URIs: http://deb.debian.org/debian
Suites: $SUITE
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
EOF
# APT::Sandbox::User root: the private directories belong to root, and _apt could not write them
printf 'Dir::Etc::SourceList "/dev/null";\nDir::Etc::SourceParts "%s/etc";\nDir::State::Lists "%s/lists";\nDir::Cache "%s/cache";\nAPT::Sandbox::User "root";\n' \
        "$A" "$A" "$A" >"$A/apt.conf"
APT_CONFIG=$A/apt.conf apt-get update -qq >&2
offered=$(APT_CONFIG=$A/apt.conf apt-cache show etcd-server | awk '/^Version:/ {print $2}')
version=$(grep -E "^$UPSTREAM-" <<<"$offered" | sort -V | tail -n 1 || true)
if [[ -z $version ]]; then
        echo "etcd-binaries: $SUITE offers no etcd-server of upstream $UPSTREAM ($UPSTREAM-*); it offers:" \
                "${offered:-none}" >&2
        exit 1
fi
(cd "$A/debs" && APT_CONFIG=$A/apt.conf apt-get download -qq "etcd-server=$version" "etcd-client=$version" >&2)

rm -rf "$BIN.tmp" "$A/root"
mkdir -p "$BIN.tmp" "$A/root"
for deb in "$A"/debs/*.deb; do
        dpkg-deb -x "$deb" "$A/root"
done
for w in "${WHAT[@]}"; do
        [[ -x $A/root/usr/bin/$w ]] || {
                echo "etcd-binaries: the $version packages have no /usr/bin/$w" >&2
                exit 1
        }
        cp "$A/root/usr/bin/$w" "$BIN.tmp/$w"
done
reported=$("$BIN.tmp/etcd" --version | awk '/^etcd Version:/ {print $3}')
if [[ $reported != "$UPSTREAM" ]]; then
        echo "etcd-binaries: $BIN.tmp/etcd reports '$reported', not $UPSTREAM" >&2
        exit 1
fi
echo "$version" >"$BIN.tmp/source-version"
rm -rf "$BIN"
mv "$BIN.tmp" "$BIN"
echo "etcd-binaries: etcd $reported (Debian $SUITE $version) in $(($(date +%s) - started)) s" >&2
echo "$BIN"
