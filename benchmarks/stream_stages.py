"""Where a streamed micro-batch's time goes: each stage, each table's commit, and Catalyst's
rules, for the appends `bench_pipeline.py`'s stream latency times.

    .venv/bin/python benchmarks/bench_pipeline.py --cluster /tmp/mixed6 --cut-at 40000 \\
        --increments 0 --appends 4 --work /tmp/sw       # builds the lakes and the tails once
    .venv/bin/python benchmarks/stream_stages.py /tmp/sw
    .venv/bin/python benchmarks/stream_stages.py /tmp/sw --set KEY=VALUE   # A/B a setting

`bench_pipeline.py` times what a reader outside the stream sees (a `kraftlake stream`
process, the tables read by delta-rs); it cannot say where a micro-batch spends it. Here
the same history lake and tails (restored from `--work`) are streamed in this process
(`jobs.stream.start_stream`, trigger 1s) and each micro-batch's `IncrementResult` is
printed as it completes: the seconds since its append, its own seconds, its stages
(`stage_seconds`) and each table's commit (`commit_seconds`). After the appends,
Catalyst's analyzer and optimizer rules that took most time over them
(`RuleExecutor.dumpTimeSpent`): the planning every micro-batch pays, which no stage
names. Prints figures; asserts nothing.
"""

from __future__ import annotations

import argparse
import re
import sys
import time
from pathlib import Path

from bench_pipeline import LOG, append, restore, session
from kraftlake.config import load_config
from kraftlake.jobs.progress import IncrementResult
from kraftlake.jobs.stream import start_stream


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("work", type=Path, help="bench_pipeline.py's --work (its `base` holds "
                    "the lakes and tails)")
    ap.add_argument("--appends", type=int, default=4)
    ap.add_argument("--pause", type=float, default=8.0,
                    help="seconds between appends (each micro-batch done before the next)")
    ap.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                    help="a Spark setting of the session, for an A/B")
    ap.add_argument("--rules", type=int, default=12, help="Catalyst rules listed")
    args = ap.parse_args()
    _setup, tails = restore(args.work)
    if len(tails) < args.appends:
        raise SystemExit(f"{args.work / 'base'} holds {len(tails)} tails")
    spark = session(args.work / "history-log")
    for kv in args.set:
        spark.conf.set(*kv.split("=", 1))
    appended: list[float] = []

    def on_batch(res: IncrementResult) -> None:
        if not res.records:
            return
        after = time.perf_counter() - appended[-1] if appended else float("nan")
        print(f"  {res.records:,} records: {after:.2f} s after the append, the micro-batch "
              f"{res.seconds:.2f} s")
        print("    stages: " + ", ".join(f"{k} {v:.2f}" for k, v in res.stage_seconds.items()))
        print("    commits: " + ", ".join(f"{k} {v:.2f}"
                                         for k, v in res.commit_seconds.items()))
        sys.stdout.flush()

    cfg = load_config(lake=str(args.work / "history-lake"))
    query = start_stream(spark, cfg, args.work / "history-log" / LOG, trigger="1s",
                         on_batch=on_batch)
    rules = spark._jvm.org.apache.spark.sql.catalyst.rules.RuleExecutor
    try:
        time.sleep(args.pause)  # its first triggers find nothing new
        rules.resetMetrics()
        for tail in tails[:args.appends]:
            appended.append(time.perf_counter())
            append(args.work / "history-log", tail)
            print(f"append of {len(tail):,} bytes")
            time.sleep(args.pause)
    finally:
        query.stop()
    spent = rules.dumpTimeSpent()
    total = re.search(r"Total time: ([0-9.]+) seconds", spent)
    print(f"Catalyst's rules over the {args.appends} appends: "
          f"{float(total.group(1)) if total else float('nan'):.2f} s, the most costly:")
    timed = re.findall(r"^(\S+)\s+(\d+) / (\d+)\s+(\d+) / (\d+)", spent, re.M)
    for name, _eff, took, _eff_runs, runs in sorted(timed, key=lambda r: -int(r[2]))[
            :args.rules]:
        print(f"  {int(took) / 1e9:6.2f} s  {runs:>5} runs  {name.rsplit('.', 1)[-1]}")


if __name__ == "__main__":
    main()
