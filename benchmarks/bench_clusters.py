"""Many clusters, one lake: N clusters' logs ingested one after another versus at once.

Wall seconds and peak memory of ingests of N real clusters' logs into one new lake (issue
45: a platform team's cron or streams over a fleet write one lake, and their runs overlap).

Eight small real KRaft logs of eight different cluster ids (`LOGS`, 1,193-4,929 records,
each with partitions, so every gold table is written), checked at start. For each N of
`--n`, the first N logs:

- sequential: a new lake, the N ingests one after another in one warm SparkSession;
- concurrent: another new lake, the N ingests started at the same moment on N threads of
  the same session, as tests/pipeline/test_clusters_at_once.py runs them (Delta's
  optimistic concurrency between threads is the same as between processes: each job
  commits its own transactions against the tables' shared logs).

With `--processes`, first the same two cases with each ingest a `kraftlake ingest
--lake LAKE LOGDIR` process of its own, as a cron over a fleet runs them: each pays its
JVM's start. They get the session's Spark settings (tests.conftest.TEST_SPARK_CONF through
$KRAFTLAKE_CONF, which importing tests.conftest sets) and the command's own short-job JVM.

    .venv/bin/python benchmarks/bench_clusters.py                   # N = 1, 2, 4, 8
    .venv/bin/python benchmarks/bench_clusters.py --n 1 2
    .venv/bin/python benchmarks/bench_clusters.py --n 2 4 --processes

Three of the logs are in the real fixtures' extension beside the checkout
(`../shared/fixtures/kraft-real/`, or $KRAFTLAKE_REAL_FIXTURES), as for the tests.

One warm-up ingest (of a log into a lake of its own) comes before the timed cases, in the
session and, with `--processes`, as a process; it is reported apart. Peak memory is the
resident memory of this process and all its descendants (the session's JVM, its Python
workers, the `kraftlake` processes and theirs), sampled every 0.5 s
(`bench_pipeline.PeakMemory`). The session's JVM keeps much of the heap it grew in earlier
cases, so an in-session peak says what the session needs by then, not what the case alone
would; the cases run by increasing N, sequential before concurrent. Each case prints whether
every ingest succeeded (in the session: no exception and nothing refused; as processes:
exit status 0), the commit conflicts Delta raised and kraftlake retried (in the session
only), the rows of `records` and `partition_current` and the clusters the lake holds, and
whether every table holds as many rows as the sequential lake's. Prints figures; asserts
nothing but that the logs are of distinct clusters.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))  # tests.conftest: the suite's Spark settings, the real logs

import deltalake  # noqa: E402
from benchmarks.bench_pipeline import PeakMemory  # noqa: E402
from tests.conftest import TEST_SPARK_CONF, real  # noqa: E402

from kraftlake.config import load_config  # noqa: E402
from kraftlake.jobs.batch import ingest  # noqa: E402
from kraftlake.lake import delta  # noqa: E402
from kraftlake.lake.schema import table_names  # noqa: E402
from kraftlake.sources.files import find_log_dirs, read_cluster_id  # noqa: E402
from kraftlake.spark import get_spark  # noqa: E402

# (log directory, records, PartitionRecords, PartitionChangeRecords) from the fixtures'
# INVENTORY.md: one segment each, and a meta.properties naming the log's own cluster id
LOGS = [
    ("Niloufar1171__LDI-POC", 4929, 54, 54),
    ("nomanazeem__Kafka-java/kafka-logs", 2067, 53, 159),
    ("Ammar777782439__django_kafka_project/kafka1-data", 3667, 51, 0),
    ("Viso-Lake__kafka_service/kafka1/data", 1193, 50, 100),
    ("hiage__kafka-raft/data/kafka1", 2982, 60, 0),
    ("subpxl__streamprocessing/data", 1299, 51, 255),
    ("mavila01-prog__kafka_tutorial/kafka1/data", 3088, 9, 27),
    ("cooler-SAI__go-KafkaProject/kafka-data", 2715, 2, 4),
]


def checked_logs() -> list[tuple[Path, str]]:
    """(directory, cluster id) of each of LOGS; refuses to run unless every one is a single
    metadata log with a cluster id of its own."""
    logs = []
    for rel, *_ in LOGS:
        path = real(rel)
        dirs = find_log_dirs(str(path))
        cid = read_cluster_id(dirs[0]) if len(dirs) == 1 else None
        if cid is None:
            raise SystemExit(f"{path}: not one metadata log with a cluster id ({dirs})")
        logs.append((path, cid))
    ids = [cid for _, cid in logs]
    if len(set(ids)) != len(ids):
        raise SystemExit(f"the logs' cluster ids are not distinct: {ids}")
    return logs


class Conflicts:
    """Counts the commits Delta refused for another writer's, which kraftlake's
    `delta._retrying` runs again: each attempt is wrapped, then handed to the original."""

    def __init__(self) -> None:
        self.count = 0
        self._lock = threading.Lock()
        original = delta._retrying

        def counting(write: Callable[[], bool]) -> bool:
            def attempt() -> bool:
                try:
                    return write()
                except delta.COMMIT_CONFLICTS:
                    with self._lock:
                        self.count += 1
                    raise
            return original(attempt)

        delta._retrying = counting

    def take(self) -> int:
        n, self.count = self.count, 0
        return n


def lake_figures(lake: Path) -> dict[str, int]:
    """Rows of every table of `lake` (delta-rs, latest version; 0: no such table), and the
    clusters in `records` under the key `clusters`."""
    rows = {}
    for name in table_names():
        try:
            rows[name] = deltalake.DeltaTable(str(lake / name)).to_pyarrow_dataset().count_rows()
        except deltalake.exceptions.TableNotFoundError:
            rows[name] = 0
    ids = (deltalake.DeltaTable(str(lake / "records")).to_pyarrow_dataset()
           .to_table(columns=["cluster_id"])["cluster_id"].unique() if rows["records"] else [])
    rows["clusters"] = len(ids)
    return rows


def report(label: str, n: int, wall: float, each: list[float], ok: list[bool], peak: float,
           lake: Path, conflicts: int | None, seq_rows: dict[str, int] | None) -> dict[str, int]:
    rows = lake_figures(lake)
    same = ""
    if seq_rows is not None:
        differ = [t for t in table_names() if rows[t] != seq_rows[t]]
        same = "; every table as many rows as sequential" if not differ else \
            "; rows differ from sequential in " + ", ".join(
                f"{t} ({rows[t]:,} vs {seq_rows[t]:,})" for t in differ)
    retried = "" if conflicts is None else f", {conflicts} commit conflicts retried"
    print(f"  N={n} {label}: {wall:.1f} s wall, peak {peak:.2f} GiB; {sum(ok)}/{n} ingests "
          f"ok{retried}; {rows['records']:,} records, {rows['partition_current']:,} "
          f"partition_current rows, {rows['clusters']} clusters{same}", flush=True)
    print("    each ingest: " + ", ".join(f"{t:.1f}" for t in each) + " s", flush=True)
    return rows


def in_session(spark, lake: Path, log: Path) -> tuple[float, bool]:  # type: ignore[no-untyped-def]
    """(seconds, success) of one ingest of `log` into `lake` in the session."""
    t0 = time.perf_counter()
    try:
        res = ingest(spark, load_config(lake=lake, spark_master="local[2]"), [log])
        ok = len(res) == 1 and res[0].refused is None and res[0].records > 0
    except Exception as exc:  # a failed job is a figure here
        print(f"    ingest of {log} failed: {type(exc).__name__}: "
              f"{str(exc).splitlines()[0] if str(exc) else ''}", flush=True)
        ok = False
    return time.perf_counter() - t0, ok


def as_process(lake: Path, log: Path, out: Path) -> tuple[float, bool]:
    """(seconds, success) of `kraftlake ingest --lake LAKE LOG` as a process of its own."""
    t0 = time.perf_counter()
    with out.open("w") as fh:
        rc = subprocess.run([sys.executable, "-m", "kraftlake", "ingest", "--lake", str(lake),
                             str(log)], stdout=fh, stderr=subprocess.STDOUT).returncode
    took = time.perf_counter() - t0
    if rc != 0:
        tail = out.read_text().strip().splitlines()[-1:] or [""]
        print(f"    ingest of {log} exited {rc}: {tail[0]} (all of it in {out})", flush=True)
    return took, rc == 0


def run_cases(label: str, job: Callable[[Path, Path, int], tuple[float, bool]],
              logs: list[Path], ns: list[int], tmp: Path, memory: PeakMemory,
              conflicts: Conflicts | None) -> None:
    """For each N: the first N logs into a new lake one after another, then into another
    new lake all at once (threads started together at a barrier)."""
    for n in ns:
        memory.take()
        seq = tmp / f"{label}-seq-{n}"
        t0 = time.perf_counter()
        results = [job(seq, log, k) for k, log in enumerate(logs[:n])]
        wall = time.perf_counter() - t0
        seq_rows = report(f"{label}, sequential", n, wall, [t for t, _ in results],
                          [ok for _, ok in results], memory.take(), seq,
                          conflicts.take() if conflicts else None, None)

        conc = tmp / f"{label}-conc-{n}"
        start = threading.Barrier(n)

        def together(k: int, conc: Path = conc, start: threading.Barrier = start
                     ) -> tuple[float, bool]:
            start.wait()
            return job(conc, logs[k], k)

        t0 = time.perf_counter()
        with ThreadPoolExecutor(n) as pool:
            results = list(pool.map(together, range(n)))
        wall = time.perf_counter() - t0
        report(f"{label}, concurrent", n, wall, [t for t, _ in results],
               [ok for _, ok in results], memory.take(), conc,
               conflicts.take() if conflicts else None, seq_rows)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, nargs="+", default=[1, 2, 4, 8],
                    choices=range(1, len(LOGS) + 1), metavar="N",
                    help=f"clusters per case, 1-{len(LOGS)} (default: 1 2 4 8)")
    ap.add_argument("--processes", action="store_true",
                    help="also each ingest as a `kraftlake ingest` process (first)")
    args = ap.parse_args()
    checked = checked_logs()
    logs = [path for path, _ in checked]
    for (rel, records, prs, pcrs), (_, cid) in zip(LOGS, checked, strict=True):
        print(f"log {rel}: cluster {cid}, {records:,} records, {prs} PartitionRecords, "
              f"{pcrs} PartitionChangeRecords")
    tmp = Path(tempfile.mkdtemp(prefix="bench-clusters-"))
    memory = PeakMemory()

    if args.processes:  # before the session starts: its JVM would count in their peaks
        print("as processes (`kraftlake ingest`, a JVM each):", flush=True)
        memory.take()
        took, ok = as_process(tmp / "proc-warmup", logs[0], tmp / "proc-warmup.out")
        print(f"  warm-up (1 process, {logs[0].name}): {took:.1f} s, ok {ok}, peak "
              f"{memory.take():.2f} GiB", flush=True)

        def process(lake: Path, log: Path, k: int) -> tuple[float, bool]:
            return as_process(lake, log, lake.parent / f"{lake.name}-{k}.out")

        run_cases("processes", process, logs, args.n, tmp, memory, None)

    print("in one session (local[2], tests.conftest.TEST_SPARK_CONF):", flush=True)
    memory.take()
    t0 = time.perf_counter()
    spark = get_spark(load_config(), master="local[2]", extra_conf=dict(TEST_SPARK_CONF))
    spark.sparkContext.setLogLevel("ERROR")
    started = time.perf_counter() - t0
    took, ok = in_session(spark, tmp / "warmup", logs[0])
    print(f"  session start {started:.1f} s; warm-up ingest ({logs[0].name}): {took:.1f} s, "
          f"ok {ok}, peak {memory.take():.2f} GiB", flush=True)
    conflicts = Conflicts()
    run_cases("session", lambda lake, log, _k: in_session(spark, lake, log), logs, args.n,
              tmp, memory, conflicts)
    spark.stop()
    print(f"lakes and process outputs kept in {tmp}")


if __name__ == "__main__":
    main()
