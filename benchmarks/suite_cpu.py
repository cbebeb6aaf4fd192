"""CPU seconds of a test run per test, per scheduling group and per kind of process, every
process a test starts included (its JVMs, Kafka's brokers, the S3 server, Spark's Python
workers).

    .venv/bin/python benchmarks/suite_cpu.py ./test.sh
    .venv/bin/python benchmarks/suite_cpu.py --top 40 ./test.sh tests/cluster
    .venv/bin/python benchmarks/suite_cpu.py --json run.json ./test.sh

The suite runs on two saturated cores, so a test's wall time is mostly the other workers'
load; the CPU it costs is what a change can save. pytest's durations miss what a test's
processes use after they are orphaned (a kill -9 test's JVMs) and count a worker's waits.

The command gets `-p benchmarks.suite_cpu` appended (pytest's arguments come last in
test.sh): as a plugin this module writes the test each xdist worker runs to a file. This
process reads /proc every second and adds each process's CPU since the last reading to the
test its worker ran then; a process belongs to the worker it descends from when first seen
(it keeps that worker after its parent dies). CPU of processes outside any worker (the
controller, setup before pytest) is reported as "(no worker)"; a process living less than a
second between readings is missed. Linux only. The session JVM the workers share (the
controller's child, tests/shared_jvm.py) serves every worker's tests at once: each reading's
CPU of it is split equally between the tests running then.

A worker's processes can use one core while the other worker uses the other; what they
leave of it while a test runs (waiting on a sleep, a server, a timeout) is that test's idle
core time, reported per group beside the CPU (a group that idles lengthens the run as much
as one that computes), with each worker's end: a worker that ends early idles a core. A
worker's idle core is not always the machine's (the other worker's threads may take it), so
the machine's own idle time while tests ran is printed beside it (/proc/stat).
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ENV = "KRAFTLAKE_SUITE_CPU_DIR"
TICK = os.sysconf("SC_CLK_TCK")
REPO = Path(__file__).resolve().parents[1]


def _write_current(nodeid: str) -> None:
    out = os.environ.get(ENV)
    if out:
        worker = os.environ.get("PYTEST_XDIST_WORKER", "main")
        tmp = Path(out) / f".{worker}"
        tmp.write_text(f"{os.getpid()}\t{nodeid}\n")
        tmp.replace(Path(out) / worker)


def pytest_runtest_logstart(nodeid: str, location) -> None:
    _write_current(nodeid)


def pytest_runtest_logfinish(nodeid: str, location) -> None:
    _write_current("(between tests)")


def processes() -> dict[int, tuple[int, int, int]]:
    """pid -> (parent pid, start time, CPU ticks of the process itself)."""
    out = {}
    for name in os.listdir("/proc"):
        if name.isdigit():
            try:
                stat = Path(f"/proc/{name}/stat").read_text()
            except OSError:
                continue
            f = stat[stat.rindex(")") + 2:].split()
            out[int(name)] = (int(f[1]), int(f[19]), int(f[11]) + int(f[12]))
    return out


def _workers(d: Path) -> dict[int, str]:
    """worker pid -> the test it runs now (under xdist the controller, "main", also names
    the test whose report it got last)."""
    return {pid: node for pid, (_, node) in _named_workers(d).items()}


def _named_workers(d: Path) -> dict[int, tuple[str, str]]:
    """worker pid -> (its name: gw0, gw1 ... or main, the test it runs now)."""
    out = {}
    for f in d.iterdir():
        if not f.name.startswith("."):
            try:
                pid, node = f.read_text().rstrip("\n").split("\t", 1)
            except (OSError, ValueError):
                continue
            out[int(pid)] = (f.name, node)
    return out


# the Spark JVM the xdist controller starts for the workers' sessions (tests/shared_jvm.py)
SHARED_JVM = "session JVM (shared by the workers)"


def kind_of(pid: int, parent: int, workers: dict[int, str]) -> str:
    """What a process is, from its command line: which of the suite's kinds of process
    (a worker's own SparkSession JVM, a job's, Kafka's ...) costs the CPU."""
    if pid in workers:
        return "test process (Python)"
    try:
        argv = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
    except OSError:
        return "(gone)"
    # (Chromium rewrites its argv into one string: its first word names it)
    exe = Path((argv[0].decode(errors="replace").split() or [""])[0]).name
    line = b" ".join(argv)
    if exe == "java":
        if b"kafka" in line.lower():
            return "Kafka JVM (brokers, tools)"
        if b"SparkSubmit" in line:
            return "session JVM (worker's)" if parent in workers else "job JVM"
        return "other JVM (standalone, executors)"
    if exe.startswith("python"):
        if b"pyspark" in line and (b"daemon" in line or b"worker" in line):
            return "Spark Python worker"
        return "job or tool process (Python)"
    return exe


class Run:
    """What `measure` found: CPU seconds per test and per (test, kind of process)
    (`kind_of`), idle core seconds per test, each worker's last moment running a test
    (seconds from the start), and the command's exit status."""

    def __init__(self) -> None:
        self.per_test: collections.Counter = collections.Counter()
        self.per_kind: collections.Counter = collections.Counter()
        self.idle: collections.Counter = collections.Counter()
        self.last_test: dict[int, float] = {}
        self.machine_idle = 0.0  # core seconds the machine's CPUs idled while tests ran
        self.status = 0


def _machine_idle() -> float:
    """Core seconds every CPU of the machine spent idle or waiting on I/O since boot: what
    a worker's idle core time really leaves to fill (another worker's threads may take it)."""
    fields = Path("/proc/stat").read_text().split("\n", 1)[0].split()
    return (int(fields[4]) + int(fields[5])) / TICK


def measure(cmd: list[str]) -> Run:
    """Run `cmd` (with this plugin) to its end and measure it (`Run`)."""
    d = Path(tempfile.mkdtemp(prefix="suite-cpu-"))
    env = {**os.environ, ENV: str(d),
           "PYTHONPATH": os.pathsep.join(filter(None, [str(REPO),
                                                       os.environ.get("PYTHONPATH")]))}
    proc = subprocess.Popen([*cmd, "-p", "benchmarks.suite_cpu"], env=env)
    owner: dict[tuple[int, int], int] = {}  # (pid, start) -> the worker it descends from
    seen: dict[tuple[int, int], int] = {}  # (pid, start) -> ticks at the last reading
    run = Run()
    per_test, per_kind = run.per_test, run.per_kind
    kinds: dict[tuple[int, int], str] = {}
    t0 = last = time.monotonic()
    idle_before = _machine_idle()
    # a process already running counts from now: its CPU so far is not the command's
    for pid, (_, start, ticks) in processes().items():
        seen[(pid, start)] = ticks
    while True:
        done = proc.poll() is not None
        named, procs = _named_workers(d), processes()
        workers = {pid: node for pid, (_, node) in named.items()}
        # the cores are the xdist workers' (the controller's only when pytest runs alone)
        runners = {pid: node for pid, (name, node) in named.items()
                   if name != "main" or len(named) == 1}
        controller = next((pid for pid, (name, _) in named.items()
                           if name == "main" and len(named) > 1), None)
        now = time.monotonic()
        tick_used: collections.Counter = collections.Counter()  # worker pid -> CPU s
        for pid, (_, start, ticks) in procs.items():
            key = (pid, start)
            if key not in owner:
                q, hops = pid, 0
                while q in procs and q not in workers and hops < 64:
                    q, hops = procs[q][0], hops + 1
                if q in workers:
                    owner[key] = q
            # spark-submit execs java later; a worker is one once its plugin has written
            if kinds.get(key, "bash") in ("bash", "sh") or pid in workers:
                kinds[key] = kind_of(pid, procs[pid][0], workers)
            used = ticks - seen.get(key, 0)
            seen[key] = ticks
            if used <= 0:
                continue
            # (its kind was read before the controller named itself, or after)
            if controller is not None and procs[pid][0] == controller and kinds[key] in (
                    "job JVM", "session JVM (worker's)", SHARED_JVM):
                kinds[key] = SHARED_JVM
                # every worker's session: an equal share to each worker running a test
                sharers = ([w for w, node in runners.items() if node != "(between tests)"]
                           or list(runners))
                share = used / TICK / len(sharers) if sharers else 0.0
                for w in sharers:
                    tick_used[w] += share
                    per_test[runners[w]] += share
                    per_kind[(runners[w], SHARED_JVM)] += share
                if sharers:
                    continue
            tick_used[owner.get(key, -1)] += used / TICK
            per_test[workers.get(owner.get(key, -1), "(no worker)")] += used / TICK
            per_kind[(workers.get(owner.get(key, -1), "(no worker)"), kinds[key])] += (
                used / TICK)
        idle_now = _machine_idle()
        if any(node != "(between tests)" for node in runners.values()):
            run.machine_idle += idle_now - idle_before
        idle_before = idle_now
        for worker, node in runners.items():
            if node != "(between tests)":
                run.last_test[worker] = now - t0
                run.idle[node] += max(0.0, (now - last) - tick_used[worker])
        last = now
        if done:
            run.status = proc.returncode
            return run
        time.sleep(1.0)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--top", type=int, default=30, help="tests listed (default 30)")
    ap.add_argument("--json", type=Path, metavar="FILE",
                    help="also write every test's CPU s by kind of process and its idle "
                         "core seconds there, for comparing two runs test by test")
    ap.add_argument("command", nargs=argparse.REMAINDER, help="e.g. ./test.sh")
    args = ap.parse_args()
    if not args.command:
        ap.error("a command to run, e.g. ./test.sh")
    t0 = time.time()
    run = measure(args.command)
    per_test, per_kind, status = run.per_test, run.per_kind, run.status
    sys.path.insert(0, str(REPO))
    from tests.conftest import group_of

    groups: collections.Counter = collections.Counter()
    idle: collections.Counter = collections.Counter()
    for node, cpu in per_test.items():
        groups[group_of(node) if node.startswith("tests/") else node] += cpu
    for node, seconds in run.idle.items():
        idle[group_of(node) if node.startswith("tests/") else node] += seconds
    print(f"\n{sum(per_test.values()):.0f} CPU s in {time.time() - t0:.0f} s, exit {status}")
    print("workers' last test ended at " + ", ".join(
        f"{s:.0f} s" for s in sorted(run.last_test.values())) + " from the start; "
        f"idle core seconds while tests ran: {sum(idle.values()):.0f} by the workers, "
        f"{run.machine_idle:.0f} on the machine")
    print("CPU s by group (idle core seconds while its tests ran):")
    for name, cpu in groups.most_common():
        if cpu >= 1:
            print(f"{cpu:9.1f}  ({idle[name]:5.1f})  {name}")
    kinds: collections.Counter = collections.Counter()
    group_kinds: collections.Counter = collections.Counter()
    for (node, kind), cpu in per_kind.items():
        kinds[kind] += cpu
        group_kinds[(group_of(node) if node.startswith("tests/") else node, kind)] += cpu
    print("CPU s by kind of process:")
    for name, cpu in kinds.most_common():
        if cpu >= 1:
            print(f"{cpu:9.1f}  {name}")
    print("CPU s by group and kind of process (the 10 costliest groups):")
    for group, _ in groups.most_common(10):
        split = sorted(((c, k) for (g, k), c in group_kinds.items() if g == group and c >= 1),
                       reverse=True)
        print(f"  {group}: " + ", ".join(f"{k} {c:.0f}" for c, k in split))
    print("idle core seconds of the 15 tests that idled most:")
    for name, seconds in run.idle.most_common(15):
        print(f"{seconds:9.1f}  {name}")
    print(f"CPU s of the {args.top} costliest tests:")
    for name, cpu in per_test.most_common(args.top):
        print(f"{cpu:9.1f}  {name}")
    if args.json:
        tests: dict[str, dict] = {}
        for (node, kind), cpu in per_kind.items():
            tests.setdefault(node, {"cpu": {}, "idle": round(run.idle[node], 1)})
            tests[node]["cpu"][kind] = round(cpu, 1)
        args.json.write_text(json.dumps(tests, indent=1, sort_keys=True))
    return status


if __name__ == "__main__":
    sys.exit(main())
