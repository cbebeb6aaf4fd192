"""Event detection against the simulator's ground truth: precision and recall per event type.

    python benchmarks/bench_events.py [--hours 1] [--seed 1] [--scenario NAME ...]
                                      [--master local[2]] [--examples]

For every scenario (plus `mixed` with ELR on, since `mixed` has it off by default) this
simulates a cluster with a fixed seed into a temporary directory, ingests it into a fresh
temporary lake with the library calls `kraftlake ingest` makes (one SparkSession for all),
and compares `partition_events` with `labels.jsonl` by (topic_id, partition_id, offset,
event_type). Labels are the pipeline's event definitions applied by the reference replay,
so anything but 1.0 / 1.0 is a pipeline bug or a documented disagreement.
Exit status 1 if any scenario is not exact, so the script can gate a change.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

# (name shown, scenario, ELR on?, metadata.version feature level); None = the default
# (`simulate.run`: ELR is on by default at the latest level, as Kafka formats it, so the
# runs without ELR say so; `elr` has it either way). The @level runs exercise the
# heuristic rule of unclean_election: 3.1-IV0 (2) has no LeaderRecoveryState, and below
# 3.3-IV0 (4) the log has no FeatureLevelRecord, so the metadata.version is unknown to the
# reader (3.2-IV0: unknown, yet unclean elections do set LeaderRecoveryState).
RUNS: list[tuple[str, str, bool | None, int | None]] = [
    ("quiet", "quiet", False, None),
    ("rolling-restart", "rolling-restart", False, None),
    ("broker-crash", "broker-crash", False, None),
    ("unclean-election", "unclean-election", False, None),
    ("elr", "elr", None, None),
    ("reassignment", "reassignment", False, None),
    ("topic-churn", "topic-churn", False, None),
    ("mixed", "mixed", False, None),
    ("mixed+elr", "mixed", True, None),
    ("unclean@3.1-IV0", "unclean-election", None, 2),
    ("mixed@3.2-IV0", "mixed", None, 3),
]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--hours", type=float, default=1.0, help="simulated hours per scenario")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--scenario", action="append", help="only these runs (repeatable)")
    ap.add_argument("--master", default="local[2]")
    ap.add_argument("--examples", action="store_true", help="print differing keys")
    a = ap.parse_args()
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    from kraftlake import (
        Score,
        compare,
        event_keys,
        ingest_dir,
        label_keys,
        lake_events,
        read_cluster_id,
        read_labels,
        simulate_cluster,
    )
    from kraftlake.config import load_config
    from kraftlake.spark import get_spark

    spark = get_spark(load_config(), master=a.master, extra_conf={
        "spark.sql.shuffle.partitions": "2", "spark.default.parallelism": "2",
        "spark.ui.enabled": "false", "spark.sql.session.timeZone": "UTC"})
    runs = [r for r in RUNS if not a.scenario or r[0] in a.scenario]
    total = Score()
    header = f"{'scenario':<17}{'event_type':<24}{'labels':>7}{'events':>7}{'prec':>7}{'rec':>7}"
    print(header)
    print("-" * len(header))
    t_all = time.perf_counter()
    for name, scenario, elr, level in runs:
        with tempfile.TemporaryDirectory(prefix=f"bench-events-{name}-") as tmp:
            sim, lake = Path(tmp) / "cluster", Path(tmp) / "lake"
            t0 = time.perf_counter()
            simulate_cluster(sim, scenario, a.seed, a.hours, elr, level)
            t1 = time.perf_counter()
            ingest_dir(spark, sim, lake)
            t2 = time.perf_counter()
            labels = label_keys(read_labels(sim))
            events = event_keys(lake_events(spark, lake, read_cluster_id(sim)))
        s = compare(events, labels)
        total.add(s)
        for t in s.types():
            print(f"{name:<17}{t:<24}{s.tp[t] + s.fn[t]:>7}{s.tp[t] + s.fp[t]:>7}"
                  f"{s.precision(t):>7.3f}{s.recall(t):>7.3f}"
                  + ("" if s.fp[t] == s.fn[t] == 0 else "   <-- differs"))
            if a.examples and (s.fp[t] or s.fn[t]):
                print(f"{'':<17}  extra  {s.fp_examples.get(t, [])}")
                print(f"{'':<17}  missed {s.fn_examples.get(t, [])}")
        print(f"{name:<17}{'(simulate / ingest s)':<24}{t1 - t0:>14.1f}{t2 - t1:>7.1f}"
              f"{'  exact' if s.exact else '  NOT EXACT'}")
        print()
    tp, fp, fn = (sum(c.values()) for c in (total.tp, total.fp, total.fn))
    print(f"{'TOTAL':<17}{'all types':<24}{tp + fn:>7}{tp + fp:>7}"
          f"{tp / max(1, tp + fp):>7.3f}{tp / max(1, tp + fn):>7.3f}"
          f"   {len(runs)} runs, {time.perf_counter() - t_all:.0f} s,"
          f" {'exact' if total.exact else 'NOT EXACT'}")
    spark.stop()
    return 0 if total.exact else 1


if __name__ == "__main__":
    sys.exit(main())
