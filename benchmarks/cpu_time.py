"""Wall time and CPU time of a command and every process it starts (its JVM, Spark's Python
workers, the servers a test starts), so a change can be judged by the CPU it costs.

    .venv/bin/python benchmarks/cpu_time.py .venv/bin/pytest -p no:xdist tests/cluster/test_s3.py
    .venv/bin/python benchmarks/cpu_time.py .venv/bin/python -m kraftlake ingest LOG --lake L

The suite runs on two saturated cores, so CPU saved by one test is time given to the other
worker; wall time on an idle machine hides that (C1-only JIT: the same wall time for a third
less CPU). The command runs in a session of its own; /proc is read every 0.2 s and each
process's last reading (its own and its reaped children's CPU) is summed, so a process that
lives less than 0.2 s may be missed. Linux only. Prints one line; the command's output goes
to $OUT (default /dev/null).
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

TICK = os.sysconf("SC_CLK_TCK")


def session_cpu(sid: int) -> dict[int, float]:
    """CPU seconds so far of each process of session `sid` (user, system, reaped children)."""
    out = {}
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            stat = Path(f"/proc/{pid}/stat").read_text()
        except OSError:  # exited meanwhile
            continue
        fields = stat[stat.rindex(")") + 2:].split()
        if int(fields[3]) == sid:  # fields[3]: session id; [11:15]: utime stime cutime cstime
            out[int(pid)] = sum(int(x) for x in fields[11:15]) / TICK
    return out


def main() -> None:
    if len(sys.argv) < 2:
        raise SystemExit("usage: cpu_time.py COMMAND [ARG ...]")
    with open(os.environ.get("OUT", os.devnull), "wb") as out:
        t0 = time.monotonic()
        proc = subprocess.Popen(sys.argv[1:], start_new_session=True, stdout=out,
                                stderr=subprocess.STDOUT)
        seen: dict[int, float] = {}
        while proc.poll() is None:
            for pid, cpu in session_cpu(proc.pid).items():
                seen[pid] = max(seen.get(pid, 0.0), cpu)
            time.sleep(0.2)
    print(f"exit {proc.returncode}: {time.monotonic() - t0:.1f} s wall, "
          f"{sum(seen.values()):.1f} s CPU in {len(seen)} processes")


if __name__ == "__main__":
    main()
