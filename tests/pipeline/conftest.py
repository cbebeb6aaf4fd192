"""Pipeline fixtures: one SparkSession for the whole run, lakes in tmp directories."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

os.environ.setdefault("PYSPARK_PYTHON", sys.executable)

TEST_SPARK_CONF = {
    "spark.ui.enabled": "false",
    "spark.sql.shuffle.partitions": "2",
    "spark.default.parallelism": "2",
    "spark.sql.session.timeZone": "UTC",
    "spark.ui.showConsoleProgress": "false",
    "spark.databricks.delta.snapshotPartitions": "2",
}


@pytest.fixture(scope="session")
def cfg_factory():
    from kraftlake.config import load_config

    def make(lake: Path, **kw):
        return load_config(lake=lake, spark_master="local[2]", **kw)
    return make


@pytest.fixture(scope="session")
def spark():
    from kraftlake.config import load_config
    from kraftlake.spark import get_spark

    s = get_spark(load_config(), master="local[2]", extra_conf=TEST_SPARK_CONF)
    yield s
    s.stop()


@pytest.fixture
def lake_dir(tmp_path: Path) -> Path:
    return tmp_path / "lake"
