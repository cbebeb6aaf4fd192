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
# everywhere, no UI. Spark evaluates expressions without generating Java code: on the
# tests' small inputs compiling the generated code was a third of the JVM's CPU (Janino and
# its regex-based code formatter in a profile of an increment), and turning it off cut an
# increment's JVM CPU time by a fifth to a quarter. The results do not depend on it; the
# CLI tests, the demo and the cluster tests run the default (generated code).
TEST_SPARK_CONF = {
    "spark.sql.codegen.wholeStage": "false",
    "spark.sql.codegen.factoryMode": "NO_CODEGEN",
    "spark.ui.enabled": "false",
    "spark.sql.shuffle.partitions": "2",
    "spark.default.parallelism": "2",
    "spark.sql.session.timeZone": "UTC",
    "spark.ui.showConsoleProgress": "false",
    "spark.databricks.delta.snapshotPartitions": "2",
}


# ------------------------------------------------------------ running on two workers
#
# test.sh runs the suite on two pytest-xdist workers (`--dist loadgroup`): much of it waits
# on one core (Spark's driver planning, JVM starts, a Kafka scenario, the pure-Python codec)
# while the other idles. A worker takes whole groups, so a fixture shared by a group is
# built once: packages whose conftest holds session or package fixtures (a Kafka cluster,
# simulated lakes) are one group each, every other module is a group, and each kill -9 test
# is a group of its own (they share nothing and are the longest). The longest groups are
# handed out first, so the two workers finish together.
PACKAGE_GROUPS = ("cli", "cluster", "kafka", "quality", "report", "simulate")
LONGEST_FIRST = ("tests/pipeline/test_kill_restart.py", "tests/kafka", "tests/cluster",
                 "tests/cli", "tests/quality", "tests/report")


def _group(item: pytest.Item) -> str:
    rel = Path(str(item.path)).relative_to(REPO).as_posix()
    parts = rel.split("/")
    if len(parts) > 2 and parts[1] in PACKAGE_GROUPS:
        return "/".join(parts[:2])
    if rel.endswith("test_kill_restart.py"):
        return item.nodeid
    return rel


def _rank(item: pytest.Item) -> int:
    rel = Path(str(item.path)).relative_to(REPO).as_posix()
    return next((i for i, p in enumerate(LONGEST_FIRST) if rel.startswith(p)),
                len(LONGEST_FIRST))


@pytest.hookimpl(tryfirst=True)  # before xdist's own hook reads the groups
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in items:
        item.add_marker(pytest.mark.xdist_group(_group(item)))
    items.sort(key=_rank)  # stable: collection order within a rank


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
