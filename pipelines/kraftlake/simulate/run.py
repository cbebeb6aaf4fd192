"""The simulator's one entry point for every caller: `kraftlake simulate`, `kraftlake demo`,
the tests, the benchmarks and a notebook.

The scenario's defaults, the cluster's min.insync.replicas and the ELR default are decided
here once, so the same arguments give byte-identical output whoever runs the simulation:
the labels of a demo run are reproduced by `kraftlake simulate --scenario S --seed N
--hours H`.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from kraftlake.kraft.versions import MV_4_0_IV1, MV_LATEST, elr_on_by_default

from .cluster import SimConfig
from .scenarios import DEFAULTS, Params
from .scenarios import simulate as _run

# The demo's simulated duration: sized so the whole demo (simulate + Spark ingest + report)
# takes 1-3 minutes on 2 cores.
DEMO_HOURS = 3.0


def elr_default(scenario: str, metadata_version: int) -> bool:
    """ELR when the caller does not say: on where `kafka-storage format` turns it on
    (`kraft.versions.elr_on_by_default`), and for a scenario that needs it (`elr`) from the
    first level that supports it. A caller's explicit choice always wins (and ELR below
    that level is refused by the controller model)."""
    wanted = bool(DEFAULTS.get(scenario, {}).get("elr", False))
    return elr_on_by_default(metadata_version) or (wanted and metadata_version >= MV_4_0_IV1)


def simulate_cluster(out: Path, scenario: str = "mixed", seed: int = 0,
                     hours: float | None = None, elr: bool | None = None,
                     metadata_version: int | None = None, *,
                     brokers: int | None = None, topics: int | None = None,
                     partitions: int | None = None, replication_factor: int | None = None,
                     min_isr: int = 2, segment_bytes: int | None = None,
                     retention: bool = False,
                     progress: Callable[[int, int], None] | None = None) -> dict[str, Any]:
    """Write scenario `scenario` into `out` (a `__cluster_metadata-0` directory with
    meta.properties, labels.jsonl, final_state.json, simulation.json); returns the summary.

    Every None takes the scenario's default (`scenarios.DEFAULTS`, else `Params`'s);
    `metadata_version` defaults to the latest level modelled, `elr` to `elr_default`.
    Raises ValueError for options the model refuses (e.g. a replication factor above the
    broker count, ELR below metadata.version 4.0-IV1).

    Args:
        out: the directory to write (created).
        scenario: one of `SCENARIOS`.
        seed: the random seed; a seed gives the same log every time.
        hours: simulated duration.
        elr: eligible leader replicas on or off.
        metadata_version: the feature level to write at.
        brokers, topics, partitions, replication_factor, min_isr, segment_bytes: the
            cluster's shape (`kraftlake simulate --help`).
        retention: delete segments below the newest snapshot, as Kafka does.
        progress: called with (records written, records expected) as it goes.

    Returns:
        The summary (also written to `simulation.json`): cluster id, records, partition
        steps, labels, snapshots, end offset and the parameters used.

    Example:
        >>> import tempfile
        >>> from pathlib import Path
        >>> from kraftlake import simulate_cluster
        >>> sim = Path(tempfile.mkdtemp()) / "sim"
        >>> summary = simulate_cluster(sim, scenario="broker-crash", seed=1, hours=0.1)
        >>> summary["cluster_id"], summary["scenario"], summary["records"] > 0
        ('ECfE0cOGu8TNYT4w2PFq3w', 'broker-crash', True)
    """
    d = dict(DEFAULTS.get(scenario, {}))
    params = Params(brokers=brokers or d.get("brokers", 6), topics=topics or d.get("topics", 20),
                    partitions=partitions or d.get("partitions", 12),
                    replication_factor=replication_factor or d.get("replication_factor", 3),
                    hours=hours if hours is not None else d.get("hours", 24.0))
    if params.replication_factor > params.brokers:
        raise ValueError(f"replication factor {params.replication_factor} is larger than "
                         f"the broker count {params.brokers}")
    level = metadata_version if metadata_version is not None else MV_LATEST
    cfg = SimConfig(out=out, seed=seed, brokers=params.brokers, metadata_version=level,
                    elr=elr if elr is not None else elr_default(scenario, level),
                    min_isr=min_isr,
                    segment_bytes=segment_bytes or d.get("segment_bytes", 8 << 20),
                    retention=retention, txn_threshold=d.get("txn_threshold", 10_000),
                    **{k: d[k] for k in ("snapshot_interval_ms", "snapshot_bytes") if k in d})
    return _run(scenario, cfg, params, progress=progress)
