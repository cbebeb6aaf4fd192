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
sets at one reading (what the machine had to hold at once). Linux only. Prints one line;
the command's output goes to $OUT (default /dev/null).
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

TICK = os.sysconf("SC_CLK_TCK")


PAGE = os.sysconf("SC_PAGE_SIZE")


def session_usage(sid: int) -> tuple[dict[int, float], int]:
    """CPU seconds so far of each process of session `sid` (user, system, reaped children),
    and the bytes the session's processes hold resident now."""
    cpu, rss = {}, 0
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            stat = Path(f"/proc/{pid}/stat").read_text()
        except OSError:  # exited meanwhile
            continue
        fields = stat[stat.rindex(")") + 2:].split()
        if int(fields[3]) == sid:  # [3]: session id; [11:15]: utime stime cutime cstime
            cpu[int(pid)] = sum(int(x) for x in fields[11:15]) / TICK
            rss += int(fields[21]) * PAGE  # [21]: rss in pages
    return cpu, rss


def main() -> None:
    if len(sys.argv) < 2:
        raise SystemExit("usage: cpu_time.py COMMAND [ARG ...]")
    with open(os.environ.get("OUT", os.devnull), "wb") as out:
        t0 = time.monotonic()
        proc = subprocess.Popen(sys.argv[1:], start_new_session=True, stdout=out,
                                stderr=subprocess.STDOUT)
        seen: dict[int, float] = {}
        peak = 0
        while proc.poll() is None:
            cpu, rss = session_usage(proc.pid)
            for pid, secs in cpu.items():
                seen[pid] = max(seen.get(pid, 0.0), secs)
            peak = max(peak, rss)
            time.sleep(0.2)
    print(f"exit {proc.returncode}: {time.monotonic() - t0:.1f} s wall, "
          f"{sum(seen.values()):.1f} s CPU in {len(seen)} processes, "
          f"peak RSS {peak / 2**30:.2f} GiB")


if __name__ == "__main__":
    main()
