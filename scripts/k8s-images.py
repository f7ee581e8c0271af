#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""Writes the container images protokube's manifests name, from files on this machine (no registry is
reachable): each an OCI image layout tarball of one uncompressed layer, whose index.json carries the annotation
io.containerd.image.name = the exact NAME:TAG, so `ctr -n k8s.io images import TAR` makes kubelet find it.

    k8s-images.py --out DIR --k8s-bin DIR --go-runner FILE --pause FILE --podnet FILE --etcd-image NAME:TAG[=BINDIR]...

Called by scripts/k8s-images.sh, which builds go-runner and pause and picks the cache directory. Layers are
reproducible (owner root, mtime 0, sorted), so the same inputs give the same digests. Writes DIR/images.json:
[{"name": NAME:TAG, "tar": FILE NAME IN DIR}] for the importer. An etcd image's binaries are --etcd and
--etcdctl, or those of BINDIR (etcd, etcdctl and, when it is there, etcdutl: etcd 3.5's data-dir tool)."""

import argparse
import hashlib
import io
import json
import os
import re
import subprocess
import sys
import tarfile
import tempfile

K8S_VERSION = "v1.20.2"
PAUSE_IMAGE = "registry.k8s.io/pause:3.2"
PODNET_IMAGE = "protokube.test/podnet:1"  # the tests' and demos' workload (tools/podnet/podnet.c)
KUBE = ("kube-apiserver", "kube-controller-manager", "kube-scheduler", "kube-proxy")
PASSWD = "root:x:0:0:root:/root:/sbin/nologin\nnobody:x:65534:65534:nobody:/nonexistent:/sbin/nologin\n"
GROUP = "root:x:0:\nnogroup:x:65534:\n"
PATH_ENV = "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"


def shared_libs(path):
    """The files a dynamically linked ELF loads (ldd), the loader included; [] for a static one."""
    p = subprocess.run(["ldd", path], capture_output=True, text=True, timeout=30)
    if p.returncode != 0 or "not a dynamic executable" in p.stdout + p.stderr:
        return []
    out = []
    for line in p.stdout.splitlines():
        m = re.search(r"(?:=>\s*)?(/\S+)\s+\(0x", line)
        if m:
            out.append(m.group(1))
        elif "not found" in line:
            raise SystemExit(f"k8s-images: {path} needs a library ldd cannot find: {line.strip()}")
    return out


class Rootfs:
    """A root filesystem as {path in image: (kind, source or bytes, mode)}; parents are added on write."""

    def __init__(self):
        self.entries = {}

    def file(self, dest, src, mode=None):
        st = os.stat(src)  # follows symlinks: the image gets the real file at the path that was asked for
        self.entries[dest] = ("file", src, mode if mode is not None else (st.st_mode & 0o7777))

    def text(self, dest, data, mode=0o644):
        self.entries[dest] = ("data", data.encode(), mode)

    def dir(self, dest, mode=0o755):
        self.entries[dest] = ("dir", None, mode)

    def symlink(self, dest, target):
        self.entries[dest] = ("symlink", target, 0o777)

    def elf(self, dest, src):
        """src at dest, plus every shared library it links at the path ldd reports."""
        self.file(dest, src)
        for lib in shared_libs(src):
            self.file(lib, lib)

    def base(self):
        self.text("/etc/passwd", PASSWD)
        self.text("/etc/group", GROUP)
        self.dir("/tmp", 0o1777)
        # glibc without nsswitch.conf asks DNS first: the names protokube publishes are in /etc/hosts.
        self.text("/etc/nsswitch.conf", "hosts: files dns\n")

    def write_layer(self, fileobj):
        dirs = {}
        for dest in self.entries:
            parts = dest.strip("/").split("/")
            for i in range(1, len(parts)):
                dirs.setdefault("/" + "/".join(parts[:i]), 0o755)
        with tarfile.open(fileobj=fileobj, mode="w", format=tarfile.PAX_FORMAT) as tar:
            for dest in sorted(set(dirs) | set(self.entries)):
                kind, src, mode = self.entries.get(dest, ("dir", None, dirs.get(dest)))
                ti = tarfile.TarInfo(dest.lstrip("/"))
                ti.mtime, ti.uid, ti.gid, ti.uname, ti.gname, ti.mode = 0, 0, 0, "", "", mode
                if kind == "dir":
                    ti.type = tarfile.DIRTYPE
                    tar.addfile(ti)
                elif kind == "symlink":
                    ti.type, ti.linkname = tarfile.SYMTYPE, src
                    tar.addfile(ti)
                elif kind == "data":
                    ti.size = len(src)
                    tar.addfile(ti, io.BytesIO(src))
                else:
                    ti.size = os.stat(src).st_size
                    with open(src, "rb") as f:
                        tar.addfile(ti, f)


def sha256_file(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def add_bytes(tar, name, data):
    ti = tarfile.TarInfo(name)
    ti.mtime, ti.mode, ti.size = 0, 0o644, len(data)
    tar.addfile(ti, io.BytesIO(data))


def write_image(out_dir, name, rootfs, entrypoint):
    """OCI image layout tarball for NAME:TAG at out_dir/<safe name>.tar; returns its path."""
    safe = re.sub(r"[^A-Za-z0-9_.-]", "_", name)
    final = os.path.join(out_dir, safe + ".tar")
    with tempfile.NamedTemporaryFile(dir=out_dir, prefix=".layer-", delete=False) as lf:
        layer_path = lf.name
        rootfs.write_layer(lf)
    try:
        layer_digest, layer_size = sha256_file(layer_path), os.stat(layer_path).st_size
        config = json.dumps({
            "architecture": "amd64", "os": "linux",
            "config": {"Entrypoint": entrypoint, "Env": [PATH_ENV], "WorkingDir": "/"},
            "rootfs": {"type": "layers", "diff_ids": ["sha256:" + layer_digest]},
            "history": [{"created_by": "protokube scripts/k8s-images.py"}],
        }, sort_keys=True).encode()
        config_digest = hashlib.sha256(config).hexdigest()
        manifest = json.dumps({
            "schemaVersion": 2, "mediaType": "application/vnd.oci.image.manifest.v1+json",
            "config": {"mediaType": "application/vnd.oci.image.config.v1+json",
                       "digest": "sha256:" + config_digest, "size": len(config)},
            "layers": [{"mediaType": "application/vnd.oci.image.layer.v1.tar",
                        "digest": "sha256:" + layer_digest, "size": layer_size}],
        }, sort_keys=True).encode()
        manifest_digest = hashlib.sha256(manifest).hexdigest()
        index = json.dumps({
            "schemaVersion": 2, "mediaType": "application/vnd.oci.image.index.v1+json",
            "manifests": [{"mediaType": "application/vnd.oci.image.manifest.v1+json",
                           "digest": "sha256:" + manifest_digest, "size": len(manifest),
                           "platform": {"architecture": "amd64", "os": "linux"},
                           "annotations": {"io.containerd.image.name": name,
                                           "org.opencontainers.image.ref.name": name.rsplit(":", 1)[1]}}],
        }, sort_keys=True).encode()
        tmp = final + ".tmp"
        with tarfile.open(tmp, "w", format=tarfile.PAX_FORMAT) as tar:
            add_bytes(tar, "oci-layout", b'{"imageLayoutVersion":"1.0.0"}')
            add_bytes(tar, "index.json", index)
            add_bytes(tar, "blobs/sha256/" + config_digest, config)
            add_bytes(tar, "blobs/sha256/" + manifest_digest, manifest)
            ti = tarfile.TarInfo("blobs/sha256/" + layer_digest)
            ti.mtime, ti.mode, ti.size = 0, 0o644, layer_size
            with open(layer_path, "rb") as f:
                tar.addfile(ti, f)
        os.rename(tmp, final)
    finally:
        os.unlink(layer_path)
    return final


def iptables_files(r):
    """kube-proxy (iptables mode) runs iptables, iptables-save and iptables-restore (and ip6tables): Debian's
    legacy xtables multi-binary with its extensions, so the rules land in the pod's network namespace."""
    multi = "/usr/sbin/xtables-legacy-multi"
    if not os.path.exists(multi):
        return False
    r.elf(multi, multi)
    for tool in ("iptables", "iptables-save", "iptables-restore", "ip6tables", "ip6tables-save",
                 "ip6tables-restore"):
        r.symlink("/usr/sbin/" + tool, "xtables-legacy-multi")
    ext = "/usr/lib/x86_64-linux-gnu/xtables"
    if os.path.isdir(ext):
        for so in sorted(os.listdir(ext)):
            if so.endswith(".so"):
                r.elf(os.path.join(ext, so), os.path.join(ext, so))
    r.dir("/run", 0o755)
    return True


def kubelet_image(a):
    """The managed kubelet (docs/kubelet-handoff.md): the kubelet, dash for the pod's command (it reads the
    node's kubelet.env) and readiness probe, what the kubelet runs itself (mount and umount for its volumes,
    du and find for their usage, iptables for its KUBE-MARK chains)."""
    src = os.path.join(a.k8s_bin, "kubelet")
    if not os.access(src, os.X_OK):
        raise SystemExit(f"k8s-images: no executable '{src}'")
    r = Rootfs()
    r.base()
    r.elf("/usr/local/bin/kubelet", src)
    r.elf("/bin/sh", "/bin/dash")
    for tool in ("/bin/mount", "/bin/umount", "/usr/bin/du", "/usr/bin/find"):
        r.elf(tool, tool)
    iptables_files(r)
    name = f"registry.k8s.io/kubelet:{K8S_VERSION}"
    return name, write_image(a.out, name, r, ["/usr/local/bin/kubelet"])


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", required=True)
    ap.add_argument("--k8s-bin", required=True)
    ap.add_argument("--go-runner", required=True)
    ap.add_argument("--pause", required=True)
    ap.add_argument("--podnet", required=True)
    ap.add_argument("--etcd", default="/usr/bin/etcd")
    ap.add_argument("--etcdctl", default="/usr/bin/etcdctl")
    ap.add_argument("--etcd-image", action="append", default=[])
    a = ap.parse_args()
    etcds = []
    for spec in a.etcd_image or ["registry.k8s.io/etcd:3.4.13-0"]:
        img, _, bindir = spec.partition("=")
        if not re.fullmatch(r"[a-z0-9.-]+(/[a-z0-9._-]+)+:[A-Za-z0-9._-]+", img):
            raise SystemExit(f"k8s-images: etcd image '{img}' is not NAME:TAG")
        if bindir:
            tools = {t: os.path.join(bindir, t) for t in ("etcd", "etcdctl", "etcdutl")}
            if not os.access(tools["etcdutl"], os.X_OK):
                del tools["etcdutl"]
        else:
            tools = {"etcd": a.etcd, "etcdctl": a.etcdctl}
        for t, path in tools.items():
            if not os.access(path, os.X_OK):
                raise SystemExit(f"k8s-images: no executable '{path}' for {img}'s {t}")
        etcds.append((img, tools))
    os.makedirs(a.out, exist_ok=True)
    made = []

    r = Rootfs()
    r.file("/pause", a.pause, 0o755)
    made.append((PAUSE_IMAGE, write_image(a.out, PAUSE_IMAGE, r, ["/pause"])))

    r = Rootfs()
    r.file("/podnet", a.podnet, 0o755)
    made.append((PODNET_IMAGE, write_image(a.out, PODNET_IMAGE, r, ["/podnet"])))

    for kube in KUBE:
        src = os.path.join(a.k8s_bin, kube)
        if not os.access(src, os.X_OK):
            raise SystemExit(f"k8s-images: no executable '{src}'")
        r = Rootfs()
        r.base()
        r.file("/go-runner", a.go_runner, 0o755)
        r.elf("/usr/local/bin/" + kube, src)
        if kube == "kube-proxy" and not iptables_files(r):
            print("k8s-images: no /usr/sbin/xtables-legacy-multi: the kube-proxy image has no iptables",
                  file=sys.stderr)
        name = f"registry.k8s.io/{kube}:{K8S_VERSION}"
        made.append((name, write_image(a.out, name, r, ["/usr/local/bin/" + kube])))

    made.append(kubelet_image(a))

    for name, tools in etcds:
        r = Rootfs()
        r.base()
        # a restore's init container (docs/etcd-restore.md) runs the image's own etcdctl (etcdutl for 3.5)
        # from a shell script, as registry.k8s.io/etcd has them, with dash and the tools the script calls
        for t, path in tools.items():
            r.elf("/usr/local/bin/" + t, path)
        r.elf("/bin/sh", "/bin/dash")
        for tool in ("rm", "mv", "rmdir"):
            r.elf("/bin/" + tool, "/bin/" + tool)
        r.dir("/var/etcd", 0o700)
        made.append((name, write_image(a.out, name, r, ["/usr/local/bin/etcd"])))

    with open(os.path.join(a.out, "images.json.tmp"), "w") as f:
        json.dump([{"name": n, "tar": os.path.basename(t)} for n, t in made], f, indent=1)
    os.rename(os.path.join(a.out, "images.json.tmp"), os.path.join(a.out, "images.json"))


if __name__ == "__main__":
    main()
