"""Lakes the tests build (fixtures, registered for the whole suite by tests/conftest.py's
`pytest_plugins`) and what reads them; the SparkSession is tests/conftest.py's."""

from __future__ import annotations

import fcntl
import hashlib
import os
import shutil
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from kraftlake.config import load_config
from kraftlake.jobs.batch import ingest
from kraftlake.jobs.increment import cluster_progress
from kraftlake.jobs.progress import furthest
from kraftlake.lake.delta import Lake
from tests.lake_rows import table_dicts
from tests.logs import BUSY, BUSY_CUTS, growing_copy

# the tables a stream and a batch ingest of the same log must hold alike
TABLES = ["records", "partition_changes", "partition_timeline", "partition_events",
          "partition_current", "quarantine", "topics", "brokers", "configs"]


def built_once(tmp_path_factory: pytest.TempPathFactory, name: str,
               build: Callable[[Path], object]) -> Path:
    """Directory `name` of the test run, filled by `build(directory)` once in the run, by
    whichever xdist worker asks first: it lies under the run's temporary directory, which
    the workers share, and is built behind a file lock (another worker waits, then reads
    it). For inputs and lakes that tests only read; a test that writes works on a copy."""
    base = tmp_path_factory.getbasetemp()
    shared = (base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base) / "built-once"
    shared.mkdir(exist_ok=True)
    out = shared / name
    with open(shared / f"{name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not (shared / f"{name}.built").exists():
            shutil.rmtree(out, ignore_errors=True)
            out.mkdir()
            build(out)
            (shared / f"{name}.built").touch()
    return out


def ingested_once(spark, cfg_factory, tmp_path_factory: pytest.TempPathFactory,
                  log: Path) -> Path:
    """The lake of `log` ingested alone in one run on the worker's session, with the
    session's partition settings (TEST_SPARK_CONF's unless a module changed them): built once
    in a test run (`built_once`) for every test that compares with it, in whichever group
    and on whichever worker (a warm ingest each, 3-10 CPU s, where busy_once, the cluster
    tests' reference lake and the one-shot lakes of test_clusters_at_once.py and
    test_s3_writers.py each ingested the same logs again). Only read it."""

    settings = [spark.conf.get(k) for k in ("spark.sql.shuffle.partitions",
                                            "spark.databricks.delta.snapshotPartitions")]
    key = hashlib.sha256(f"{Path(log).resolve()}|{settings}".encode()).hexdigest()[:12]
    built = built_once(tmp_path_factory, f"{Path(log).name}-{key}",
                       lambda d: ingest(spark, cfg_factory(d / "lake"), [log]))
    return built / "lake"


@pytest.fixture(scope="session")
def cfg_factory():


    def make(lake: Path, **kw):
        return load_config(lake=lake, spark_master="local[2]", **kw)
    return make


@pytest.fixture
def lake_dir(tmp_path: Path) -> Path:
    return tmp_path / "lake"


@pytest.fixture(scope="session")
def busy_once(spark, tmp_path_factory, cfg_factory):
    """`BUSY` ingested in one run: what every lake built from it in increments must equal
    (test_maintain.py, test_ingest_growth.py; `ingested_once`, which other groups' tests
    comparing with BUSY's one-shot ingest share)."""

    return Lake(ingested_once(spark, cfg_factory, tmp_path_factory, BUSY))


@dataclass(frozen=True)
class BusyRuns:
    """`BUSY` ingested by scheduled runs (the last saw the log end before batch
    `BUSY_CUTS[-1]`): their lake and each run's result."""
    lake: Path
    results: list[Any]

    def copy(self, dest: Path) -> Path:
        """A copy of the lake to write on (copying a few hundred small files is cheap)."""
        return Path(shutil.copytree(self.lake, dest))


@pytest.fixture(scope="session")
def busy_runs(spark, tmp_path_factory, cfg_factory) -> BusyRuns:
    """`BUSY` ingested in two scheduled runs, on the log ending before batches 7 and 12.
    test_maintain.py maintains a copy of it and test_ingest_growth.py continues one with
    the next increment: built once, it saves that test's own first run (one warm ingest,
    about 8 CPU s). The tests work on copies, never on this lake."""

    base = tmp_path_factory.mktemp("busy-runs")
    grown, seg, full, batches = growing_copy(BUSY, base / "grown")
    cfg = cfg_factory(base / "lake")
    results = []
    for i in BUSY_CUTS:
        seg.write_bytes(full[:batches[i].position])
        (res,) = ingest(spark, cfg, [grown])
        results.append(res)
    return BusyRuns(base / "lake", results)


def progress_end(lake: Lake, cid: str) -> int:
    """How far the lake holds cluster `cid` (`cluster_progress`'s end offset; -1 before its
    first increment), read with delta-rs. `wait_for` asks every half second while the stream
    runs; read by Spark (`cluster_progress`), each question is a Delta snapshot and a query in
    the session that runs the stream's micro-batches, on the same two cores: 40 such reads of
    an unchanged `ingest_progress` in a warm session took 17.8 CPU s, 40 by delta-rs too
    little to tell from noise (2026-11-27, load average about 25). A test checks
    `cluster_progress` itself once the stream has stopped (`spark_progress_end`)."""
    return _end_offset(furthest(table_dicts(lake.path("ingest_progress"),
                                            filters=[("cluster_id", "=", cid)])))


def spark_progress_end(lake: Lake, cid: str) -> int:
    """`progress_end` as the jobs read it (`cluster_progress`: a Spark read)."""
    return _end_offset(cluster_progress(lake, cid))


def _end_offset(progress: dict | None) -> int:
    """A progress row's end offset; -1 for no row (before the cluster's first increment)."""
    return -1 if progress is None else int(progress["end_offset"] or 0)


def batch_lake(spark, cfg_factory, path: Path, log_dir: Path) -> Lake:
    ingest(spark, cfg_factory(path), [log_dir])
    return Lake(path)
