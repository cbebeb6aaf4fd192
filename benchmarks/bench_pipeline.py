"""Pipeline figures: batch ingest rows/s per stage, the cost of a 1,000-record increment on a
lake with the whole history versus one without it, and streaming latency from append to a
visible event.

    .venv/bin/python benchmarks/bench_pipeline.py                        # mixed, 6 simulated hours
    .venv/bin/python benchmarks/bench_pipeline.py --scenario large       # 7 days, 100k partitions
    .venv/bin/python benchmarks/bench_pipeline.py --cluster /tmp/large   # an already simulated dir
    .venv/bin/python benchmarks/bench_pipeline.py --commit-threads 1,3 --increments 6  # A/B
    .venv/bin/python benchmarks/bench_pipeline.py --cluster /tmp/large --work /tmp/b
        # keeps the lakes in /tmp/b; run again with the same --work to re-measure steps 2 and
        # 3 (e.g. after a code change) without the first ingest

Prints figures; asserts nothing.

The last (increments + stream appends) x ~1,000 records of the log are cut off first; they
are appended back one tail at a time, as a running Kafka controller would write them.

1. Batch ingest of the cut log into the *history* lake: wall time, records/s end to end,
   beside the sequential replay on one core; rows/s and seconds per stage, and the seconds
   of each table's Delta commit.
2. Increment cost (`--increments 0` skips it): each tail is appended and ingested as one
   increment, on two lakes of the same cluster: the history lake (every state since
   offset 0: for `large` about 10 million timeline rows) and a *snapshot* lake, started
   from the newest snapshot before the cut as if retention had deleted the older segments
   (one state per partition plus the records since). Both increments read the same seeds
   and write the same rows; the ratio of their median wall times is the cost of history.
   Target: at most 1.5. Each increment's line gives its stages and each table's Delta commit.
3. Streaming: `kraftlake stream --trigger 1s` runs on the history lake; each of the next
   `--appends` tails is appended to the active segment, and the figures are the time until
   every event of the tail is visible to a reader of `partition_events` through delta-rs
   (as many as the lake holds once the tail is in; a micro-batch that began while the
   append was being written leaves the rest to the next) and until the micro-batch that
   completes it committed.
4. A scheduled run (`--new-process N`): each of the last N tails is appended and ingested
   into the history lake by a new `kraftlake ingest` process, as cron would start it; the
   figure is the process's wall time, JVM start included.
"""

from __future__ import annotations

import argparse
import itertools
import json
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import deltalake
import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from kraftlake.codec.batch import Batch, scan_batches
from kraftlake.codec.logfiles import list_log_dir
from kraftlake.config import load_config
from kraftlake.jobs import increment
from kraftlake.jobs.batch import ingest
from kraftlake.lake.delta import Lake
from kraftlake.lake.schema import table_schema
from kraftlake.sources.files import find_log_dirs, log_dir_bytes
from kraftlake.spark import get_spark

TAIL_RECORDS = 1_000
LOG = "__cluster_metadata-0"


def session(cluster: Path):
    """The session `kraftlake ingest` of this log would start (driver heap by its size)."""
    spark = get_spark(load_config(), input_bytes=sum(
        log_dir_bytes(d) for d in find_log_dirs(str(cluster))))
    spark.sparkContext.setLogLevel("ERROR")
    return spark


def simulate(out: Path, scenario: str, hours: float | None, seed: int) -> Path:
    cmd = [sys.executable, "-m", "kraftlake", "simulate", "--out", str(out), "--scenario",
           scenario, "--seed", str(seed), "--no-retention"]
    if hours is not None:
        cmd += ["--hours", str(hours)]
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)
    return out


def cut_copy(cluster: Path, dest: Path, tails: int, at: int | None = None
             ) -> tuple[list[bytes], list[int]]:
    """Copy `cluster` to `dest` as it was before offset `at` (default: its last `tails` x
    ~TAIL_RECORDS records), and cut the `tails` x ~TAIL_RECORDS records from `at` on.

    Returns the byte tails in log order and their offset bounds: the first offset of each
    tail, then the end of the last. What follows the tails is left out, and so are snapshots
    past the cut, as they would not exist yet. A log's last hour can be idle (NoOps only),
    which measures no event: `at` picks a busier stretch.
    """
    shutil.copytree(cluster, dest)
    segments, snapshots = list_log_dir(dest / LOG)
    seg = segments[-1] if at is None else next(s for s in reversed(segments) if s.offset <= at)
    buf = seg.path.read_bytes()
    batches = [b for b in scan_batches(buf) if isinstance(b, Batch)]
    start = batches[-1].next_offset - tails * TAIL_RECORDS if at is None else at
    # each tail ~TAIL_RECORDS from where the one before started, and at least one batch: a
    # large batch (a topic creation of thousands of partition records) is one tail
    cuts: list[Batch | None] = []
    least: int | None = start
    for _ in range(tails + 1):
        cut = None if least is None else next(
            (b for b in batches if b.base_offset >= least), None)
        cuts.append(cut)
        least = None if cut is None else max(cut.base_offset + TAIL_RECORDS, cut.next_offset)
    if cuts[0] is None or cuts[0] is batches[0] or (at is not None and None in cuts):
        raise SystemExit(f"the segment of {cluster} at the cut holds too few records for "
                         f"{tails} tails of {TAIL_RECORDS}")
    end = batches[-1].next_offset if cuts[-1] is None else cuts[-1].base_offset
    bounds = [c.position for c in cuts[:-1]] + [len(buf) if cuts[-1] is None
                                                  else cuts[-1].position]
    seg.path.write_bytes(buf[:bounds[0]])
    for s in segments:
        if s.offset > seg.offset:
            s.path.unlink()
    for s in snapshots:
        if s.offset > cuts[0].base_offset:
            s.path.unlink()
    return [buf[a:b] for a, b in itertools.pairwise(bounds)], \
        [c.base_offset for c in cuts[:-1]] + [end]


def snapshot_copy(log_copy: Path, dest: Path) -> int:
    """`log_copy` as retention would leave it: the newest snapshot and the segments from it."""
    shutil.copytree(log_copy, dest)
    segments, snapshots = list_log_dir(dest / LOG)
    snap = max(s.offset for s in snapshots)
    keep_from = max(s.offset for s in segments if s.offset <= snap)
    for s in segments:
        if s.offset < keep_from:
            s.path.unlink()
    for s in snapshots:
        if s.offset != snap:
            s.path.unlink()
    return snap


def append(log_copy: Path, tail: bytes) -> None:
    segments, _ = list_log_dir(log_copy / LOG)
    with segments[-1].path.open("ab") as f:
        f.write(tail)


def pad_history(lake: Lake, cluster_id: str, n: int, chunk: int = 1_000_000) -> None:
    """Add `n` closed timeline states of the same cluster: the history of topics deleted
    long ago (ids no log record names), so a lake can be given the history length of a
    busy cluster's years without ingesting years of log."""
    schema = table_schema("partition_timeline").arrow
    fixed = {"cluster_id": cluster_id, "seq": 0, "leader_recovery_state": 0,
             "is_current": False, "record_type": "PartitionChangeRecord", "source": "log"}
    for lo in range(0, n, chunk):
        ids = np.arange(lo, min(n, lo + chunk))
        k = len(ids)
        cols = {}
        for f in schema:
            t = f.type
            if f.name in fixed:
                cols[f.name] = pa.array([fixed[f.name]] * k, t)
            elif f.name == "topic_id":
                cols[f.name] = pa.array([f"deleted{i // 1000:015d}" for i in ids], t)
            elif f.name == "topic_name":
                cols[f.name] = pa.array([f"deleted-{i // 1000}" for i in ids], t)
            elif f.name == "partition_id":
                cols[f.name] = pa.array(ids % 1000, t)
            elif pa.types.is_list(t):
                cols[f.name] = pa.array([[1, 2, 3]] * k, t) if pa.types.is_integer(
                    t.value_type) else pa.nulls(k, t)
            elif pa.types.is_integer(t):
                cols[f.name] = pa.array(ids + (f.name == "valid_to_offset"), t)
            elif pa.types.is_timestamp(t):
                cols[f.name] = pa.array(ids * 1_000, pa.int64()).cast(t)
            else:
                cols[f.name] = pa.nulls(k, t)
        lake.append("partition_timeline", pa.table(cols, schema=schema))


class PeakMemory:
    """Peak resident memory of this process and all its descendants (the Spark JVM, Python
    workers), sampled every `every` seconds from /proc: what the machine must have."""

    def __init__(self, every: float = 0.5) -> None:
        self.peak = 0
        self._every, self._stop = every, threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    @staticmethod
    def tree_rss(root: int) -> int:
        """Resident bytes of `root` and its descendants. A JVM starts a command (Hadoop's
        shell calls, jspawnhelper) with posix_spawn, whose child runs in the JVM's own
        address space until it execs: until then it shows the JVM's command line and its
        whole resident set, and a sample in that instant counted a 1.7 GiB JVM two or three
        times. Such a child (a `java` command line, its parent's) is left out; each
        process's command line is read with its size, as the child may be gone a moment
        later."""
        parent: dict[int, int] = {}
        rss: dict[int, int] = {}
        cmd: dict[int, bytes] = {}
        for d in Path("/proc").iterdir():
            if not d.name.isdigit():
                continue
            try:
                fields = (d / "stat").read_text().rsplit(")", 1)[1].split()
                cmd[int(d.name)] = (d / "cmdline").read_bytes()
                parent[int(d.name)] = int(fields[1])
                rss[int(d.name)] = int(fields[21]) * 4096
            except (OSError, IndexError, ValueError):
                continue
        total, todo = 0, [root]
        while todo:
            pid = todo.pop()
            mine = cmd.get(pid, b"")
            spawning = (pid != root and mine == cmd.get(parent.get(pid, -1))
                        and mine.split(b"\0", 1)[0].endswith(b"/java"))
            if not spawning:
                total += rss.get(pid, 0)
            todo += [c for c, p in parent.items() if p == pid]
        return total

    def _run(self) -> None:
        import os

        while not self._stop.wait(self._every):
            self.peak = max(self.peak, self.tree_rss(os.getpid()))

    def take(self) -> float:
        """Peak since the last call, in GiB (and start over)."""
        peak, self.peak = self.peak, 0
        return peak / (1 << 30)


def rows(lake: Lake, name: str) -> int:
    """Rows of a table (Delta answers the count from its file statistics)."""
    return lake.read(None, name).count()


def spark_jobs(spark) -> int:  # type: ignore[no-untyped-def]
    """Spark jobs the session has started so far (job ids are numbered from 0)."""
    ids = spark.sparkContext.statusTracker().getJobIdsForGroup(None)
    return max(ids, default=-1) + 1


def increments(spark, cfg, log_copy: Path, tails: list[bytes],  # type: ignore[no-untyped-def]
               threads: list[int]) -> list[float]:
    """Wall seconds of each tail's increment; `threads`: increment.COMMIT_THREADS for each
    increment in turn (an A/B in one run, under the same load), none: as configured."""
    took = []
    by_threads: dict[int, list[float]] = {}
    for i, tail in enumerate(tails):
        if threads:
            increment.COMMIT_THREADS = threads[i % len(threads)]
        append(log_copy, tail)
        jobs = spark_jobs(spark)
        marks: list[tuple[str, int]] = []  # (stage, Spark jobs started before it)
        t = time.perf_counter()
        res = ingest(spark, cfg, [log_copy], log=lambda m, marks=marks: marks.append(
            (m.split(":", 1)[0], spark_jobs(spark))))
        took.append(time.perf_counter() - t)
        marks.append(("", spark_jobs(spark)))
        per_stage = ", ".join(f"{a} {m - n}" for (a, n), (_, m) in itertools.pairwise(marks))
        jobs = spark_jobs(spark) - jobs
        by_threads.setdefault(increment.COMMIT_THREADS, []).append(took[-1])
        stages = ", ".join(f"{k} {v:.1f}" for k, v in res[0].stage_seconds.items())
        commits = ", ".join(f"{k} {v:.1f}" for k, v in sorted(
            res[0].commit_seconds.items(), key=lambda kv: -kv[1]))
        print(f"    increment of {sum(r.records for r in res):,} records "
              f"(COMMIT_THREADS={increment.COMMIT_THREADS}): {took[-1]:.1f} s, {jobs} Spark "
              f"jobs ({stages}); "
              f"Delta commits: {commits}; Spark jobs by stage: {per_stage}")
    if len(by_threads) > 1:
        print("    median by COMMIT_THREADS: " + ", ".join(
            f"{n}: {statistics.median(v):.1f} s" for n, v in sorted(by_threads.items())))
    return took


def _visible(lake_dir: Path, name: str, where: pc.Expression | None = None) -> pa.Table:
    """What a reader outside the stream's JVM sees of a table now (delta-rs, latest version);
    an empty table before the table's first commit."""
    try:
        dt = deltalake.DeltaTable(str(lake_dir / name))
    except deltalake.exceptions.TableNotFoundError:
        return pa.table({})
    return dt.to_pyarrow_dataset().to_table(filter=where)


def stream_latency(log_copy: Path, lake_dir: Path, tails: list[bytes],
                   offsets: list[int]) -> None:
    """Run `kraftlake stream` on the history lake; append each tail and time it."""
    err_path = lake_dir.parent / "stream.stderr"
    with err_path.open("w") as err:
        proc = subprocess.Popen([sys.executable, "-m", "kraftlake", "stream", str(log_copy / LOG),
                                 "--lake", str(lake_dir), "--trigger", "1s"],
                                stdout=subprocess.DEVNULL, stderr=err)
    try:
        started = time.time()
        while "streaming " not in err_path.read_text():
            if proc.poll() is not None or time.time() - started > 600:
                raise SystemExit(f"the stream did not start:\n{err_path.read_text()}")
            time.sleep(0.5)
        time.sleep(5)  # its first triggers find nothing new
        for tail, (first, end) in zip(tails, itertools.pairwise(offsets), strict=True):
            seen: list[tuple[float, int]] = []  # (seconds after the append, events visible)
            committed = None
            t0 = time.perf_counter()
            append(log_copy, tail)
            in_tail = (pc.field("offset") >= first) & (pc.field("offset") < end)
            while committed is None:
                now = time.perf_counter() - t0
                n = _visible(lake_dir, "partition_events", in_tail).num_rows
                if not seen or n != seen[-1][1]:
                    seen.append((now, n))
                prog = _visible(lake_dir, "ingest_progress")
                if prog.num_rows and pc.max(prog["end_offset"]).as_py() >= end:
                    committed = now
                if proc.poll() is not None or now > 600:
                    raise SystemExit(f"the stream stopped or stalled:\n{err_path.read_text()}")
                time.sleep(0.2)
            # every event of the append: the first poll that saw as many as the lake holds
            # once the append's micro-batch(es) committed
            total = _visible(lake_dir, "partition_events", in_tail).num_rows
            every = next((t for t, n in seen if n == total), committed)
            event = (f"all {total} events visible after {every:.1f} s" if total
                     else "no event in this tail (the log is quiet here: try --cut-at)")
            print(f"    append of {end - first:,} offsets: {event}, micro-batch committed "
                  f"after {committed:.1f} s")
    finally:
        proc.kill()
        proc.wait()


LOGS_AND_LAKES = ("history-log", "snapshot-log", "history-lake", "snapshot-lake")


def yardstick(log: Path) -> tuple[float, int]:
    """(seconds, steps) of the sequential replay of `log`, in a process of its own: in this
    one, the memory it took would stay with the process through the ingest measured next
    (its 1.4 million steps of a 24-hour `large` log: about 1.5 GiB)."""
    code = ("import sys, time; from pathlib import Path; "
            "from kraftlake.reference.replay import replay_dir; t = time.perf_counter(); "
            "_, steps = replay_dir(Path(sys.argv[1])); "
            "print(time.perf_counter() - t, len(steps))")
    out = subprocess.run([sys.executable, "-c", code, str(log)], check=True,
                         capture_output=True, text=True).stdout.split()
    return float(out[0]), int(out[1])


def build(tmp: Path, cluster: Path, tails: int, memory: PeakMemory,
          spark, at: int | None = None) -> tuple[dict, list[bytes]]:  # type: ignore[no-untyped-def]
    """Step 1: the cut log, its snapshot copy and both lakes, saved under `tmp/base` with
    the tails, so that a later run with the same --work only restores them."""
    tail_bytes, offsets = cut_copy(cluster, tmp / "history-log", tails, at)
    snap = snapshot_copy(tmp / "history-log", tmp / "snapshot-log")
    print(f"1. batch ingest of {cluster.name} up to offset {offsets[0]:,}")
    yard, steps = yardstick(tmp / "history-log" / LOG)
    memory.take()  # the ingest's peak alone
    t = time.perf_counter()
    r = ingest(spark, load_config(lake=str(tmp / "history-lake")), [tmp / "history-log"])[0]
    wall = time.perf_counter() - t
    print(f"  {r.records:,} records, {r.changes:,} changes, {r.timeline:,} timeline rows, "
          f"{r.events:,} events in {wall:.1f} s wall = {r.records / wall:,.0f} records/s")
    print(f"  yardstick, the sequential replay (reference/replay.py) on one core: decode + fold "
          f"in {yard:.1f} s ({steps:,} steps); ingest / replay = {wall / yard:.1f}")
    # rows each stage handles (jobs/increment.py says what each stage does)
    stage_rows = {"decode": r.records, "silver": r.changes, "kernel": r.changes,
                  "commit": r.records, "current": r.timeline}
    for name, secs in r.stage_seconds.items():
        n = stage_rows.get(name)
        rate = f"{n / secs:>10,.0f} rows/s" if n and secs else ""
        print(f"  stage {name:<10} {secs:8.1f} s {rate}")
    print("  of which Delta commits: " + ", ".join(
        f"{k} {v:.1f} s" for k, v in r.commit_seconds.items() if v >= 0.05))
    print(f"  peak resident memory (driver, Spark JVM, workers): {memory.take():.1f} GiB")
    t = time.perf_counter()
    ingest(spark, load_config(lake=str(tmp / "snapshot-lake")), [tmp / "snapshot-log"])
    print(f"  snapshot lake: from snapshot {snap:,}, built in {time.perf_counter() - t:.1f} s")
    base = tmp / "base"
    for name in LOGS_AND_LAKES:
        shutil.copytree(tmp / name, base / name)
    for i, b in enumerate(tail_bytes):
        (base / f"tail-{i:03d}.bin").write_bytes(b)
    setup = {"offsets": offsets, "snap": snap, "cluster_id": r.cluster_id, "tails": tails}
    (base / "setup.json").write_text(json.dumps(setup))
    return setup, tail_bytes


def restore(tmp: Path) -> tuple[dict, list[bytes]]:
    """The logs and lakes as `build` left them (before any increment), and the tails."""
    base = tmp / "base"
    setup = json.loads((base / "setup.json").read_text())
    for name in LOGS_AND_LAKES:
        shutil.rmtree(tmp / name, ignore_errors=True)
        shutil.copytree(base / name, tmp / name)
    tails = [(base / f"tail-{i:03d}.bin").read_bytes() for i in range(setup["tails"])]
    return setup, tails


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--scenario", default="mixed")
    ap.add_argument("--hours", type=float, default=6.0)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--cluster", type=Path, help="an already simulated cluster directory")
    ap.add_argument("--increments", type=int, default=3)
    ap.add_argument("--appends", type=int, default=3, help="stream appends (0 = no stream)")
    ap.add_argument("--new-process", type=int, default=0, metavar="N",
                    help="increments ingested by a new `kraftlake ingest` process each")
    ap.add_argument("--commit-threads", default="", metavar="N,M,...",
                    help="increment.COMMIT_THREADS for the increments in turn (A/B)")
    ap.add_argument("--pad-history", type=int, default=0, metavar="ROWS",
                    help="add ROWS closed timeline states (deleted topics) to the history lake")
    ap.add_argument("--cut-at", type=int, metavar="OFFSET",
                    help="the tails start at this offset (default: the log's last records); "
                         "what follows them is left out")
    ap.add_argument("--work", type=Path, help="keep the lakes here (default: a temp dir); a "
                    "later run with the same --work reuses them (step 1 is skipped)")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp_s:
        tmp = args.work or Path(tmp_s)
        tmp.mkdir(parents=True, exist_ok=True)
        n_inc, n_app, n_new = args.increments, args.appends, args.new_process
        threads = [int(n) for n in args.commit_threads.split(",") if n]
        memory = PeakMemory()
        if (tmp / "base" / "setup.json").is_file():
            print(f"1. reusing the lakes built earlier in {tmp / 'base'}")
            setup, tails = restore(tmp)
            spark = session(tmp / "history-log")
        else:
            if args.cluster:
                cluster = args.cluster
            else:
                hours = None if args.scenario == "large" else args.hours
                cluster = simulate(tmp / "cluster", args.scenario, hours, args.seed)
            spark = session(cluster)
            setup, tails = build(tmp, cluster, n_inc + n_app + n_new, memory, spark,
                                 args.cut_at)
        if len(tails) < n_inc + n_app + n_new:
            raise SystemExit(f"{tmp / 'base'} holds {len(tails)} tails; fewer increments "
                             f"and appends, or a new --work")
        offsets, snap = setup["offsets"], setup["snap"]
        hist_cfg = load_config(lake=str(tmp / "history-lake"))
        snap_cfg = load_config(lake=str(tmp / "snapshot-lake"))

        if n_inc:
            print(f"2. cost of a ~{TAIL_RECORDS:,}-record increment")
            print(f"  snapshot lake (from snapshot {snap:,}): "
                  f"{rows(Lake(snap_cfg.lake), 'partition_timeline'):,} timeline rows")
            small = increments(spark, snap_cfg, tmp / "snapshot-log", tails[:n_inc], threads)
            if args.pad_history:
                t = time.perf_counter()
                pad_history(Lake(hist_cfg.lake), setup["cluster_id"], args.pad_history)
                print(f"  history lake padded with {args.pad_history:,} closed states of deleted "
                      f"topics in {time.perf_counter() - t:.1f} s")
            print(f"  history lake: {rows(Lake(hist_cfg.lake), 'partition_timeline'):,} "
                  f"timeline rows")
            big = increments(spark, hist_cfg, tmp / "history-log", tails[:n_inc], threads)
            ratio = statistics.median(big) / statistics.median(small)
            print(f"  median {statistics.median(big):.1f} s with history vs "
                  f"{statistics.median(small):.1f} s without: ratio {ratio:.2f} (target <= 1.5)")
            print(f"  peak resident memory: {memory.take():.1f} GiB")
        spark.stop()

        if n_app:
            print("3. streaming latency on the history lake (trigger 1s)")
            stream_latency(tmp / "history-log", Path(hist_cfg.lake), tails[n_inc:n_inc + n_app],
                           offsets[n_inc:n_inc + n_app + 1])
        if n_new:
            print("4. a scheduled increment in a new `kraftlake ingest` process (history lake)")
            for tail in tails[n_inc + n_app:n_inc + n_app + n_new]:
                append(tmp / "history-log", tail)
                t = time.perf_counter()
                subprocess.run([sys.executable, "-m", "kraftlake", "ingest",
                                str(tmp / "history-log"), "--lake", hist_cfg.lake], check=True,
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
                print(f"    increment of {len(tail):,} bytes: {time.perf_counter() - t:.1f} s")


if __name__ == "__main__":
    main()
