"""Fixtures of the simulator tests: small simulated clusters, generated once per session."""

from __future__ import annotations

from pathlib import Path

import pytest

from kraftlake.simulate.cluster import SimConfig
from kraftlake.simulate.scenarios import DEFAULTS, Params, simulate

SMALL = {"brokers": 6, "topics": 8, "partitions": 6, "replication_factor": 3}
HOURS = {"mixed": 8.0, "quiet": 1.0}


def generate(out: Path, scenario: str, *, seed: int = 7, hours: float | None = None,
             **overrides) -> Path:
    """Run a scenario at test size into `out` and return it."""
    d = dict(DEFAULTS.get(scenario, {}))
    p = {k: overrides.pop(k, SMALL[k]) for k in SMALL}
    params = Params(hours=hours if hours is not None else HOURS.get(scenario, 2.0), **p)
    cfg = SimConfig(out=out, seed=seed, brokers=params.brokers,
                    elr=overrides.pop("elr", d.get("elr", False)),
                    txn_threshold=overrides.pop("txn_threshold", d.get("txn_threshold", 10_000)),
                    **overrides)
    simulate(scenario, cfg, params)
    return out


@pytest.fixture(scope="session")
def scenario_dir(tmp_path_factory):
    """scenario name -> generated directory (cached for the session)."""
    cache: dict[str, Path] = {}

    def get(name: str) -> Path:
        if name not in cache:
            cache[name] = generate(tmp_path_factory.mktemp(name), name)
        return cache[name]

    return get
