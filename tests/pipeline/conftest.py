"""Pipeline fixtures: lakes in tmp directories (the SparkSession is tests/conftest.py's)."""

from __future__ import annotations

import shutil
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
    """`BUSY` ingested in one run: what every lake built from it in increments must equal.
    test_maintain.py and test_ingest_growth.py compare with it; they are one scheduling group
    (tests/conftest.py `JOINED`), so it is built once, not once in each."""
    from kraftlake.jobs.batch import ingest
    from kraftlake.lake.delta import Lake

    path = tmp_path_factory.mktemp("busy-once") / "lake"
    ingest(spark, cfg_factory(path), [BUSY])
    return Lake(path)


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
