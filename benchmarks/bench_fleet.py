"""A fleet streamed by one process: peak memory, and an append's time to `ingest_progress`.

Side by side in one run (issue 61), on simulated controllers' `mixed` logs (seeds 1-N, one
segment each, `--hours` long), the first cluster's last `--appends` x ~`--records` records
held back to be appended while the stream runs (one more append first, to warm the stream up,
reported apart):

- alone: `kraftlake stream LOGDIR --trigger 1s`, the first cluster only;
- one process: `kraftlake stream PARENT --trigger 1s` over all N clusters' directories;
- with `--processes`: N `kraftlake stream LOGDIR` processes, one per cluster, as a fleet was
  streamed before one process could.

Each case starts on a new lake and waits until every cluster's log is in it (its
`ingest_progress` row at the log's end, read with delta-rs every 0.1 s); then appends the
held-back records to the first cluster at batch boundaries, one append at a time, and takes
the time from the append to its increment's `ingest_progress` row, which is when `kraftlake
sql`, serve and the report show it. Meanwhile every other cluster's log gets a NoOpRecord
batch every 500 ms, as an idle active controller writes one (Kafka's
`metadata.max.idle.interval.ms`), so each of them has new records at every trigger too
(`--no-heartbeats`: the other logs stay still), which the stream reads every
`stream.noop_every` seconds. Peak memory is the resident
memory of the stream processes and their descendants (the JVMs, their Python workers),
sampled every 0.5 s over the whole case, the first catch-up included
(`bench_pipeline.PeakMemory`). Prints figures; asserts nothing.

    .venv/bin/python benchmarks/bench_fleet.py                     # 8 clusters
    .venv/bin/python benchmarks/bench_fleet.py --clusters 8 --processes
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

import deltalake  # noqa: E402
from benchmarks.bench_pipeline import PeakMemory  # noqa: E402

from kraftlake.codec.batch import Batch, build_batch, encode_batch, scan_batches  # noqa: E402
from kraftlake.codec.records import encode_metadata_value  # noqa: E402
from kraftlake.kraft.records import NO_OP_RECORD  # noqa: E402
from kraftlake.simulate.run import simulate_cluster  # noqa: E402


class StreamsMemory(PeakMemory):
    """`PeakMemory` of the stream processes' trees only: this process holds every simulated
    log and its batches (a few hundred MiB), which is the benchmark's, not the stream's."""

    def __init__(self, procs: list[subprocess.Popen]) -> None:
        self.procs = procs
        super().__init__()

    def _run(self) -> None:
        while not self._stop.wait(self._every):
            self.peak = max(self.peak, sum(self.tree_rss(p.pid) for p in self.procs))


class Log:
    """A simulated controller's log, copied into a watched directory up to `held` back."""

    def __init__(self, sim: Path, live: Path, held_records: int) -> None:
        segment = next((sim / "__cluster_metadata-0").glob("*.log"))
        self.data = segment.read_bytes()
        self.batches = [b for b in scan_batches(self.data) if isinstance(b, Batch)]
        self.file = live / "__cluster_metadata-0" / segment.name
        self.file.parent.mkdir(parents=True)
        shutil.copy(sim / "meta.properties", live)
        self.cluster_id = (sim / "meta.properties").read_text().split("cluster.id=")[1].split()[0]
        total = 0
        self.cut = len(self.batches)
        while self.cut > 1 and total < held_records:
            self.cut -= 1
            total += self.batches[self.cut].last_offset_delta + 1
        self.file.write_bytes(self.data[:self.batches[self.cut].position]
                              if self.cut < len(self.batches) else self.data)
        self.next = self.end()  # the offset a heartbeat takes (a log not appended to)

    def end(self) -> int:
        """The offset after the last batch written."""
        b = self.batches[self.cut - 1]
        return b.base_offset + b.last_offset_delta + 1

    def append(self, records: int) -> int:
        """Append whole batches of about `records` records; the new end offset."""
        lo, n = self.cut, 0
        while self.cut < len(self.batches) and n < records:
            n += self.batches[self.cut].last_offset_delta + 1
            self.cut += 1
        end = self.batches[self.cut - 1]
        with open(self.file, "ab") as fh:
            fh.write(self.data[self.batches[lo].position:end.position + end.size])
        return self.end()


    def heartbeat(self) -> None:
        """Append one NoOpRecord batch at the log's end, now, in the last batch's epoch."""
        last = self.batches[self.cut - 1]
        batch = build_batch(self.next, last.partition_leader_epoch, int(time.time() * 1000),
                            [NOOP])
        with open(self.file, "ab") as fh:
            fh.write(encode_batch(batch))
        self.next += 1


class Heartbeats:
    """A NoOpRecord batch every `every` s into each of `logs` (a thread), until stopped."""

    def __init__(self, logs: list[Log], every: float = 0.5) -> None:
        self.logs, self.every, self.stop = logs, every, threading.Event()
        threading.Thread(target=self._run, daemon=True).start()

    def _run(self) -> None:
        while not self.stop.wait(self.every):
            for log in self.logs:
                log.heartbeat()


NOOP = encode_metadata_value(NO_OP_RECORD, 0, {})


def progress_end(lake: Path, cid: str) -> int:
    """The end offset of the cluster's newest `ingest_progress` row (-1 without one)."""
    path = lake / "ingest_progress"
    if not deltalake.DeltaTable.is_deltatable(str(path)):
        return -1
    t = deltalake.DeltaTable(str(path)).to_pyarrow_dataset().to_table(
        columns=["cluster_id", "end_offset"], use_threads=False)
    ends = [e for c, e in zip(t["cluster_id"].to_pylist(), t["end_offset"].to_pylist(),
                                    strict=True)
            if c == cid and e is not None]
    return max(ends, default=-1)


def stream(sources: list[Path], lake: Path, log: Path) -> subprocess.Popen:
    env = {**os.environ, "PYTHONPATH": str(REPO / "pipelines")}
    with open(log, "ab") as fh:
        return subprocess.Popen([sys.executable, "-m", "kraftlake", "stream", *map(str, sources),
                                 "--lake", str(lake), "--trigger", "1s"],
                                stdout=fh, stderr=subprocess.STDOUT, env=env)


def wait(cond, procs: list[subprocess.Popen], log: Path, timeout: float = 1800) -> None:
    deadline = time.monotonic() + timeout
    while not cond():
        for p in procs:
            if p.poll() is not None:
                raise SystemExit(f"a stream ended:\n{log.read_text()[-3000:]}")
        if time.monotonic() > deadline:
            raise SystemExit(f"timed out:\n{log.read_text()[-3000:]}")
        time.sleep(0.1)


def case(name: str, work: Path, sims: list[Path], groups: list[list[int]], appends: int,
         records: int, held: int, heartbeats: bool) -> tuple[float, list[float]]:
    """One case: `groups` lists the clusters each stream process watches (by index)."""
    root = work / name
    lives = [root / "clusters" / f"c{i}" for i in range(len(sims))]
    logs = [Log(sim, live, held if i == 0 else 0) for i, (sim, live) in
            enumerate(zip(sims, lives, strict=True))]
    lake, out = root / "lake", root / "stream.log"
    t0 = time.perf_counter()
    procs = [stream([root / "clusters"] if len(g) == len(sims) > 1 else [lives[i] for i in g],
                    lake, out) for g in groups]
    peak = StreamsMemory(procs)
    try:
        streamed = [i for g in groups for i in g]
        wait(lambda: all(progress_end(lake, logs[i].cluster_id) == logs[i].end()
                         for i in streamed), procs, out)
        caught_up = time.perf_counter() - t0
        beats = Heartbeats(logs[1:]) if heartbeats and len(logs) > 1 else None
        took = []
        for _ in range(appends + 1):  # the first warms the stream up: not counted
            end = logs[0].append(records)
            t1 = time.perf_counter()
            wait(lambda e=end: progress_end(lake, logs[0].cluster_id) == e, procs, out)
            took.append(time.perf_counter() - t1)
        warm_up, took = took[0], took[1:]
        if beats is not None:
            beats.stop.set()
    finally:
        for p in procs:
            p.terminate()
        for p in procs:
            p.wait(120)
    gib = peak.take()
    print(f"{name}: {len(streamed)} cluster(s), {len(procs)} process(es): caught up in "
          f"{caught_up:.1f} s; append -> ingest_progress {warm_up:.2f} s (warm-up), "
          f"{', '.join(f'{t:.2f}' for t in took)} s (median {statistics.median(took):.2f} s); "
          f"peak memory {gib:.2f} GiB", flush=True)
    return gib, took


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--clusters", type=int, default=8)
    ap.add_argument("--hours", type=float, default=2.0)
    ap.add_argument("--appends", type=int, default=4)
    ap.add_argument("--records", type=int, default=1000)
    ap.add_argument("--processes", action="store_true", help="also one process per cluster")
    ap.add_argument("--no-heartbeats", dest="heartbeats", action="store_false",
                    help="the other clusters' logs stay still")
    args = ap.parse_args()
    work = Path(tempfile.mkdtemp(prefix="bench-fleet-"))
    sims = []
    for seed in range(1, args.clusters + 1):
        sim = work / "sims" / f"s{seed}"
        simulate_cluster(sim, "mixed", seed=seed, hours=args.hours,
                         segment_bytes=1 << 30)
        sims.append(sim)
    held = (args.appends + 1) * args.records
    n = range(args.clusters)
    alone = case("alone", work, sims[:1], [[0]], args.appends, args.records, held,
                 args.heartbeats)
    fleet = case("one process", work, sims, [list(n)], args.appends, args.records, held,
                 args.heartbeats)
    if args.processes:
        case("a process each", work, sims, [[i] for i in n], args.appends, args.records,
             held, args.heartbeats)
    ratio = statistics.median(fleet[1]) / statistics.median(alone[1])
    print(f"{args.clusters} clusters in one process: peak {fleet[0]:.2f} GiB (goal <= 3); "
          f"append -> ingest_progress median {statistics.median(fleet[1]):.2f} s, "
          f"{ratio:.2f}x one cluster alone ({statistics.median(alone[1]):.2f} s; goal <= 1.5x)")
    shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
