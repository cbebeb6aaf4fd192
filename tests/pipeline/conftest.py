"""Pipeline fixtures: lakes in tmp directories (the SparkSession is tests/conftest.py's)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.conftest import real

# a real 3-broker log: 188 records in 13 batches, 115 partition changes
BUSY = real("nurlan-abdullazada__Docker-compose/data/kafka1")


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
