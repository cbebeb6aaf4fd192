"""What `/metrics` serves is what the README lists: every metric of
`metrics.exposition.METRICS` is served for a cluster whose numbers are all known, with the
numbers given, in the text format Prometheus parses (prometheus_client's parser), and the
README's table names each one (no Spark: the numbers are set, as a stream's watch sets
them)."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

from kraftlake.kraft.events import EVENT_TYPES
from kraftlake.metrics.exposition import GAUGES, METRICS, serve_metrics
from kraftlake.metrics.state import Fleet

from .scrape import scrape

README = Path(__file__).resolve().parents[2] / "README.md"


def test_every_metric_is_served_with_its_number() -> None:
    fleet = Fleet()
    gauges = {key: i for i, (key, _help) in enumerate(GAUGES.values(), 1)}
    stamp = dt.datetime(2026, 12, 1, 12, tzinfo=dt.UTC)
    fleet.update("c1", gauges=gauges, last_offset=41, last_timestamp=stamp, batches=2,
                 batch_seconds=3.5, last_batch_seconds=1.5)
    fleet.add("c1", restarts=1, failures=2)
    fleet.add_events("c1", {"unclean_election": 3})
    server = serve_metrics(fleet, 0)
    try:
        got = scrape(server.port, "c1")
    finally:
        server.close()
    want = {**{name: gauges[key] for name, (key, _help) in GAUGES.items()},
            **{f"events:{e}": 3 if e == "unclean_election" else 0 for e in EVENT_TYPES},
            "kraftlake_last_applied_offset": 41,
            "kraftlake_last_applied_record_timestamp_seconds": stamp.timestamp(),
            "kraftlake_stream_batch_seconds_count": 2, "kraftlake_stream_batch_seconds_sum": 3.5,
            "kraftlake_stream_last_batch_seconds": 1.5, "kraftlake_stream_restarts_total": 1,
            "kraftlake_stream_failures_total": 2}
    age = got.pop("kraftlake_last_applied_record_age_seconds")
    assert age >= (dt.datetime.now(dt.UTC) - stamp).total_seconds() - 5
    assert got == want
    served = {k for k in got if not k.startswith("events:")} | {
        "kraftlake_partition_events_total", "kraftlake_last_applied_record_age_seconds"}
    assert set(METRICS) == {s.removesuffix("_count").removesuffix("_sum") for s in served}


def test_the_readme_names_every_metric() -> None:
    text = README.read_text(encoding="utf-8")
    missing = [m for m in METRICS if f"`{m}" not in text]
    assert missing == []
