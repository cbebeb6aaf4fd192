"""Pipeline figures: batch ingest rows/s per stage, the cost of a small increment on a big
lake versus an empty one, and streaming latency from append to visible.

    .venv/bin/python benchmarks/bench_pipeline.py                        # mixed, 6 simulated hours
    .venv/bin/python benchmarks/bench_pipeline.py --scenario large       # the issue's scale (slow)
    .venv/bin/python benchmarks/bench_pipeline.py --pad-rows 10000000    # 10M-row timeline

Prints figures; asserts nothing.

1. Batch ingest of a simulated cluster: wall time, and for each table the rows written per
   second of (DataFrame -> Arrow) + (Delta commit) time, as the job measures them.
2. Increment cost: the log minus its last ~1,000 records is ingested, then the rest is
   appended and ingested as one increment, whose wall time is measured; once on a lake that
   holds only this cluster, once on a lake that also holds `--pad-rows` timeline rows (and
   as many current rows) of another cluster. The target is a ratio of at most 1.5.
3. Streaming: `kraftlake stream --trigger 1s` runs on the cut log; the remaining ~1,000
   records are appended to the active segment; latency is the time until `ingest_progress`
   shows them committed (by then every gold table of the micro-batch is written).
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pyarrow as pa

from kraftlake.codec.batch import Batch, scan_batches
from kraftlake.codec.logfiles import list_log_dir
from kraftlake.config import load_config
from kraftlake.jobs.batch import ingest
from kraftlake.lake.delta import Lake
from kraftlake.lake.schema import table_schema
from kraftlake.spark import get_spark

TAIL_RECORDS = 1_000


def simulate(out: Path, scenario: str, hours: float | None, seed: int) -> Path:
    cmd = [sys.executable, "-m", "kraftlake", "simulate", "--out", str(out), "--scenario",
           scenario, "--seed", str(seed), "--no-retention"]
    if hours is not None:
        cmd += ["--hours", str(hours)]
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)
    return out


def cut_copy(cluster: Path, dest: Path) -> tuple[Path, bytes, int]:
    """Copy `cluster` to `dest` without the last ~TAIL_RECORDS records of its last segment.

    Returns (dest, the bytes cut off, the first offset cut off). Snapshots past the cut are
    left out, as they would not exist yet.
    """
    shutil.copytree(cluster, dest)
    log_dir = dest / "__cluster_metadata-0"
    segments, snapshots = list_log_dir(log_dir)
    last = segments[-1].path
    buf = last.read_bytes()
    batches = [b for b in scan_batches(buf) if isinstance(b, Batch)]
    end_offset = batches[-1].next_offset
    cut = next(b for b in batches if b.base_offset >= end_offset - TAIL_RECORDS)
    last.write_bytes(buf[:cut.position])
    for s in snapshots:
        if s.offset > cut.base_offset:
            s.path.unlink()
    return dest, buf[cut.position:], cut.base_offset


def pad(lake: Lake, rows: int, chunk: int = 1_000_000) -> None:
    """Fill partition_timeline and partition_current with `rows` rows of another cluster."""
    for name in ("partition_timeline", "partition_current"):
        schema = table_schema(name).arrow
        done = 0
        while done < rows:
            n = min(chunk, rows - done)
            ids = np.arange(done, done + n)
            cols = {}
            for f in schema:
                t = f.type
                if f.name == "cluster_id":
                    cols[f.name] = pa.array(["padding-cluster"] * n, t)
                elif f.name == "topic_id":
                    cols[f.name] = pa.array([f"pad{i // 100:019d}" for i in ids], t)
                elif f.name == "topic_name":
                    cols[f.name] = pa.array([f"pad-{i // 100}" for i in ids], t)
                elif f.name == "partition_id":
                    cols[f.name] = pa.array(ids % 100, t)
                elif pa.types.is_list(t):
                    cols[f.name] = pa.array([[1, 2, 3]] * n, t) if pa.types.is_integer(
                        t.value_type) else pa.array([[]] * n, t)
                elif pa.types.is_integer(t):
                    cols[f.name] = pa.array(ids, t)
                elif pa.types.is_timestamp(t):
                    cols[f.name] = pa.array(ids * 1_000, pa.int64()).cast(t)
                elif pa.types.is_boolean(t):
                    cols[f.name] = pa.array(np.zeros(n, dtype=bool), t)
                else:
                    cols[f.name] = pa.nulls(n, t) if f.nullable else pa.array(
                        ["pad"] * n, t)
            lake.append(name, pa.table(cols, schema=schema))
            done += n


def increment_cost(spark, cluster: Path, work: Path, pad_rows: int) -> float:  # type: ignore[no-untyped-def]
    cut_dir, tail, _ = cut_copy(cluster, work / "log")
    cfg = load_config(lake=str(work / "lake"))
    lake = Lake(cfg.lake)
    lake.ensure_all()
    if pad_rows:
        t = time.perf_counter()
        pad(lake, pad_rows)
        print(f"  padded the lake with {pad_rows:,} timeline + current rows in "
              f"{time.perf_counter() - t:.1f} s")
    ingest(spark, cfg, [cut_dir])
    segments, _ = list_log_dir(cut_dir / "__cluster_metadata-0")
    with segments[-1].path.open("ab") as f:
        f.write(tail)
    t = time.perf_counter()
    res = ingest(spark, cfg, [cut_dir])
    took = time.perf_counter() - t
    print(f"  increment of {sum(r.records for r in res):,} records: {took:.1f} s")
    return took


def stream_latency(cluster: Path, work: Path) -> float:
    cut_dir, tail, first_cut = cut_copy(cluster, work / "log")
    lake = work / "lake"
    proc = subprocess.Popen([sys.executable, "-m", "kraftlake", "stream",
                             str(cut_dir / "__cluster_metadata-0"), "--lake", str(lake),
                             "--trigger", "1s"], stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)
    try:
        def committed_to() -> int:
            if not (lake / "ingest_progress").exists():
                return -1
            t = Lake(lake).read_arrow("ingest_progress")
            return max(t.column("end_offset").to_pylist() or [-1])

        deadline = time.time() + 900
        while committed_to() < first_cut and time.time() < deadline:
            time.sleep(0.5)
        segments, _ = list_log_dir(cut_dir / "__cluster_metadata-0")
        target = first_cut + TAIL_RECORDS // 2
        t0 = time.perf_counter()
        with segments[-1].path.open("ab") as f:
            f.write(tail)
        while committed_to() < target and time.time() < deadline:
            time.sleep(0.1)
        return time.perf_counter() - t0
    finally:
        proc.kill()
        proc.wait()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--scenario", default="mixed")
    ap.add_argument("--hours", type=float, default=6.0)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--pad-rows", type=int, default=2_000_000)
    ap.add_argument("--skip-stream", action="store_true")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp_s:
        tmp = Path(tmp_s)
        hours = None if args.scenario == "large" else args.hours
        cluster = simulate(tmp / "cluster", args.scenario, hours, args.seed)
        spark = get_spark(load_config())
        spark.sparkContext.setLogLevel("ERROR")

        print(f"1. batch ingest of `{args.scenario}` (seed {args.seed})")
        cfg = load_config(lake=str(tmp / "lake-batch"))
        t = time.perf_counter()
        res = ingest(spark, cfg, [cluster])
        wall = time.perf_counter() - t
        r = res[0]
        print(f"  {r.records:,} records, {r.changes:,} changes, {r.timeline:,} timeline rows, "
              f"{r.events:,} events in {wall:.1f} s wall = {r.records / wall:,.0f} records/s")
        rows = {"records": r.records, "partition_changes": r.changes,
                "partition_timeline": r.timeline, "partition_events": r.events}
        for name, (to_arrow, commit) in r.timings.items():
            n = rows.get(name)
            rate = f"{n / (to_arrow + commit):>12,.0f} rows/s" if n and to_arrow + commit else ""
            print(f"  {name:<24} compute+collect {to_arrow:6.2f} s  commit {commit:6.2f} s {rate}")

        print(f"2. cost of a ~{TAIL_RECORDS:,}-record increment")
        empty = increment_cost(spark, cluster, tmp / "inc-empty", 0)
        big = increment_cost(spark, cluster, tmp / "inc-big", args.pad_rows)
        print(f"  ratio big/empty lake: {big / empty:.2f} (target <= 1.5)")
        spark.stop()

        if not args.skip_stream:
            print("3. streaming latency, append -> committed (trigger 1s)")
            print(f"  {stream_latency(cluster, tmp / 'stream'):.1f} s")


if __name__ == "__main__":
    main()
