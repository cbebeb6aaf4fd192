"""Wall time, CPU time and peak memory of a command and every process it starts (its JVM,
Spark's Python workers, the servers a test starts), so a change can be judged by the CPU and
the memory it costs.

    .venv/bin/python benchmarks/cpu_time.py .venv/bin/pytest -p no:xdist tests/cluster/test_s3.py
    .venv/bin/python benchmarks/cpu_time.py .venv/bin/python -m kraftlake ingest LOG --lake L

The suite runs on two saturated cores, so CPU saved by one test is time given to the other
worker; wall time on an idle machine hides that (C1-only JIT: the same wall time for a third
less CPU). The command runs in a session of its own; /proc is read every 0.2 s and each
process's last reading (its own and its reaped children's CPU) is summed, so a process that
lives less than 0.2 s may be missed. Peak RSS is the largest sum of the session's resident
sets at one reading; peak PSS the largest sum of their proportional sets, which counts a
page shared by several processes (the libraries, a forked Python worker's copy-on-write
pages) once in all: what the machine had to hold at once. Linux only. Prints one line; the
command's output goes to $OUT (default /dev/null).

Neither counts a process the JVM is spawning (Hadoop's local file system runs `chmod` and
`readlink` as processes, a few hundred per small ingest): between its vfork and its exec the
child shares the JVM's memory and /proc shows it with the JVM's resident set, which a reading
at that moment would add twice.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

TICK = os.sysconf("SC_CLK_TCK")


PAGE = os.sysconf("SC_PAGE_SIZE")


def _pss(pid: str) -> int:
    """Bytes of `pid`'s proportional set size (0 if it exited meanwhile)."""
    try:
        with open(f"/proc/{pid}/smaps_rollup") as fh:
            for line in fh:
                if line.startswith("Pss:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return 0


def session_usage(sid: int) -> tuple[dict[int, float], int, int]:
    """CPU seconds so far of each process of session `sid` (user, system, reaped children),
    and the bytes the session's processes hold now: resident (RSS) and proportional (PSS).
    A child of a JVM still showing the JVM's name and address-space size is the JVM's
    vfork before an exec (module docstring) and is left out of both."""
    procs: dict[int, tuple[int, str, int, int]] = {}  # pid -> (ppid, comm, vsize, rss)
    cpu: dict[int, float] = {}
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            stat = Path(f"/proc/{pid}/stat").read_text()
        except OSError:  # exited meanwhile
            continue
        fields = stat[stat.rindex(")") + 2:].split()
        if int(fields[3]) == sid:  # [3]: session id; [11:15]: utime stime cutime cstime
            cpu[int(pid)] = sum(int(x) for x in fields[11:15]) / TICK
            comm = stat[stat.index("(") + 1:stat.rindex(")")]
            # [1]: ppid, [20]: vsize in bytes, [21]: rss in pages
            procs[int(pid)] = (int(fields[1]), comm, int(fields[20]), int(fields[21]) * PAGE)
    rss = pss = 0
    for pid, (ppid, comm, vsize, resident) in procs.items():
        parent = procs.get(ppid)
        if parent and parent[1] == "java" and (comm, vsize) == parent[1:3]:
            continue
        rss += resident
        pss += _pss(str(pid))
    return cpu, rss, pss


def measure(cmd: list[str], out=subprocess.DEVNULL, env: dict[str, str] | None = None,
            err=subprocess.STDOUT) -> tuple[int, float, float, int, int, int]:
    """(exit status, wall s, CPU s of its process tree, processes seen, peak RSS, peak PSS
    in bytes) of `cmd`, run in a session of its own, its output to `out` (its errors too,
    unless `err` says where else)."""
    t0 = time.monotonic()
    proc = subprocess.Popen(cmd, start_new_session=True, stdout=out, stderr=err, env=env)
    seen: dict[int, float] = {}
    peak = peak_pss = 0
    while proc.poll() is None:
        cpu, rss, pss = session_usage(proc.pid)
        for pid, secs in cpu.items():
            seen[pid] = max(seen.get(pid, 0.0), secs)
        peak, peak_pss = max(peak, rss), max(peak_pss, pss)
        time.sleep(0.2)
    return (proc.returncode, time.monotonic() - t0, sum(seen.values()), len(seen), peak,
            peak_pss)


def main() -> None:
    if len(sys.argv) < 2:
        raise SystemExit("usage: cpu_time.py COMMAND [ARG ...]")
    with open(os.environ.get("OUT", os.devnull), "wb") as out:
        code, wall, cpu, procs, peak, peak_pss = measure(sys.argv[1:], out)
    print(f"exit {code}: {wall:.1f} s wall, {cpu:.1f} s CPU in {procs} processes, "
          f"peak RSS {peak / 2**30:.2f} GiB, peak PSS {peak_pss / 2**30:.2f} GiB")


if __name__ == "__main__":
    main()
