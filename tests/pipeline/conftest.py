"""Pipeline fixtures: lakes in tmp directories (the SparkSession is tests/conftest.py's)."""

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

from kraftlake.codec.batch import Batch, scan_batches
from tests.conftest import real

# a real 3-broker log: 188 records in 13 batches, 115 partition changes
BUSY = real("nurlan-abdullazada__Docker-compose/data/kafka1")
# the scheduled runs of `busy_runs` saw the log end before these batches (offsets 64, 131)
BUSY_CUTS = (7, 12)


def growing_copy(log: Path, dest: Path) -> tuple[Path, Path, bytes, list[Batch]]:
    """A writable copy of `log`; returns (copy, its segment, the full bytes, the batches)."""
    shutil.copytree(log, dest)
    seg = dest / "__cluster_metadata-0" / "00000000000000000000.log"
    seg.chmod(0o644)
    full = seg.read_bytes()
    return dest, seg, full, [b for b in scan_batches(full) if isinstance(b, Batch)]


def built_once(tmp_path_factory: pytest.TempPathFactory, name: str,
               build: Callable[[Path], object]) -> Path:
    """Directory `name` of the test run, filled by `build(directory)` once in the run, by
    whichever xdist worker asks first: it lies under the run's temporary directory, which
    both workers share, and is built behind a file lock (the other worker waits, then reads
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
    from kraftlake.jobs.batch import ingest

    settings = [spark.conf.get(k) for k in ("spark.sql.shuffle.partitions",
                                            "spark.databricks.delta.snapshotPartitions")]
    key = hashlib.sha256(f"{Path(log).resolve()}|{settings}".encode()).hexdigest()[:12]
    built = built_once(tmp_path_factory, f"{Path(log).name}-{key}",
                       lambda d: ingest(spark, cfg_factory(d / "lake"), [log]))
    return built / "lake"


@pytest.fixture(scope="session")
def cfg_factory():
    from kraftlake.config import load_config

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
    from kraftlake.lake.delta import Lake

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
    from kraftlake.jobs.batch import ingest

    base = tmp_path_factory.mktemp("busy-runs")
    grown, seg, full, batches = growing_copy(BUSY, base / "grown")
    cfg = cfg_factory(base / "lake")
    results = []
    for i in BUSY_CUTS:
        seg.write_bytes(full[:batches[i].position])
        (res,) = ingest(spark, cfg, [grown])
        results.append(res)
    return BusyRuns(base / "lake", results)
