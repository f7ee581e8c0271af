#!/usr/bin/env bash
# Regenerates the render goldens from the given protokube binary (scripts/update-golden.sh runs every
# update-golden-*.sh):
#   tests/golden/manifests/<spec>/*.manifest  for examples/*.yaml and tests/golden/manifests/*.yaml, rendered
#       with this node as member b of a,b,c of the spec's main and events etcd clusters (mounts
#       /mnt/master-vol-<cluster>), exactly as tests/integration/test_render.py renders them, and beside them
#       the configuration files the pods and the kubelet read (kube-scheduler.yaml, kube-proxy.yaml,
#       kubelet.yaml);
#   tests/golden/flags/<component>.flags  the flags of each component for examples/cluster.yaml, one per
#       line, as they appear after the binary in the pod's command.
# Review the diff before committing: a golden change is a change of what runs on every master.
set -euo pipefail
cd "$(dirname "$0")/.."
bin=$(realpath "${1:-build/src/cli/protokube}")
py=/usr/bin/python3 # Debian's python has python3-yaml

# The --etcd-member/--etcd-mount arguments for a spec (one per line).
etcd_args() {
        "$py" - "$1" <<'PY'
import sys, yaml
spec = yaml.safe_load(open(sys.argv[1]))
for c in spec.get("spec", {}).get("etcdClusters") or []:
    if c.get("name") in ("main", "events"):
        print(f"--etcd-member={c['name']}=b/a,b,c")
        print(f"--etcd-mount={c['name']}=/mnt/master-vol-{c['name']}")
PY
}

for spec in examples/*.yaml tests/golden/manifests/*.yaml; do
        name=$(basename "$spec" .yaml)
        out=tests/golden/manifests/$name
        mkdir -p "$out"
        rm -f "$out"/*.manifest "$out"/*.yaml
        mapfile -t args < <(etcd_args "$spec")
        "$bin" --log-level error render -c "$spec" --out "$out" "${args[@]}"
        echo "update-golden-manifests: $out"
done

flags=tests/golden/flags
mkdir -p "$flags"
rm -f "$flags"/*.flags
"$py" - tests/golden/manifests/cluster "$flags" <<'PY'
import os, sys, yaml
src, dst = sys.argv[1], sys.argv[2]
for f in sorted(os.listdir(src)):
    if not f.endswith(".manifest"):
        continue
    pod = yaml.safe_load(open(os.path.join(src, f)))
    cmd = pod["spec"]["containers"][0]["command"]
    # the flags follow the component's binary (after go-runner's own arguments, if any)
    i = max(k for k, a in enumerate(cmd) if a.startswith("/usr/local/bin/"))
    with open(os.path.join(dst, f.replace(".manifest", ".flags")), "w") as o:
        o.write("".join(a + "\n" for a in cmd[i + 1:]))
PY
echo "update-golden-manifests: $flags"
