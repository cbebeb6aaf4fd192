"""One real lake for the read commands' tests (timeline, sql): the `mixed` scenario of the
simulator, 1 simulated hour with ELR, ingested by the real job."""

from __future__ import annotations

from pathlib import Path

import pytest

from kraftlake import ingest_dir, read_labels, simulate_cluster


@pytest.fixture(scope="package")
def sim_lake(spark, tmp_path_factory) -> tuple[Path, list[dict]]:
    base = tmp_path_factory.mktemp("timeline")
    sim, lake = base / "cluster", base / "lake"
    simulate_cluster(sim, "mixed", seed=1, hours=1.0, elr=True)
    ingest_dir(spark, sim, lake)
    return lake, read_labels(sim)
