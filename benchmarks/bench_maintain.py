"""What `kraftlake maintain` costs on a small lake, per table and per step.

A stream compacts its lake inside a micro-batch every `stream.compact_every` batches, so the
time of one maintenance pass is how late that micro-batch is; a scheduled `kraftlake
maintain` pays it per run. One session ingests a real log in several increments (a small file
per table and increment, as scheduled runs leave them), then runs `maintain` twice: compaction
and checkpoints with the default retention (nothing old enough to vacuum), then with a zero
retention (vacuum deletes the tombstones). The steps are timed by wrapping the calls that make
Spark or Delta work.

    .venv/bin/python benchmarks/bench_maintain.py                 # the nurlan-abdullazada log
    .venv/bin/python benchmarks/bench_maintain.py --log DIR --cuts 7,12
    .venv/bin/python benchmarks/bench_maintain.py --threads 1     # one table after another

Prints figures; asserts nothing.
"""

from __future__ import annotations

import argparse
import functools
import shutil
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))  # tests.conftest: the suite's Spark settings

from delta.tables import DeltaOptimizeBuilder, DeltaTable  # noqa: E402
from tests.conftest import TEST_SPARK_CONF, real  # noqa: E402

from kraftlake.codec.batch import Batch, scan_batches  # noqa: E402
from kraftlake.config import load_config  # noqa: E402
from kraftlake.jobs.batch import ingest  # noqa: E402
from kraftlake.lake import maintain as m  # noqa: E402
from kraftlake.lake.delta import Lake  # noqa: E402
from kraftlake.spark import get_spark  # noqa: E402

SECONDS: dict[str, float] = defaultdict(float)
CALLS: dict[str, int] = defaultdict(int)


def timed(owner, name: str, label: str) -> None:
    inner = getattr(owner, name)

    @functools.wraps(inner)
    def wrapper(*args, **kwargs):
        t0 = time.perf_counter()
        try:
            return inner(*args, **kwargs)
        finally:
            SECONDS[label] += time.perf_counter() - t0
            CALLS[label] += 1

    setattr(owner, name, wrapper)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--log", type=Path,
                    default=real("nurlan-abdullazada__Docker-compose/data/kafka1"))
    ap.add_argument("--cuts", default="4,7,10,12",
                    help="batch indexes before which the scheduled runs saw the log end")
    ap.add_argument("--threads", type=int, default=m.THREADS,
                    help="tables maintained at once (lake.maintain.THREADS)")
    args = ap.parse_args()
    m.THREADS = args.threads
    work = Path(tempfile.mkdtemp(prefix="kraftlake-maintain-"))
    spark = get_spark(load_config(lake=str(work / "lake")), master="local[2]",
                      extra_conf=TEST_SPARK_CONF)
    grown = work / "kafka"
    shutil.copytree(args.log, grown)
    seg = grown / "__cluster_metadata-0" / "00000000000000000000.log"
    seg.chmod(0o644)
    full = seg.read_bytes()
    batches = [b for b in scan_batches(full) if isinstance(b, Batch)]
    cfg = load_config(lake=str(work / "lake"))
    cuts = [int(c) for c in args.cuts.split(",")]
    t0 = time.perf_counter()
    for i in cuts:
        seg.write_bytes(full[:batches[i].position])
        ingest(spark, cfg, [grown])
    seg.write_bytes(full)
    ingest(spark, cfg, [grown])
    print(f"{len(cuts) + 1} increments: {time.perf_counter() - t0:.1f} s")

    timed(Lake, "size", "table size (files, bytes)")
    timed(m, "count_rows", "row count")
    timed(m, "txn_versions", "transaction versions")
    timed(m, "_last_metrics", "vacuum metrics (history)")
    timed(m, "_check_txns", "transaction check")
    timed(DeltaOptimizeBuilder, "executeCompaction", "OPTIMIZE")
    timed(DeltaTable, "vacuum", "VACUUM")
    lake = Lake(cfg.lake)
    jobs = spark.sparkContext._jsc.sc().statusStore()
    for title, kw in (("compact + checkpoint (default retention)", {}),
                      ("compact + vacuum (retention 0) + checkpoint",
                       {"retention_hours": 0, "enforce_retention": False})):
        SECONDS.clear()
        CALLS.clear()
        before = jobs.jobsList(None).size()
        t0 = time.perf_counter()
        done = m.maintain(lake, **kw)
        took = time.perf_counter() - t0
        print(f"\nmaintain, {title}: {took:.1f} s for {len(done)} tables, "
              f"{jobs.jobsList(None).size() - before} Spark jobs")
        for r in sorted(done, key=lambda r: -r.seconds):
            print(f"  {r.seconds:6.2f}  {r.table}: files {r.files_before} -> {r.files_after},"
                  f" vacuumed {r.vacuumed}")
        print("  by step (the rest is checkpoints and snapshot updates):")
        for step, s in sorted(SECONDS.items(), key=lambda kv: -kv[1]):
            print(f"  {s:6.2f}  {step} ({CALLS[step]} calls)")
    spark.stop()


if __name__ == "__main__":
    main()
