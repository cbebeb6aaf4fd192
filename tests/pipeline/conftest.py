"""Pipeline fixtures: lakes in tmp directories (the SparkSession is tests/conftest.py's)."""

from __future__ import annotations

from pathlib import Path

import pytest


@pytest.fixture(scope="session")
def cfg_factory():
    from kraftlake.config import load_config

    def make(lake: Path, **kw):
        return load_config(lake=lake, spark_master="local[2]", **kw)
    return make


@pytest.fixture
def lake_dir(tmp_path: Path) -> Path:
    return tmp_path / "lake"
