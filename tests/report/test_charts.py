"""The cluster chart draws every kind of trouble the intervals table holds, on the real log."""

from __future__ import annotations

from kraftlake.kraft.troubles import KINDS, UNDER_REPLICATED
from kraftlake.lake.delta import Lake
from kraftlake.report.charts import KIND_COLOURS, cluster_figure
from kraftlake.report.data import Window, clusters, load
from tests.lake_rows import table_dicts


def test_every_kind_has_its_line() -> None:
    assert set(KIND_COLOURS) == set(KINDS)


def test_open_incident_shows_under_replicated(spark, scenario_lakes) -> None:
    """The real log ends inside an incident with dozens of under-replicated partitions and
    none offline: the chart's under_replicated line rises inside that incident's span, and
    every kind the lake's intervals hold is a line of its own."""
    _, path = scenario_lakes["real"]
    lake = Lake(path)
    (cid,) = clusters(spark, lake)
    data = load(spark, lake, cid, Window(None, None))
    fig = cluster_figure(data)
    lines = {t.name: t for t in fig.data if t.type == "scatter" and t.mode == "lines"}
    held = {r["kind"] for r in table_dicts(lake.path("partition_intervals"), ["kind"])}
    assert held <= set(lines)
    (open_inc,) = [i for i in data.incidents if i["end_ts"] is None]
    ur = lines[UNDER_REPLICATED]
    start = str(open_inc["start_ts"])[:19]
    inside = [y for x, y in zip(ur.x, ur.y, strict=True)
              if str(x).replace("T", " ")[:19] >= start]
    assert max(inside) >= 10, inside[:20]
    assert len(set(ur.y)) > 1  # not flat
