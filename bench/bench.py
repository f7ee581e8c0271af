#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""Runs the benchmarks (bench/README.md) and prints one table; with --results (or BENCH_RESULTS=1) also
writes bench/results.md. A figure that cannot be measured is reported as an error row; the others still
run. Exit 0 unless the arguments are wrong. BENCH_ONLY=1,3 runs a subset."""
import argparse
import datetime
import os
import platform
import subprocess
import sys
import time
import traceback

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import common  # noqa: E402

# Module names must not shadow a package the figures use: this directory is sys.path[0] of every script run
# from it (bench/requests.py once hid python3-requests from botocore in aws_double_timed.py: figure 5 failed).
FIGURES = [("1", "converge"), ("2", "failover"), ("3", "dns_publish"), ("4", "footprint"), ("5", "aws_discovery"),
           ("6", "aws_failover"), ("7", "etcd_lifecycle"), ("8", "control_plane"), ("9", "certs"),
           ("10", "idle_requests"), ("11", "pivot"), ("12", "cold_start"),
           ("13", "worker_join"), ("14", "power_cut"),
           ("15", "upgrades"), ("16", "kubelet_upgrade")]


def table(rows):
    head = ("figure", "measured", "target", "")
    w = [max(len(r[i]) for r in rows + [head]) for i in range(4)]
    out = ["| " + " | ".join(h.ljust(w[i]) for i, h in enumerate(head)) + " |",
           "|" + "|".join("-" * (w[i] + 2) for i in range(4)) + "|"]
    out += ["| " + " | ".join(c.ljust(w[i]) for i, c in enumerate(r)) + " |" for r in rows]
    return "\n".join(out)


def machine():
    """One line describing the machine the figures come from: OS, kernel, CPU model and count, memory."""
    def field(path, key, sep):
        try:
            with open(path) as f:
                pairs = (ln.split(sep, 1) for ln in f if sep in ln)
                return next((v.strip().strip('"') for k, v in pairs if k.strip() == key), "?")
        except OSError:
            return "?"
    mem = field("/proc/meminfo", "MemTotal", ":").split()
    mem = f"{int(mem[0]) / (1 << 20):.1f} GiB" if mem and mem[0].isdigit() else "?"
    return (f"{field('/etc/os-release', 'PRETTY_NAME', '=')}, Linux {platform.release()}, {os.cpu_count()} CPUs "
            f"({field('/proc/cpuinfo', 'model name', ':')}), {mem} RAM, load average at the start "
            f"{os.getloadavg()[0]:.1f}")


def report(ver, where, rows, notes, seconds, left):
    """The table with its header and notes; left: the figures not measured yet (None: the run is complete)."""
    when = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    header = (f"protokube benchmarks, {when}, {ver or 'protokube'} ({os.environ['PROTOKUBE_BIN']}), "
              f"{platform.node()}, {os.cpu_count()} CPUs, {seconds:.0f} s")
    if left:
        header += f"\n\n**Incomplete: the run had not measured figures {', '.join(left)} yet.**"
    return header + "\n\nMachine: " + where + "\n\n" + table(rows) + "\n\n" + "\n".join(f"- {n}" for n in notes) + "\n"


def write_results(text):
    """bench/results.md, replaced whole (a reader never sees half a file)."""
    path = os.path.join(common.HERE, "results.md")
    with open(path + ".tmp", "w") as f:
        f.write("# Benchmark results\n\nHow to read each figure: [README.md](README.md).\n\n" + text)
    os.replace(path + ".tmp", path)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("binary", nargs="?", default=common.protokube_bin())
    ap.add_argument("--results", action="store_true", default=os.environ.get("BENCH_RESULTS") == "1")
    args = ap.parse_args()
    os.environ["PROTOKUBE_BIN"] = os.path.abspath(args.binary)
    if not os.access(os.environ["PROTOKUBE_BIN"], os.X_OK):
        print(f"bench: no protokube binary at {args.binary}", file=sys.stderr)
        return 2
    only = set(os.environ.get("BENCH_ONLY", "").replace(" ", "").split(",")) - {""}
    rows, notes = [], []
    where = machine()
    t_all = time.monotonic()
    ver = subprocess.run([os.environ["PROTOKUBE_BIN"], "version"], capture_output=True, text=True).stdout.strip()
    todo = [(num, mod) for num, mod in FIGURES if not only or num in only]
    text = report(ver, where, rows, notes, 0, None)
    for i, (num, mod) in enumerate(todo):
        t0 = time.monotonic()
        print(f"bench: figure {num} ({mod}) ...", file=sys.stderr, flush=True)
        try:
            m = __import__(mod)
            r, note = m.measure()
            rows += r
            notes.append(f"{num}: {note} ({time.monotonic() - t0:.0f} s)")
        except Exception as e:
            traceback.print_exc(file=sys.stderr)
            rows.append((f"{num}. {mod}", "ERROR", "", f"{type(e).__name__}: {str(e).splitlines()[0][:80]}"))
            notes.append(f"{num}: error: {e}")
        text = report(ver, where, rows, notes, time.monotonic() - t_all,
                      None if i + 1 == len(todo) else [n for n, _ in todo[i + 1:]])
        if args.results:  # after every figure: a run cut short still leaves what it measured, marked so
            write_results(text)
    print(text)
    if args.results:
        print(f"bench: wrote {os.path.join(common.HERE, 'results.md')}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
