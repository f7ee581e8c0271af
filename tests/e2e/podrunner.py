#!/usr/bin/python3
"""A static-pod runner for the end-to-end test, standing in for kubelet on one simulated master.

It watches the node's manifest directory and runs each pod's container command inside the node's network
namespace, honouring the pod's hostPath volume mounts with bind mounts in a mount namespace of its own (a slave of the
machine's, like kubelet's HostToContainer propagation: an unmount on the host reaches the pod, so a pod never
keeps another node's volume busy). It
restarts a pod when its manifest changes or its process exits, and stops it when the manifest goes away or
its symlink dangles (an unmounted etcd volume). Images are not pulled: a container's command path is mapped
to a local binary (--substitute /usr/local/bin/etcd=/usr/bin/etcd); pods whose binary is missing are
reported once and skipped. A pod's init containers run first, one after another, each to completion
(bounded by --init-timeout); a failure starts the pod again from the first. Bounded: it exits after
--max-seconds."""

import argparse
import hashlib
import json
import os
import shlex
import signal
import subprocess
import sys
import time

import yaml

BIND_SCRIPT = r'''
set -e
while [ "$1" != "--" ]; do
    mkdir -p "$2"
    if [ "$3" = ro ]; then mount --bind -o ro "$1" "$2"; else mount --bind "$1" "$2"; fi
    shift 3
done
shift
exec "$@"
'''


class Pod:
    def __init__(self, name, digest, proc, started):
        self.name, self.digest, self.proc, self.started = name, digest, proc, started


class Runner:
    def __init__(self, args):
        self.args = args
        self.subst = dict(s.split("=", 1) for s in args.substitute)
        self.pods = {}  # manifest file -> Pod
        self.skipped = set()
        self.restart_at = {}
        self.stopping = False
        os.makedirs(args.log_dir, exist_ok=True)
        self.events = open(os.path.join(args.log_dir, "podrunner-events.jsonl"), "a", buffering=1)

    def event(self, what, **kw):
        kw.update(time=time.time(), what=what, node=self.args.netns)
        self.events.write(json.dumps(kw) + "\n")

    def read_manifests(self):
        found = {}
        try:
            names = sorted(os.listdir(self.args.manifest_dir))
        except FileNotFoundError:
            return found
        for n in names:
            if n.startswith(".") or not n.endswith(".manifest"):
                continue
            path = os.path.join(self.args.manifest_dir, n)
            try:
                with open(path, "rb") as f:  # follows the symlink; dangling -> absent
                    data = f.read()
            except OSError:
                continue
            found[n] = data
        return found

    def build_argv(self, pod, c=None):
        spec = pod["spec"]
        c = c or spec["containers"][0]
        cmd = list(c.get("command", [])) + list(c.get("args", []))
        if not cmd:
            return None, "no command"
        binary = self.subst.get(cmd[0], cmd[0])
        if not os.path.exists(binary):
            return None, f"no binary for {cmd[0]}"
        cmd[0] = binary
        volumes = {v["name"]: v for v in spec.get("volumes", [])}
        binds = []
        for m in c.get("volumeMounts", []):
            v = volumes.get(m["name"], {})
            hp = v.get("hostPath", {})
            if not hp:
                continue
            if hp.get("type") in ("DirectoryOrCreate",):
                os.makedirs(hp["path"], exist_ok=True)
            if not os.path.exists(hp["path"]):
                continue
            binds += [hp["path"], m["mountPath"], "ro" if m.get("readOnly") else "rw"]
        env = [f"{e['name']}={e['value']}" for e in c.get("env", []) if "value" in e]
        argv = ["ip", "netns", "exec", self.args.netns, "unshare", "--mount", "--propagation", "slave",
                "/bin/sh", "-c", BIND_SCRIPT, "sh", *binds, "--", *(["env", *env] if env else []), *cmd]
        return argv, None

    def run_init_containers(self, fname, pod, log):
        """Like kubelet: each init container to completion (exit 0), in order, before the containers; a
        failure stops the pod's start, which is tried again from the first one. Bounded per container."""
        for c in pod["spec"].get("initContainers", []):
            argv, why = self.build_argv(pod, c)
            if argv is None:
                self.event("init-skipped", pod=pod["metadata"]["name"], init=c["name"], reason=why)
                return False
            t0 = time.time()
            try:
                code = subprocess.run(argv, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                      start_new_session=True, timeout=self.args.init_timeout).returncode
            except subprocess.TimeoutExpired:
                code = "timeout"
            self.event("init-exited", pod=pod["metadata"]["name"], init=c["name"], code=code,
                       seconds=round(time.time() - t0, 3))
            if code != 0:
                self.restart_at[fname] = time.time() + self.args.restart_delay
                return False
        return True

    def start(self, fname, data):
        digest = hashlib.sha256(data).hexdigest()
        # A manifest already skipped or rejected is not parsed again until it changes: the loop runs every
        # --poll seconds on each node, and parsing the control-plane manifests each time (pure-Python YAML)
        # took more CPU than the daemons under test on a 2-core machine.
        if (fname, digest) in self.skipped:
            return
        try:
            pod = yaml.safe_load(data)
            name = pod["metadata"]["name"]
        except Exception as e:  # a manifest kubelet would reject: report and skip
            self.skipped.add((fname, digest))
            self.event("invalid", file=fname, error=str(e))
            return
        argv, why = self.build_argv(pod)
        if argv is None:
            self.skipped.add((fname, digest))
            self.event("skipped", pod=name, reason=why)
            return
        log = open(os.path.join(self.args.log_dir, f"{name}.log"), "ab")
        if not self.run_init_containers(fname, pod, log):
            log.close()
            return
        proc = subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                start_new_session=True)
        log.close()
        self.pods[fname] = Pod(name, digest, proc, time.time())
        self.event("started", pod=name, pid=proc.pid, argv=" ".join(shlex.quote(a) for a in argv[-40:]))

    def stop(self, fname, why):
        p = self.pods.pop(fname)
        if p.proc.poll() is None:
            try:
                os.killpg(p.proc.pid, signal.SIGTERM)
            except ProcessLookupError:
                pass
            try:
                p.proc.wait(timeout=self.args.grace)
            except subprocess.TimeoutExpired:
                # An etcd leader whose peers are gone can take seconds to hand over: escalate.
                try:
                    os.killpg(p.proc.pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
                p.proc.wait(timeout=10)
        self.event("stopped", pod=p.name, reason=why, code=p.proc.returncode)

    def sync(self):
        manifests = self.read_manifests()
        for fname in list(self.pods):
            p = self.pods[fname]
            if fname not in manifests:
                self.stop(fname, "manifest gone")
            elif hashlib.sha256(manifests[fname]).hexdigest() != p.digest:
                self.stop(fname, "manifest changed")
            elif p.proc.poll() is not None:
                self.event("exited", pod=p.name, code=p.proc.returncode)
                self.pods.pop(fname)
                self.restart_at[fname] = time.time() + self.args.restart_delay
        for fname, data in manifests.items():
            if fname in self.pods or time.time() < self.restart_at.get(fname, 0):
                continue
            self.start(fname, data)

    def run(self):
        deadline = time.time() + self.args.max_seconds
        signal.signal(signal.SIGTERM, lambda *_: setattr(self, "stopping", True))
        signal.signal(signal.SIGINT, lambda *_: setattr(self, "stopping", True))
        self.event("runner-start")
        while not self.stopping and time.time() < deadline:
            self.sync()
            time.sleep(self.args.poll)
        for fname in list(self.pods):
            self.stop(fname, "runner stopping")
        self.event("runner-stop")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--manifest-dir", required=True)
    ap.add_argument("--netns", required=True)
    ap.add_argument("--log-dir", required=True)
    ap.add_argument("--substitute", action="append", default=[])
    ap.add_argument("--grace", type=float, default=1.0)
    ap.add_argument("--poll", type=float, default=0.02)
    ap.add_argument("--restart-delay", type=float, default=0.5)
    ap.add_argument("--max-seconds", type=float, default=3600)
    ap.add_argument("--init-timeout", type=float, default=120)
    Runner(ap.parse_args()).run()


if __name__ == "__main__":
    sys.exit(main())
