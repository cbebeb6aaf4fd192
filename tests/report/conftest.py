"""Lakes for the report tests: simulated scenarios and a real incident log, ingested once.

The SparkSession fixture is the session one of tests/conftest.py (`local[2]`).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from kraftlake import ingest_dir, simulate_cluster
from tests.conftest import real

# id -> (scenario, hours): small runs that still have every kind of incident
SCENARIOS = {"mixed": ("mixed", 1.0), "broker-crash": ("broker-crash", 0.75)}
# a real 3-broker Kafka 4.1 cluster whose brokers were restarted 39 times (INVENTORY.md)
REAL_INCIDENTS = real("ogs59__docker-compose-kafka4.10/data/kafka-1/__cluster_metadata-0")


@pytest.fixture(scope="session")
def scenario_lakes(spark, tmp_path_factory) -> dict[str, tuple[Path, Path]]:
    """id -> (metadata-log directory, lake) for every SCENARIOS entry and `real`."""
    out = {}
    for name, (scenario, hours) in SCENARIOS.items():
        base = tmp_path_factory.mktemp(name)
        simulate_cluster(base / "cluster", scenario, seed=1, hours=hours, elr=False)
        ingest_dir(spark, base / "cluster", base / "lake")
        out[name] = (base / "cluster" / "__cluster_metadata-0", base / "lake")
    base = tmp_path_factory.mktemp("real")
    ingest_dir(spark, REAL_INCIDENTS.parent, base / "lake")
    out["real"] = (REAL_INCIDENTS, base / "lake")
    return out
