"""What an increment of NoOps costs: the micro-batch a stream runs, over and over, while the
cluster it tails is idle (a controller writes a NoOpRecord every half second, and nothing
else for hours).

One warm session: for each of N new lakes, a real controller's log (nomanazeem's, batches
copied as a controller wrote them) is ingested up to batch 400, then grown twice by 20
batches of NoOpRecords only, each growth ingested as an increment and timed: wall seconds,
Spark jobs, and the increment's own stage times.

    .venv/bin/python benchmarks/bench_quiet.py          # 3 lakes
    .venv/bin/python benchmarks/bench_quiet.py -n 5

The first lake's increments include the JVM's warm-up. Prints figures; asserts nothing.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))  # tests.conftest: the suite's Spark settings; the real log

from tests.conftest import TEST_SPARK_CONF  # noqa: E402
from tests.logs import NOMAN, GrowingLog  # noqa: E402

from kraftlake.codec.logfiles import records_of_batch  # noqa: E402
from kraftlake.config import load_config  # noqa: E402
from kraftlake.jobs.batch import ingest  # noqa: E402
from kraftlake.spark import get_spark  # noqa: E402

QUIET = [(400, 420), (420, 440)]  # batch ranges holding NoOpRecords only


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("-n", type=int, default=3, help="lakes, one after another")
    args = ap.parse_args()
    spark = get_spark(load_config(), master="local[2]", extra_conf=dict(TEST_SPARK_CONF))
    jobs = spark.sparkContext._jsc.sc().statusStore()
    tmp = Path(tempfile.mkdtemp(prefix="bench-quiet-"))
    for k in range(args.n):
        log = GrowingLog(tmp / f"kafka{k}", NOMAN / "00000000000000000000.log", "bench-quiet")
        types = {r.type for lo, hi in QUIET for b in log.batches[lo:hi]
                 for r in records_of_batch(b)}
        assert types == {"NoOpRecord"}, types
        cfg = load_config(lake=tmp / f"lake{k}", spark_master="local[2]")
        log.write(0, QUIET[0][0])
        ingest(spark, cfg, [log.dir])
        for lo, hi in QUIET:
            log.write(lo, hi)
            before = jobs.jobsList(None).size()
            t0 = time.perf_counter()
            (res,) = ingest(spark, cfg, [log.dir])
            took = time.perf_counter() - t0
            stages = ", ".join(f"{s} {t:.2f}" for s, t in res.stage_seconds.items())
            print(f"lake {k}, batches {lo}-{hi} ({res.records} records): {took:.2f} s, "
                  f"{jobs.jobsList(None).size() - before} Spark jobs; {stages}", flush=True)


if __name__ == "__main__":
    main()
