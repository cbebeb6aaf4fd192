"""Shared test fixtures: where the real KRaft metadata logs are, and the one SparkSession.

The real files live in `../shared/fixtures/kraft-real/` beside the checkout (CI puts them
there too); $KRAFTLAKE_REAL_FIXTURES overrides the location.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

os.environ.setdefault("PYSPARK_PYTHON", sys.executable)

REPO = Path(__file__).resolve().parents[1]
REAL = Path(os.environ.get("KRAFTLAKE_REAL_FIXTURES", REPO.parent / "shared/fixtures/kraft-real"))


# The one session's settings (ARCHITECTURE: one session-scoped SparkSession fixture): two
# cores, few shuffle partitions for small test inputs, UTC so timestamps read the same
# everywhere, no UI.
TEST_SPARK_CONF = {
    "spark.ui.enabled": "false",
    "spark.sql.shuffle.partitions": "2",
    "spark.default.parallelism": "2",
    "spark.sql.session.timeZone": "UTC",
    "spark.ui.showConsoleProgress": "false",
    "spark.databricks.delta.snapshotPartitions": "2",
}


def real_files(kind: str) -> list[Path]:
    """Every real segment (`*.log`), snapshot (`*.checkpoint` in a log dir) or bootstrap file."""
    if kind == "segment":
        return sorted(REAL.rglob("*.log"))
    if kind == "snapshot":
        return sorted(p for p in REAL.rglob("*.checkpoint") if p.name != "bootstrap.checkpoint")
    if kind == "bootstrap":
        return sorted(REAL.rglob("bootstrap.checkpoint"))
    raise ValueError(kind)


def real_log_dirs() -> list[Path]:
    return sorted({p.parent for p in REAL.rglob("*.log")
                   if p.parent.name == "__cluster_metadata-0"})


@pytest.fixture(scope="session")
def real_root() -> Path:
    if not REAL.is_dir():
        pytest.fail(f"real fixtures not found at {REAL} (set KRAFTLAKE_REAL_FIXTURES)")
    return REAL


@pytest.fixture(scope="session")
def spark():
    """The SparkSession of the whole run (pipeline, quality and rules tests share it)."""
    from kraftlake.config import load_config
    from kraftlake.spark import get_spark

    s = get_spark(load_config(), master="local[2]", extra_conf=TEST_SPARK_CONF)
    yield s
    s.stop()
