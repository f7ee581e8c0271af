#!/usr/bin/env bash
# Installs what protokube needs to build and test, from Debian's archive (and the npm registry for the
# offline manifest checks). Fast when everything is already there: only missing packages are installed.
set -euo pipefail

PACKAGES=(
        # build
        gcc meson ninja-build pkg-config clang-14 libclang-rt-14-dev clang-format-14
        libssl-dev libnghttp2-dev libyaml-dev libjansson-dev libexpat1-dev libblkid-dev libmount-dev
        libsystemd-dev
        # unit tests and oracles
        libcmocka-dev libldns-dev python3-pytest python3-dnspython python3-botocore python3-yaml
        python3-cryptography
        # the real components the integration tests run
        bind9 bind9-dnsutils knot knot-dnsutils etcd-server etcd-client prometheus
        e2fsprogs util-linux fdisk cryptsetup-bin lvm2 mdadm iproute2 procps psmisc curl
        xfsprogs
        # a real master node (tests/k8s/node.py): container runtime, CNI plugins, static go-runner/pause
        containerd runc containernetworking-plugins libc6-dev
        # benchmarks (make bench): massif, binary size, the fsyncs of a pass (figure 1)
        valgrind binutils strace
        # the package (make deb), its man pages and the unit under a real systemd (test_nspawn.py)
        scdoc debhelper dpkg-dev fakeroot lintian debootstrap systemd-container
)

missing=()
for p in "${PACKAGES[@]}"; do
        [[ $p == \#* ]] && continue
        dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ! command -v node >/dev/null || ! command -v npm >/dev/null; then
        missing+=(nodejs npm)
fi
if ((${#missing[@]})); then
        if [[ $(id -u) -ne 0 ]]; then
                echo "install-deps: missing packages (run as root): ${missing[*]}" >&2
                exit 1
        fi
        echo "install-deps: installing ${missing[*]}"
        export DEBIAN_FRONTEND=noninteractive
        apt-get update -qq
        apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

# Packages of Debian that start daemons on install must not keep running outside the tests.
for svc in named bind9 knot etcd prometheus prometheus-node-exporter containerd; do
        if command -v systemctl >/dev/null && systemctl is-active --quiet "$svc" 2>/dev/null; then
                systemctl stop "$svc" || true
        fi
done

# etcd 3.5.16 for the upgrade's tests and images (scripts/etcd-binaries.sh: Debian trixie's etcd-server and
# etcd-client unpacked into a cache, nothing installed): once, then cached.
if [[ $(id -u) -eq 0 ]]; then
        "$(dirname "$0")/etcd-binaries.sh" >/dev/null
fi

# Node packages for the offline manifest checks (versions pinned by tests/k8s/package-lock.json).
top=$(cd "$(dirname "$0")/.." && pwd)
if [[ -f $top/tests/k8s/package.json && ! -d $top/tests/k8s/node_modules ]]; then
        (cd "$top/tests/k8s" && npm ci --no-audit --no-fund --loglevel=error)
fi

# The AWS SigV4 test suite that tests/unit/test-aws-sigv4.c replays (pinned by tests/aws-suite/package-lock.json).
if [[ -f $top/tests/aws-suite/package.json && ! -d $top/tests/aws-suite/node_modules ]]; then
        (cd "$top/tests/aws-suite" && npm ci --no-audit --no-fund --loglevel=error)
fi
