"""Where a command's Spark JVMs spend their CPU: JIT compilation and garbage collection
against the process's CPU, read from HotSpot's own counters while the command runs.

    .venv/bin/python benchmarks/jvm_counters.py ./test.sh
    .venv/bin/python benchmarks/jvm_counters.py --every 5 pytest -p no:xdist tests/pipeline

Every JVM publishes its performance counters in a memory-mapped file,
/tmp/hsperfdata_<user>/<pid> (what `jcmd PerfCounter.print` and `jstat` show). This process
reads those files directly every `--every` seconds (no JVM started for it, nothing attached
to the JVM), for each Spark JVM (a `SparkSubmit` command line), and prints each one's last
reading when the command ends: CPU (user + system, from /proc), compilation time (the JIT
threads' time spent compiling, `java.ci.totalTime`), compilations, collection time (both
generations). `--history` prints every reading too, to see whether compilation settles.
A JVM that ends between two readings shows its last one. Linux only.
"""

from __future__ import annotations

import argparse
import getpass
import struct
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from suite_cpu import TICK, processes

PERF_DIR = Path(tempfile.gettempdir()) / f"hsperfdata_{getpass.getuser()}"
COUNTERS = {"compile": "java.ci.totalTime", "compiles": "sun.ci.totalCompiles",
            "young": "sun.gc.collector.0.time", "old": "sun.gc.collector.1.time",
            "ticks_per_s": "sun.os.hrt.frequency"}


def perf_counters(path: Path) -> dict[str, int]:
    """The 64-bit scalar counters of one hsperfdata file (format: HotSpot's perfMemory.hpp:
    a prologue giving the byte order, the first entry's offset and the number of entries;
    each entry its length, name offset, vector length, type and data offset)."""
    b = path.read_bytes()
    order = "<" if b[4] == 1 else ">"
    off, n = struct.unpack_from(order + "ii", b, 24)
    out = {}
    for _ in range(n):
        length, name_off, vector, kind, _flags, _units, _var, data_off = struct.unpack_from(
            order + "iiibbbbi", b, off)
        if vector == 0 and kind == ord("J"):
            name = b[off + name_off:b.index(b"\0", off + name_off)].decode()
            out[name] = struct.unpack_from(order + "q", b, off + data_off)[0]
        off += length
    return out


def reading(pid: int, ticks: int) -> dict[str, float] | None:
    """CPU (`ticks` of it so far), compile and GC seconds of Spark JVM `pid`; None if it is
    not one (or is gone)."""
    try:
        if b"SparkSubmit" not in Path(f"/proc/{pid}/cmdline").read_bytes():
            return None
        c = perf_counters(PERF_DIR / str(pid))
    except (OSError, ValueError, IndexError, struct.error):
        return None
    hz = c.get(COUNTERS["ticks_per_s"]) or 1_000_000_000
    return {"cpu": ticks / TICK,
            "compile": c.get(COUNTERS["compile"], 0) / hz,
            "compiles": c.get(COUNTERS["compiles"], 0),
            "gc": (c.get(COUNTERS["young"], 0) + c.get(COUNTERS["old"], 0)) / hz}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--every", type=float, default=10.0, help="seconds between readings")
    ap.add_argument("--history", action="store_true", help="print every reading")
    ap.add_argument("command", nargs=argparse.REMAINDER)
    args = ap.parse_args()
    proc = subprocess.Popen(args.command)
    t0, last = time.time(), {}
    while proc.poll() is None:
        alive = processes()
        pids = [int(p.name) for p in PERF_DIR.glob("*") if p.name.isdigit()]
        for pid in (p for p in pids if p in alive):
            r = reading(pid, alive[pid][2])
            if r:
                r["at"] = time.time() - t0
                last[pid] = r
                if args.history:
                    print(f"{r['at']:7.0f} s  jvm {pid}: {r['cpu']:7.1f} CPU s, compiling "
                          f"{r['compile']:6.1f} s ({r['compiles']} methods), GC {r['gc']:5.1f} s",
                          file=sys.stderr)
        time.sleep(args.every)
    print(f"{'pid':>8} {'lived to':>9} {'CPU s':>8} {'compile s':>10} {'methods':>8} {'GC s':>6}")
    for pid, r in sorted(last.items(), key=lambda kv: -kv[1]["cpu"]):
        print(f"{pid:>8} {r['at']:>8.0f}s {r['cpu']:>8.1f} {r['compile']:>10.1f} "
              f"{r['compiles']:>8} {r['gc']:>6.1f}")
    tot = {k: sum(r[k] for r in last.values()) for k in ("cpu", "compile", "gc")}
    print(f"{len(last)} Spark JVMs: {tot['cpu']:.0f} CPU s, compiling {tot['compile']:.0f} s, "
          f"GC {tot['gc']:.0f} s (a JVM that lived under one reading is missed)")
    return proc.returncode


if __name__ == "__main__":
    sys.exit(main())
