"""Reports of what a lake holds. The HTML incident report: `data` reads the lake, `charts`
draws the plotly figures, `page` writes one self-contained HTML file. On the console:
`console` prints the incidents as tables (the demo's output) and `kafka_view` holds them
against what Kafka itself reported about the same log."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

from pyspark.sql import SparkSession

from ..lake.delta import Lake
from ..lake.served import ServedLake
from .data import Window, clusters, load
from .page import render


def write_report(spark: SparkSession, lake: Lake | ServedLake, out: Path, *,
                 cluster_id: str | None = None, window: Window | None = None,
                 partitions: list[tuple[str, int]] | None = None) -> Path:
    """Write the report of one cluster of `lake` (local, or a `kraftlake serve` endpoint's)
    to `out`; `cluster_id` may be omitted when the lake holds one cluster."""
    if cluster_id is None:
        ids = clusters(spark, lake)
        if len(ids) != 1:
            raise ValueError(f"the lake holds {len(ids)} clusters; choose one of: "
                             f"{', '.join(ids) or '(none)'}")
        cluster_id = ids[0]
    data = load(spark, lake, cluster_id, window or Window(), partitions)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(render(data, dt.datetime.now(dt.UTC)), encoding="utf-8")
    return out
