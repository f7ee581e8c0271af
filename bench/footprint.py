# SPDX-License-Identifier: Apache-2.0
"""Figure 4: footprint of `protokube run` on the local pool (two blank volumes, DNS through rfc2136 to BIND
on loopback), for BENCH_FOOTPRINT_SECONDS (default 600) of passes every BENCH_FOOTPRINT_INTERVAL seconds
(default 2). From the first pass (a cold one: claim, mkfs, mount) to the end, /proc/PID is sampled every
100 ms without waking the daemon (smaps_rollup, smaps, stat, status are answered by the kernel):

- private anonymous resident memory: `Anonymous` of smaps_rollup (heap, stacks, anonymous mmaps), peak over
  the run and steady (median of the second half); `Private_Dirty` too (it adds the written private pages of
  file mappings: the .data/.bss and relocations of the binary and its libraries);
- shared library pages: `Rss - Anonymous` (file-backed resident pages, mostly OpenSSL, libc...) and
  their proportional share `Pss_File`;
- growth: the `[heap]` mapping's size and resident pages, the lowest of the last quarter of the measured
  window (after the warm-up passes) vs the lowest of its first quarter (the passes' allocations move the
  heap's top and the loop trims it back once nothing is left on it: a sample can catch the top up for a
  second or two), and the highest `Anonymous` of the last quarter vs the first; and the in-use heap between
  passes under massif (below), second half vs second quarter;
- CPU time per pass: utime+stime of /proc/PID/stat over the window / passes in the window (the pass count
  from /metrics, read only at both ends of the window);
- wake-ups between passes: voluntary context switches (/proc/PID/status) inside the idle gaps between passes
  (gap = from 50 ms after a pass's "converged" log line to 50 ms before the next pass began), per second.
Then valgrind massif on a fresh pool for BENCH_MASSIF_SECONDS (default 60): peak heap (useful + malloc
overhead), and the in-use heap between passes (the floor of the snapshots) over time. And the binary's size
(file, stripped, text+data+bss)."""
import os
import re
import subprocess
import time
import urllib.request

import common

SECONDS = common.env_int("BENCH_FOOTPRINT_SECONDS", 600)
INTERVAL = common.env_int("BENCH_FOOTPRINT_INTERVAL", 2)
MASSIF_SECONDS = common.env_int("BENCH_MASSIF_SECONDS", 60)
WARMUP_PASSES = 3
CLK_TCK = os.sysconf("SC_CLK_TCK")


def metrics(port):
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5) as r:
        text = r.read().decode()
    m = re.search(r"^protokube_passes_total (\d+)$", text, re.M)
    f = re.search(r"^protokube_passes_failed_total (\d+)$", text, re.M)
    return int(m.group(1)), int(f.group(1))


def rollup(pid):
    out = {}
    with open(f"/proc/{pid}/smaps_rollup") as f:
        for ln in f:
            parts = ln.split()
            if len(parts) == 3 and parts[2] == "kB":
                out[parts[0].rstrip(":")] = int(parts[1]) * 1024
    return out


def cpu_seconds(pid):
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / CLK_TCK  # utime, stime (fields 14, 15 of proc(5))


def ctxt(pid):
    vol = invol = 0
    with open(f"/proc/{pid}/status") as f:
        for ln in f:
            if ln.startswith("voluntary_ctxt_switches:"):
                vol = int(ln.split()[1])
            elif ln.startswith("nonvoluntary_ctxt_switches:"):
                invol = int(ln.split()[1])
    return vol, invol


def heap(pid):
    """(size, rss) of the [heap] mapping, bytes."""
    size = rss = 0
    inside = False
    with open(f"/proc/{pid}/smaps") as f:
        for ln in f:
            if re.match(r"^[0-9a-f]+-[0-9a-f]+ ", ln):
                inside = ln.rstrip().endswith("[heap]")
            elif inside and ln.startswith("Size:"):
                size = int(ln.split()[1]) * 1024
            elif inside and ln.startswith("Rss:"):
                rss = int(ln.split()[1]) * 1024
    return size, rss


def setup(wd, bind, name):
    base = wd.sub(name)
    pool, mnt, man, store, pki, state = (os.path.join(base, n)
                                         for n in ("pool", "mnt", "manifests", "store", "pki", "state"))
    for d in (mnt, man, store):
        os.makedirs(d, exist_ok=True)
    spec = os.path.join(base, "cluster.yaml")
    cluster = f"{name}.k8s.test"
    # The certificates (a file:// state store, pki.dir: every pass checks every certificate and kubeconfig)
    # and the API client (selfHosted: every pass takes the checkpoint's and the pivot's steps, which ask the
    # apiserver; none runs here, so each pass meets a refused connection and waits for the next).
    with open(spec, "w") as f:
        f.write(common.spec_text(cluster, common.rfc2136_block(bind)).replace(
            "  kubernetesVersion:", f"  stateStore: file://{store}\n  pki:\n    dir: {pki}\n  selfHosted: true\n"
            "  kubernetesVersion:"))
    common.create_pool(pool, cluster, size="64M")
    port = common.dnsservers.free_port()
    argv = [common.protokube_bin(), "-c", spec, "--state-dir", state, "--log-format", "json", "run", "--node-name", "a", "--zone", "z1",
            "--internal-ip", "127.0.0.11", "--external-ip", "127.0.0.12", "--pool", pool, "--manifest-dir", man,
            "--mount-root", mnt, "--config-dir", os.path.join(os.path.dirname(man), "lib"),
            "--kubelet-dir", os.path.join(os.path.dirname(man), "kubelet"), "--listen", f"127.0.0.1:{port}", "--interval", f"{INTERVAL}s"]
    return base, argv, port


def wait_passes(proc, port, n, timeout):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"protokube run exited {proc.returncode}")
        try:
            if metrics(port)[0] >= n:
                return
        except OSError:
            pass
        time.sleep(0.05)
    raise RuntimeError(f"fewer than {n} passes within {timeout} s")


def idle_wakeups(samples, log_path, t_from, t_to):
    """Voluntary switches per second inside the gaps between passes of the window."""
    passes = []
    with open(log_path) as f:
        for ln in common.json_lines(f.read()):
            # every pass's line, converged or not (a self-hosted daemon with no API never converges)
            m = re.match(r"Pass \d+ (?:converged in|not converged yet after|failed after) ([0-9.]+) ms",
                         ln.get("msg", ""))
            if m:
                passes.append((common.log_time(ln), float(m.group(1)) / 1000))
    switches = secs = 0.0
    for (t_end, _), (t_next_end, d_next) in zip(passes, passes[1:]):
        lo, hi = t_end + 0.05, t_next_end - d_next - 0.05
        if lo < t_from or hi > t_to or hi - lo < 0.2:
            continue
        inside = [s for s in samples if lo <= s["t"] <= hi]
        if len(inside) >= 2:
            switches += inside[-1]["vol"] - inside[0]["vol"]
            secs += inside[-1]["t"] - inside[0]["t"]
    return (switches / secs if secs else None), secs


def quarter_change(window, key, pick):
    """pick (max or min) of key over the last quarter of the window minus the same over the first quarter.
    max for `Anonymous` (a single sample could fall inside a pass and catch its transient allocations); min
    for the `[heap]`: the floor the passes' allocations rise from and the loop's trim returns to."""
    n = max(1, len(window) // 4)
    return pick(s[key] for s in window[-n:]) - pick(s[key] for s in window[:n])


def run_footprint(wd, bind):
    base, argv, port = setup(wd, bind, "footprint")
    log_path = os.path.join(base, "protokube.log")
    with open(log_path, "w") as log:
        proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=log, stdin=subprocess.DEVNULL)
    samples = []

    def sample():
        r = rollup(proc.pid)
        vol, invol = ctxt(proc.pid)
        heap_size, heap_rss = heap(proc.pid)
        samples.append({"t": time.time(), "anon": r.get("Anonymous", 0), "pd": r.get("Private_Dirty", 0),
                        "rss": r.get("Rss", 0), "pss_file": r.get("Pss_File"), "vol": vol, "invol": invol,
                        "heap": heap_size, "heap_rss": heap_rss})

    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:  # sample the cold pass too, until the warm-up passes are done
            sample()
            try:
                if metrics(port)[0] >= WARMUP_PASSES:
                    break
            except OSError:
                pass
            time.sleep(0.1)
        wait_passes(proc, port, WARMUP_PASSES, 5)
        p0, f0 = metrics(port)
        c0, t0 = cpu_seconds(proc.pid), time.time()
        sample()
        end = time.monotonic() + SECONDS
        while time.monotonic() < end:
            if proc.poll() is not None:
                raise RuntimeError(f"protokube run exited {proc.returncode} during the run")
            sample()
            time.sleep(0.1)
        sample()
        c1, t1 = cpu_seconds(proc.pid), time.time()
        p1, f1 = metrics(port)
    finally:
        common.stop_pid(proc)
    window = [s for s in samples if s["t"] >= t0]
    second_half = [s for s in window if s["t"] >= (t0 + t1) / 2]
    wake, idle_secs = idle_wakeups(samples, log_path, t0, t1)
    passes = p1 - p0
    return {"peak_anon": max(s["anon"] for s in samples),
            "steady_anon": common.median([s["anon"] for s in second_half]),
            "peak_pd": max(s["pd"] for s in samples), "steady_pd": common.median([s["pd"] for s in second_half]),
            "file_rss": common.median([s["rss"] - s["anon"] for s in second_half]),
            "pss_file": common.median([s["pss_file"] for s in second_half if s["pss_file"] is not None]),
            "heap_growth": quarter_change(window, "heap", min),
            "heap_rss_growth": quarter_change(window, "heap_rss", min),
            "heap_transient": max(s["heap"] for s in window) - min(s["heap"] for s in window),
            "anon_growth": quarter_change(window, "anon", max),
            "cpu_per_pass": (c1 - c0) / passes if passes else None, "passes": passes, "failed": f1 - f0,
            "wake": wake, "idle_secs": idle_secs, "seconds": t1 - t0,
            "vcs_per_pass": (window[-1]["vol"] - window[0]["vol"]) / passes if passes else None}


def run_massif(wd, bind):
    base, argv, port = setup(wd, bind, "massif")
    out = os.path.join(base, "massif.out")
    # --run-libc-freeres=no: valgrind 3.19 crashed (SIGSEGV inside its free) in glibc's __libc_freeres at
    # exit once the daemon had resolved a name with getaddrinfo_a; freeing glibc's own state at exit is
    # for leak checkers and is outside this measurement (the shutdown is left out below).
    vg = ["valgrind", "--tool=massif", "--run-libc-freeres=no", f"--massif-out-file={out}", "--quiet", "--time-unit=ms",
          "--max-snapshots=1000", "--detailed-freq=1000000"] + argv
    with open(os.path.join(base, "valgrind.log"), "w") as log:
        proc = subprocess.Popen(vg, stdout=subprocess.DEVNULL, stderr=log, stdin=subprocess.DEVNULL)
    t_start = time.monotonic()
    try:
        wait_passes(proc, port, 1, 120)
        time.sleep(MASSIF_SECONDS)
        passes = metrics(port)[0]
    finally:
        t_stop_ms = (time.monotonic() - t_start) * 1000  # massif's clock starts a little later: conservative
        common.stop_pid(proc, grace=30)
    snaps, cur = [], {}
    with open(out) as f:
        for ln in f:
            k, _, v = ln.strip().partition("=")
            if k in ("time", "mem_heap_B", "mem_heap_extra_B"):
                cur[k] = int(v)
                if k == "mem_heap_extra_B":
                    snaps.append((cur["time"], cur["mem_heap_B"], cur["mem_heap_B"] + cur["mem_heap_extra_B"]))
    peak_useful = max(s[1] for s in snaps)
    peak_total = max(s[2] for s in snaps)
    # In-use heap between passes: the lowest snapshot of a stretch of time (a pass only adds on top of it).
    # Growth: the second half's floor minus the floor of the quarter after the first quarter (which holds the
    # cold first pass and the start-up); the shutdown after SIGTERM (everything freed) is left out.
    t_end = t_stop_ms - 500
    early = [s[1] for s in snaps if t_end / 4 <= s[0] < t_end / 2]
    late = [s[1] for s in snaps if t_end / 2 <= s[0] < t_end]
    growth = (min(late) - min(early)) if early and late else None
    return peak_useful, peak_total, passes, growth, (min(late) if late else None)


def binary_size(wd):
    b = common.protokube_bin()
    stripped = os.path.join(wd.path, "protokube.stripped")
    common.run(["strip", "-o", stripped, b])
    p = common.run(["size", b], check=False)
    try:
        text, data, bss = (int(x) for x in p.stdout.splitlines()[1].split()[:3])
    except (IndexError, ValueError):
        text = data = bss = 0
    return os.path.getsize(b), os.path.getsize(stripped), text, data, bss


def measure():
    with common.Workdir("footprint") as wd:
        bind = common.Bind(wd.path)
        try:
            f = run_footprint(wd, bind)
            m_useful, m_total, m_passes, m_growth, m_floor = run_massif(wd, bind)
        finally:
            bind.stop()
        size, stripped, text, data, bss = binary_size(wd)
    kib = 1024
    peak_ok = f["peak_anon"] <= 2 << 20 and f["steady_anon"] <= 2 << 20
    rows = [(f"4. private anon RSS, peak / steady ({f['seconds']:.0f} s)",
             f"{common.fmt_mib(f['peak_anon'])} / {common.fmt_mib(f['steady_anon'])}", "<= 2 MiB",
             "met" if peak_ok else "MISSED"),
            ("   Private_Dirty (anon + written lib pages), peak / steady",
             f"{common.fmt_mib(f['peak_pd'])} / {common.fmt_mib(f['steady_pd'])}", "", ""),
            ("   shared library pages: file-backed RSS / Pss_File",
             f"{common.fmt_mib(f['file_rss'])} / {common.fmt_mib(f['pss_file'])}", "", ""),
            ("   growth over the window: [heap] size / RSS (floors) / anon RSS (peaks)",
             f"{f['heap_growth'] // kib} / {f['heap_rss_growth'] // kib} / {f['anon_growth'] // kib} KiB", "0",
             "met" if f["heap_growth"] <= 0 else "MISSED"),
            ("   [heap] size: the highest above the lowest (the passes' allocations, trimmed)",
             f"{f['heap_transient'] // kib} KiB", "", ""),
            (f"   in-use heap growth (massif, {MASSIF_SECONDS} s: 2nd half vs 2nd quarter floor)",
             "n/a" if m_growth is None else f"{m_growth} B (idle {m_floor / kib:.0f} KiB)", "0",
             "" if m_growth is None else "met" if m_growth <= 0 else "MISSED"),
            (f"   CPU per pass ({f['passes']} passes, {f['failed']} failed, every {INTERVAL} s)",
             common.fmt_ms(f["cpu_per_pass"]), "", ""),
            ("   voluntary ctx switches per pass", f"{f['vcs_per_pass']:.1f}" if f["vcs_per_pass"] else "n/a", "",
             ""),
            (f"   wake-ups between passes ({f['idle_secs']:.0f} idle s observed)",
             "n/a" if f["wake"] is None else f"{f['wake']:.3f} /s", "", ""),
            (f"   massif peak heap, useful / +overhead ({MASSIF_SECONDS} s, {m_passes} passes)",
             f"{m_useful / kib:.0f} KiB / {m_total / kib:.0f} KiB", "", ""),
            ("   binary size: file / stripped / text+data+bss",
             f"{size / kib:.0f} / {stripped / kib:.0f} / {(text + data + bss) / kib:.0f} KiB", "", "")]
    note = f"footprint window {f['seconds']:.0f} s (BENCH_FOOTPRINT_SECONDS={SECONDS}), interval {INTERVAL} s"
    return rows, note


if __name__ == "__main__":
    common.figure_main(measure)
