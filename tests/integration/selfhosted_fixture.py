# A node's pki layout (src/model/pki-layout.h, docs/pki.md "On the node") for the self-hosted render tests,
# issued by the test: real certificates (python3-cryptography) with fixed subjects and serials, so that the
# certificates' digest (protokube.io/certificates) is known in advance, and fresh keys, so that no private
# key is ever committed (the goldens mask the Secrets' data). Pairs are laid out as protokube writes them:
# NAME.crt -> .NAME.current/NAME.crt, .NAME.current -> .NAME.<16 hex>.
import datetime
import hashlib
import os

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec, rsa
from cryptography.x509.oid import NameOID

# The pairs the control-plane components read at start, in the layout's order (certs/certs-layout.c): their
# serials make the digest. (dir, pair name, CN, serial)
RESTARTING_PAIRS = [
    ("kube-apiserver", "apiserver", "kube-apiserver", 0x1001),
    ("kube-apiserver", "etcd-client", "kube-apiserver-etcd-client", 0x1002),
    ("kube-apiserver", "kubelet-client", "kube-apiserver-kubelet-client", 0x1003),
    ("kube-apiserver", "front-proxy-client", "front-proxy-client", 0x1004),
    ("kube-controller-manager", "client", "system:kube-controller-manager", 0x1005),
    ("kube-scheduler", "client", "system:kube-scheduler", 0x1006),
    ("kube-proxy", "client", "system:kube-proxy", 0x1007),
]
CA_FILES = {"kube-apiserver": ["ca.crt", "etcd-ca.crt", "front-proxy-ca.crt"],
            "kube-controller-manager": ["ca.crt", "front-proxy-ca.crt"],
            "kube-scheduler": ["ca.crt", "front-proxy-ca.crt"], "kube-proxy": ["ca.crt"]}
KUBECONFIG_DIRS = ["kube-controller-manager", "kube-scheduler", "kube-proxy"]


def _name(cn):
    return x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, cn)])


def _pem_key(key):
    return key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                             serialization.NoEncryption())


def _cert(cn, serial, key, issuer_cn, issuer_key, ca=False):
    now = datetime.datetime(2026, 1, 1)
    b = (x509.CertificateBuilder().subject_name(_name(cn)).issuer_name(_name(issuer_cn))
         .public_key(key.public_key()).serial_number(serial)
         .not_valid_before(now).not_valid_after(now + datetime.timedelta(days=3650))
         .add_extension(x509.BasicConstraints(ca=ca, path_length=None), critical=True))
    return b.sign(issuer_key, hashes.SHA256()).public_bytes(serialization.Encoding.PEM)


def _write(path, data, mode):
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, mode)
    with os.fdopen(fd, "wb") as f:
        f.write(data)


def write_pair(d, name, cert_pem, key_pem, generation):
    gen = f".{name}.{generation:016x}"
    os.makedirs(os.path.join(d, gen), mode=0o700, exist_ok=True)
    _write(os.path.join(d, gen, name + ".crt"), cert_pem, 0o644)
    _write(os.path.join(d, gen, name + ".key"), key_pem, 0o600)
    cur = os.path.join(d, f".{name}.current")
    tmp = cur + ".tmp"
    os.symlink(gen, tmp)
    os.replace(tmp, cur)
    for ext in (".crt", ".key"):
        link = os.path.join(d, name + ext)
        if not os.path.islink(link):
            os.symlink(f".{name}.current/{name}{ext}", link)


def issue_layout(pki_dir, serial_offset=0):
    """Writes the four consumer directories under pki_dir; returns the digest protokube must compute."""
    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca_pem = _cert("kubernetes-ca", 1, ca_key, "kubernetes-ca", ca_key, ca=True)
    for d, files in CA_FILES.items():
        os.makedirs(os.path.join(pki_dir, d), mode=0o700, exist_ok=True)
        for f in files:
            _write(os.path.join(pki_dir, d, f), ca_pem, 0o644)
    for i, (d, name, cn, serial) in enumerate(RESTARTING_PAIRS):
        key = ec.generate_private_key(ec.SECP256R1())
        write_pair(os.path.join(pki_dir, d), name,
                   _cert(cn, serial + serial_offset, key, "kubernetes-ca", ca_key), _pem_key(key),
                   serial + serial_offset)
    sa = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    for d in ("kube-apiserver", "kube-controller-manager"):
        _write(os.path.join(pki_dir, d, "service-account.key"), _pem_key(sa), 0o600)
    _write(os.path.join(pki_dir, "kube-apiserver", "service-account.pub"),
           sa.public_key().public_bytes(serialization.Encoding.PEM,
                                        serialization.PublicFormat.SubjectPublicKeyInfo), 0o644)
    for d in KUBECONFIG_DIRS:
        p = os.path.join(pki_dir, d)
        _write(os.path.join(p, "kubeconfig"), KUBECONFIG.format(dir=p, user=d).encode(), 0o600)
    return digest(pki_dir, serial_offset)


KUBECONFIG = """apiVersion: v1
kind: Config
clusters:
- cluster:
    certificate-authority: {dir}/ca.crt
    server: https://127.0.0.1:443
  name: local
contexts:
- context:
    cluster: local
    user: {user}
  name: local
current-context: local
users:
- name: {user}
  user:
    client-certificate: {dir}/client.crt
    client-key: {dir}/client.key
"""


def digest(pki_dir, serial_offset=0):
    """docs/pki.md: SHA-256 of "DIR/NAME=SERIAL\\n" of the pairs that restart components, in layout order,
    16 hex digits; the serial as lowercase hex."""
    text = "".join(f"{os.path.join(pki_dir, d)}/{name}={serial + serial_offset:x}\n"
                   for d, name, _, serial in RESTARTING_PAIRS)
    return hashlib.sha256(text.encode()).hexdigest()[:16]
