"""Time the quality suites over a lake: seconds per suite, rows validated per second.

    python benchmarks/bench_quality.py --lake DIR [--repeat 2] [--master local[2]]

The first repetition includes JVM/GX warm-up; later ones show the steady state.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from datetime import UTC, datetime


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--lake", required=True)
    ap.add_argument("--repeat", type=int, default=2)
    ap.add_argument("--master", default="local[2]")
    a = ap.parse_args()
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    from kraftlake.config import load_config
    from kraftlake.lake.delta import Lake
    from kraftlake.quality.runner import QualityContext, run_suite
    from kraftlake.quality.suites import SUITES
    from kraftlake.spark import get_spark

    spark = get_spark(load_config(), master=a.master,
                      extra_conf={"spark.sql.shuffle.partitions": "2"})
    lake, qctx = Lake(a.lake), QualityContext()
    for rep in range(a.repeat):
        total = 0.0
        for suite in SUITES:
            rows = lake.read_arrow(suite, columns=["cluster_id"]).num_rows
            t = time.perf_counter()
            outs = run_suite(spark, lake, suite, run_id=f"bench-{rep}", now=datetime.now(UTC),
                             max_age_seconds=1e12, report_dir=None, qctx=qctx)
            dt = time.perf_counter() - t
            total += dt
            print(f"rep {rep} {suite:<19} {rows:>9,} rows {len(outs):>3} expectations "
                  f"{dt:7.2f} s {rows / dt:>11,.0f} rows/s")
        print(f"rep {rep} all suites {total:.2f} s")


if __name__ == "__main__":
    main()
