"""Where a warm increment's time goes, step by step: one session ingests the same log into N
new lakes (what most tests and every first run of a cluster do) and the last one is broken
down by the calls that make Spark work: table creation, work frames, appends, merges, and
the DataFrame actions (count, first, collect, isEmpty, toArrow) by the kraftlake line that
asked.

    .venv/bin/python benchmarks/increment_steps.py                    # examples/real-3-broker
    .venv/bin/python benchmarks/increment_steps.py --log DIR -n 5
    .venv/bin/python benchmarks/increment_steps.py --set KEY=VALUE    # A/B a Spark setting
    .venv/bin/python benchmarks/increment_steps.py -n 8 --commit-threads 1,3  # in turn

The first increment in a session is mostly JVM warm-up (`profile_increment.py` looks at
that one); from the third on the figures are steady (±2-3 s between lakes). The steps are
timed by wrapping the methods in this process, so a step's time includes the Spark jobs it
triggers; `first` calls `collect`, so both show. Each increment's line also gives the CPU
of this process and all under it (`tree_cpu`). Prints figures; asserts nothing.
"""

from __future__ import annotations

import argparse
import functools
import os
import sys
import tempfile
import time
import traceback
from collections import defaultdict
from collections.abc import Callable
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))  # tests.conftest: the suite's Spark settings

from pyspark.sql.classic.dataframe import DataFrame  # noqa: E402
from tests.conftest import TEST_SPARK_CONF  # noqa: E402

import kraftlake  # noqa: E402
from kraftlake.config import load_config  # noqa: E402
from kraftlake.jobs import increment  # noqa: E402
from kraftlake.jobs.batch import ingest  # noqa: E402
from kraftlake.lake.delta import Lake  # noqa: E402
from kraftlake.lake.work import Work  # noqa: E402
from kraftlake.spark import get_spark  # noqa: E402

TICK = os.sysconf("SC_CLK_TCK")
PACKAGE = str(Path(kraftlake.__file__).parent) + "/"
SECONDS: dict[str, float] = defaultdict(float)  # step -> seconds, in first-seen order


def timed(cls: type, method: str, label: Callable[[tuple], str]) -> None:
    """Replace `cls.method` by a wrapper adding its wall time to SECONDS[label(args)]."""
    inner = getattr(cls, method)

    @functools.wraps(inner)
    def wrapper(self, *args, **kwargs):
        t0 = time.perf_counter()
        try:
            return inner(self, *args, **kwargs)
        finally:
            SECONDS[label(args)] += time.perf_counter() - t0

    setattr(cls, method, wrapper)


def caller() -> str:
    """The innermost line of the kraftlake package on the stack (who asked for the action).

    Matched by the package's own directory: a checkout named `kraftlake` holds the venv,
    and pyspark's frames (`first` calling `collect`) would match a bare "/kraftlake/"."""
    frames = [f for f in traceback.extract_stack()[:-3] if f.filename.startswith(PACKAGE)]
    return f"{Path(frames[-1].filename).name}:{frames[-1].lineno}" if frames else "?"


def tree_cpu() -> float:
    """CPU seconds of this process and every process under it (the JVM, Spark's Python
    workers), their reaped children included: on two saturated cores (the suite's two
    workers) CPU, not wall time, is what an increment costs the others."""
    parent, cpu = {}, {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        pid = int(stat.parent.name)
        parent[pid] = int(fields[1])
        cpu[pid] = sum(int(f) for f in fields[11:15]) / TICK
    mine, grew = {os.getpid()}, True
    while grew:
        below = {pid for pid, ppid in parent.items() if ppid in mine} - mine
        mine |= below
        grew = bool(below)
    return sum(cpu[pid] for pid in mine)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--log", type=Path, default=REPO / "examples" / "real-3-broker")
    ap.add_argument("-n", type=int, default=4, help="increments (new lakes); the last is shown")
    ap.add_argument("--set", action="append", default=[], metavar="KEY=VALUE")
    ap.add_argument("--commit-threads", default=None, metavar="N,M,...",
                    help="increment.COMMIT_THREADS for each increment in turn (an A/B run)")
    args = ap.parse_args()
    work = Path(tempfile.mkdtemp(prefix="kraftlake-steps-"))
    conf = {**TEST_SPARK_CONF, **dict(kv.split("=", 1) for kv in args.set)}
    spark = get_spark(load_config(lake=str(work / "lake")), master="local[2]", extra_conf=conf)

    for method in ("append", "upsert"):
        timed(Lake, method, lambda a, m=method: f"{m} {a[0]}")
    timed(Work, "frame", lambda a: f"work frame {a[0]}")
    for action in ("count", "first", "collect", "isEmpty", "toArrow"):
        timed(DataFrame, action, lambda a, m=action: f"{m} at {caller()}")

    threads = [int(n) for n in args.commit_threads.split(",")] if args.commit_threads else []
    for i in range(args.n):
        SECONDS.clear()
        label = ""
        if threads:
            increment.COMMIT_THREADS = threads[i % len(threads)]
            label = f" (COMMIT_THREADS={increment.COMMIT_THREADS})"
        t0, c0 = time.perf_counter(), tree_cpu()
        (res,) = ingest(spark, load_config(lake=str(work / f"lake{i}")), [args.log])
        took, cpu = time.perf_counter() - t0, tree_cpu() - c0
        print(f"increment {i + 1}{label}: {took:.1f} s ({cpu:.1f} CPU s), {res.records} "
              f"records; the steps below account for {sum(SECONDS.values()):.1f} s (first "
              f"counts collect twice; concurrent commits overlap)")
    for step, s in SECONDS.items():
        print(f"  {s:6.2f}  {step}")
    spark.stop()


if __name__ == "__main__":
    main()
