# SPDX-License-Identifier: Apache-2.0
"""Figure 9: the certificates of a master. Each run: a fresh pool (two blank volumes, as figure 1) and a
fresh state store (file://), then one `protokube once` with stateStore and pki.dir set. Timed, from its
PROTOKUBE_TRACE stage times: the certificates steps of that pass (two: the second member's pairs come after
the first member's manifest), which create the keystore (the cluster CA, per etcd cluster its peer and client
CAs, the front-proxy CA: ECDSA P-256; the service-account key: RSA 2048) and issue every leaf this master
needs (ECDSA P-256), each written as a pair on the node. Side by side, untimed setup aside: a shell script
that makes the same set with the openssl tool (`openssl req -x509` per CA, `openssl genpkey` for the RSA key,
and per leaf `openssl req -new` + `openssl x509 -req` with the same subject, SANs and usages, read back from
what protokube issued), spawn -> exit of bash. The ratio is the median of per-run ratios (< 1: protokube is
faster).

And the peer an operator would pick instead (issue 44, figure 4): kubeadm 1.20.2, built from the same Debian
source as the server binaries (scripts/k8s-binaries.sh), `kubeadm init phase certs all` + `kubeadm init phase
kubeconfig all` (its CAs, the service-account key, its leaves and the four kubeconfigs with their client
certificates), spawn -> exit of both, in a network namespace of its own (it never reaches out: the version is
given). kubeadm's keys are RSA 2048; so the like-for-like row runs protokube with `pki.keyType: rsa-2048` too
(its pass: fresh store and pool, as above)."""
import glob
import os
import shlex
import subprocess
import time

import common

RUNS = common.env_int("BENCH_CERTS_RUNS", 5)


def leaves(pki_dir):
    """(path, subject, SAN text, EKU text, issuer CN) of every leaf pair under pki_dir."""
    out = []
    for crt in sorted(glob.glob(os.path.join(pki_dir, "*", "*.crt"))):
        if not os.path.exists(crt[:-4] + ".key"):
            continue  # a CA bundle, not a pair
        p = common.run(["openssl", "x509", "-in", crt, "-noout", "-subject", "-issuer", "-nameopt", "RFC2253",
                        "-ext", "subjectAltName,extendedKeyUsage"])
        lines = [ln.strip() for ln in p.stdout.splitlines()]
        subject = next(ln for ln in lines if ln.startswith("subject="))[len("subject="):]
        issuer = next(ln for ln in lines if ln.startswith("issuer="))[len("issuer="):]
        san = eku = ""
        for i, ln in enumerate(lines):
            if ln.startswith("X509v3 Subject Alternative Name"):
                san = lines[i + 1].replace("IP Address:", "IP:")
            if ln.startswith("X509v3 Extended Key Usage"):
                eku = lines[i + 1].replace("TLS Web Server Authentication", "serverAuth").replace(
                    "TLS Web Client Authentication", "clientAuth")
        out.append((crt, subject, san, eku, issuer.split("CN=")[-1].split(",")[0]))
    return out


def subj_arg(rfc2253):
    """RFC 2253 (most specific first) -> openssl's -subj form."""
    return "/" + "/".join(reversed([p.strip() for p in rfc2253.split(",")]))


def openssl_script(wd, cas, leafs):
    d = wd
    lines = ["set -e", f"cd {shlex.quote(d)}"]
    ec = "-newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes"
    for name in cas:
        lines.append(f"openssl req -x509 -new {ec} -keyout {name}.key -out {name}.crt -subj /CN={name} "
                     "-days 3650 -addext basicConstraints=critical,CA:TRUE "
                     "-addext keyUsage=critical,keyCertSign,cRLSign 2>/dev/null")
    lines.append("openssl genpkey -algorithm RSA -pkeyopt rsa_keygen_bits:2048 -out sa.key 2>/dev/null")
    lines.append("openssl pkey -in sa.key -pubout -out sa.pub")
    for i, (_, subject, san, eku, issuer) in enumerate(leafs):
        ext = os.path.join(d, f"l{i}.ext")
        with open(ext, "w") as f:
            f.write("keyUsage=critical,digitalSignature\nauthorityKeyIdentifier=keyid\n")
            if san:
                f.write(f"subjectAltName={san.replace(' ', '')}\n")
            if eku:
                f.write(f"extendedKeyUsage={eku.replace(' ', '')}\n")
        lines.append(f"openssl req -new {ec} -keyout l{i}.key -out l{i}.csr -subj {shlex.quote(subj_arg(subject))} "
                     "2>/dev/null")
        lines.append(f"openssl x509 -req -in l{i}.csr -CA {issuer}.crt -CAkey {issuer}.key -set_serial "
                     f"0x$(openssl rand -hex 16) -days 365 -extfile l{i}.ext -out l{i}.crt 2>/dev/null")
    path = os.path.join(d, "issue.sh")
    with open(path, "w") as f:
        f.write("\n".join(lines) + "\n")
    return path


def kubeadm_bin():
    """kubeadm from the Kubernetes cache (built once by scripts/k8s-binaries.sh)."""
    out = common.run([os.path.join(common.ROOT, "scripts", "k8s-binaries.sh")], timeout=3600).stdout
    return os.path.join(out.strip().splitlines()[-1], "kubeadm")


def kubeadm_run(wd, i, kubeadm):
    """kubeadm's certificates and kubeconfigs of one control-plane node, timed spawn -> exit: (seconds,
    certificates written)."""
    d = wd.sub(f"kubeadm{i}")
    common_args = ["--kubernetes-version", "v1.20.2", "--apiserver-advertise-address", "192.0.2.11",
                   "--control-plane-endpoint", f"api.internal.certs{i}.k8s.test"]
    t0 = time.monotonic()
    for phase in (["certs", "all", "--cert-dir", os.path.join(d, "pki"),
                   "--apiserver-cert-extra-sans", f"api.certs{i}.k8s.test"],
                  ["kubeconfig", "all", "--cert-dir", os.path.join(d, "pki"),
                   "--kubeconfig-dir", os.path.join(d, "kubeconfig")]):
        p = subprocess.run(["unshare", "--net", kubeadm, "init", "phase", *phase, *common_args],
                           capture_output=True, text=True, timeout=300)
        if p.returncode != 0:
            raise RuntimeError(f"kubeadm init phase {phase[0]} exited {p.returncode}: {p.stderr[-2000:]}")
    secs = time.monotonic() - t0
    certs = len(glob.glob(os.path.join(d, "pki", "**", "*.crt"), recursive=True))
    return secs, certs + len(glob.glob(os.path.join(d, "kubeconfig", "*.conf")))


def one_run(wd, bind, i, key_type=None, kubeadm=None):
    cluster = f"certs{i}{key_type or ''}.k8s.test"
    base = wd.sub(f"run{i}{key_type or ''}")
    pool, mnt, man, store, pki = (os.path.join(base, n) for n in ("pool", "mnt", "manifests", "store", "pki"))
    for d in (mnt, man, store):
        os.makedirs(d, exist_ok=True)
    spec = os.path.join(base, "cluster.yaml")
    with open(spec, "w") as f:
        f.write(common.spec_text(cluster, common.rfc2136_block(bind)).replace(
            "  kubernetesVersion:", f"  stateStore: file://{store}\n  pki:\n    dir: {pki}\n"
            + (f"    keyType: {key_type}\n    serviceAccountKeyType: rsa-2048\n" if key_type else "")
            + "  kubernetesVersion:"))
    common.create_pool(pool, cluster, size="64M")
    argv = [common.protokube_bin(), "-c", spec, "--log-format", "json", "once", "--node-name", "a", "--zone",
            "z1", "--internal-ip", "127.0.0.11", "--external-ip", "127.0.0.12", "--pool", pool, "--manifest-dir",
            man, "--mount-root", mnt, "--config-dir", os.path.join(os.path.dirname(man), "lib"),
            "--kubelet-dir", os.path.join(os.path.dirname(man), "kubelet")]
    p = subprocess.run(argv, capture_output=True, text=True, timeout=120, env=dict(os.environ, PROTOKUBE_TRACE="1"))
    if p.returncode != 0:
        raise RuntimeError(f"protokube once exited {p.returncode}:\n{p.stderr[-3000:]}")
    trace = next(ln["trace"] for ln in common.json_lines(p.stderr) if "trace" in ln)
    # every "certificates" step to the mark after it: a pass that brings up two members issues the second
    # one's pairs after the first one's manifest (a step of its own)
    pk_s = sum(nxt[1] - cur[1] for cur, nxt in zip(trace, trace[1:]) if cur[0] == "certificates") / 1e6
    cas = sorted(os.path.basename(x)[:-4] for x in glob.glob(os.path.join(store, "pki", "ca", "*.pem")))
    got = leaves(pki)
    if not got or not cas:
        raise RuntimeError(f"no certificates issued: {len(got)} leaves, CAs {cas}")
    if key_type:  # the like-for-like row against kubeadm: no openssl script
        common.unmount_under(base)
        common.detach_loops_under(base)
        kad, kad_certs = kubeadm_run(wd, i, kubeadm)
        return {"pk_rsa": pk_s, "kubeadm": kad, "ratio_kubeadm": pk_s / kad, "kubeadm_certs": kad_certs,
                "pk_rsa_certs": len(got) + len(cas)}
    odir = wd.sub(f"openssl{i}")
    script = openssl_script(odir, cas, got)
    t0 = time.monotonic()
    q = subprocess.run(["bash", script], capture_output=True, text=True, timeout=300)
    os_s = time.monotonic() - t0
    if q.returncode != 0:
        raise RuntimeError(f"the openssl script failed: {q.stderr[-2000:]}")
    for k in range(len(got)):  # the same set, really: every leaf verifies against its CA
        common.run(["openssl", "verify", "-CAfile", os.path.join(odir, f"{got[k][4]}.crt"),
                    os.path.join(odir, f"l{k}.crt")])
    common.unmount_under(base)
    common.detach_loops_under(base)
    return {"pk": pk_s, "openssl": os_s, "ratio": pk_s / os_s, "leaves": len(got), "cas": len(cas)}


def measure():
    kubeadm = kubeadm_bin()
    with common.Workdir("certs") as wd:
        bind = common.Bind(wd.path)
        try:
            runs = [one_run(wd, bind, i) for i in range(RUNS)]
            peer = [one_run(wd, bind, i, "rsa-2048", kubeadm) for i in range(RUNS)]
        finally:
            bind.stop()
    med = {k: common.median([r[k] for r in runs]) for k in runs[0]}
    pmed = {k: common.median([r[k] for r in peer]) for k in peer[0]}

    def spread(key):
        v = [r[key] for r in peer]
        return f"min {common.fmt_ms(min(v))}, max {common.fmt_ms(max(v))}"
    n = f"{runs[0]['cas']} CAs + SA key + {runs[0]['leaves']} leaves"
    rows = [(f"9. certificates of a master ({n}): protokube / openssl", f"{med['ratio']:.3f}", "", ""),
            ("   protokube: the pass's certificates steps (fresh store)", common.fmt_ms(med["pk"]), "", ""),
            ("   openssl req + x509, same set, one bash script", common.fmt_ms(med["openssl"]), "", ""),
            ("4. certificates of a master, RSA 2048: protokube / kubeadm", f"{pmed['ratio_kubeadm']:.3f}", "", ""),
            ("   the same per key generated (protokube's set is larger: etcd's CAs per cluster)",
             f"{(pmed['pk_rsa'] / (peer[0]['pk_rsa_certs'] + 1)) / (pmed['kubeadm'] / (peer[0]['kubeadm_certs'] + 1)):.3f}",  # + the SA key
             "", ""),
            ("   protokube's default (ECDSA P-256, figure 9) / kubeadm (RSA 2048, its only choice in 1.20)",
             f"{med['pk'] / pmed['kubeadm']:.3f}", "", ""),
            (f"   protokube, pki.keyType rsa-2048 ({peer[0]['pk_rsa_certs']} certificates and keys)",
             f"{common.fmt_ms(pmed['pk_rsa'])} ({spread('pk_rsa')})", "", ""),
            (f"   kubeadm init phase certs all + kubeconfig all ({peer[0]['kubeadm_certs']} certificates)",
             f"{common.fmt_ms(pmed['kubeadm'])} ({spread('kubeadm')})", "", "")]
    return rows, f"{RUNS} runs, fresh store and pool each, load average {os.getloadavg()[0]:.1f} at the end"


if __name__ == "__main__":
    common.figure_main(measure)
