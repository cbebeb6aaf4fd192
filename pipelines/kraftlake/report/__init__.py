"""Reports of what a lake holds. The HTML incident report: `data` reads the lake, `charts`
draws the plotly figures, `page` writes one self-contained HTML file per cluster (and, for
a lake of several clusters, a fleet summary linking them). On the console:
`console` prints the incidents as tables (the demo's output) and `kafka_view` holds them
against what Kafka itself reported about the same log."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

from pyspark.sql import SparkSession

from ..lake.delta import Lake
from ..lake.served import ServedLake
from .data import Window, clusters, load
from .page import render, render_fleet


def write_report(spark: SparkSession, lake: Lake | ServedLake, out: Path, *,
                 cluster_id: str | None = None, window: Window | None = None,
                 partitions: list[tuple[str, int]] | None = None) -> list[Path]:
    """Write the report of one cluster of `lake` (local, or a `kraftlake serve` endpoint's)
    to `out`, and return the pages written. Without `cluster_id`, a lake of one cluster
    gets that cluster's report; a lake of several gets a fleet summary at `out` and each
    cluster's report beside it (`<out stem>-<cluster id>.html`).

    Args:
        spark: the session to read with.
        lake: a `Lake`, or a `kraftlake serve` endpoint's lake.
        out: the HTML file to write.
        cluster_id: the cluster to report on.
        window: the time range shown (`Window`; default: all of it).
        partitions: (topic name, partition id) pairs to draw replicas over time for.

    Returns:
        The pages written.

    Example, going on from `kraftlake.ingest`'s (a lake of one cluster: one page):

        >>> from pathlib import Path
        >>> from kraftlake import Lake, write_report
        >>> out = Path(tempfile.mkdtemp()) / "report.html"
        >>> [p.name for p in write_report(spark, Lake(cfg.lake, spark), out)]
        ['report.html']
    """
    window = window or Window()
    now = dt.datetime.now(dt.UTC)
    out.parent.mkdir(parents=True, exist_ok=True)
    ids = [cluster_id] if cluster_id is not None else clusters(spark, lake)
    if not ids:
        raise ValueError("the lake holds no cluster's partitions yet")
    if len(ids) == 1:
        out.write_text(render(load(spark, lake, ids[0], window, partitions), now),
                       encoding="utf-8")
        return [out]
    pages = []
    for cid in ids:
        page = out.with_name(f"{out.stem}-{cid}.html")
        data = load(spark, lake, cid, window, partitions)
        page.write_text(render(data, now), encoding="utf-8")
        pages.append((data, page))
    out.write_text(render_fleet([(d, p.name) for d, p in pages], now), encoding="utf-8")
    return [out, *(p for _d, p in pages)]
