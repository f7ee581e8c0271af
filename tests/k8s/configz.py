"""A rendered configuration file against what the component reports on /configz (docs/components.md,
"Configuration files"): every field the file sets must have that value in the effective configuration.

/configz answers {"<section>": {...}}: the kubelet's section is its KubeletConfiguration (v1beta1, the file's own
field names), kube-proxy's and kube-scheduler's are their internal types (Go names: "ClientConnection",
"IPVS", "OOMScoreAdj"). A struct field is found by its name in any case; a map entry (featureGates,
evictionHard) by its exact key. Durations are Go's form on both sides ("10s", "2m0s"). The kubelet's section
leaves out a field at its zero value (its v1beta1 fields are `omitempty`: readOnlyPort 0, a false bool): there
(OMITS_ZERO) a field the file sets to a zero value and /configz does not report is that value.

    mismatches(rendered_file_text, section(configz_body, "kubelet")) -> ["clusterDomain: ...", ...]
"""
import json

import yaml

SECTIONS = {
    "kubelet": "kubeletconfig",
    "kube-proxy": "kubeproxy.config.k8s.io",
    "kube-scheduler": "componentconfig",
}
# The sections whose fields are omitempty (the kubelet's external v1beta1 type).
OMITS_ZERO = {"kubelet"}


def is_zero(v):
    """Go's zero value as encoding/json's omitempty leaves it out: false, 0, "", an empty list or map."""
    return v is False or v is None or (not isinstance(v, bool) and v in (0, "")) or v == [] or v == {}
# The document's own header, not a setting.
HEADER = ("apiVersion", "kind")


def leaves(doc, path=()):
    """(path, value) of every setting of a rendered file: mappings are walked, lists and scalars are values."""
    for key, value in doc.items():
        if not path and key in HEADER:
            continue
        if isinstance(value, dict) and value:
            yield from leaves(value, path + (key,))
        else:
            yield path + (key,), value


def lookup(effective, path):
    """The value at path, or KeyError: each step the exact key, else the one key equal to it in any case."""
    node = effective
    for key in path:
        if not isinstance(node, dict):
            raise KeyError(key)
        if key in node:
            node = node[key]
            continue
        matches = [k for k in node if k.lower() == key.lower()]
        if len(matches) != 1:
            raise KeyError(key)
        node = node[matches[0]]
    return node


def section(body, component):
    """The component's effective configuration in /configz's body (text or parsed)."""
    if isinstance(body, (str, bytes)):
        body = json.loads(body)
    return body[SECTIONS[component]]


def mismatches(rendered, effective, omits_zero=False):
    """Every field of rendered (a file's text or its parsed document) whose value the effective configuration
    (section()) does not have; omits_zero: the section leaves out zero values (OMITS_ZERO). An empty list: the
    component runs what the file says."""
    if isinstance(rendered, str):
        rendered = yaml.safe_load(rendered)
    out = []
    for path, want in leaves(rendered):
        name = ".".join(path)
        try:
            got = lookup(effective, path)
        except KeyError:
            if omits_zero and is_zero(want):
                continue
            out.append(f"{name}: not reported")
            continue
        if got != want:
            out.append(f"{name}: the file says {want!r}, the component runs {got!r}")
    return out
