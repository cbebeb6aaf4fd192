"""One scrape of a stream's `/metrics`, as Prometheus reads it (prometheus_client's parser of
the text format), for the tests that hold the live gauges against Kafka."""

from __future__ import annotations

import urllib.request

from prometheus_client.parser import text_string_to_metric_families


def scrape(port: int, cluster_id: str) -> dict[str, float]:
    """The cluster's samples at http://127.0.0.1:PORT/metrics: a sample by its name, an
    event counter by `events:<event type>`."""
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10) as r:
        text = r.read().decode()
    out = {}
    for family in text_string_to_metric_families(text):
        for s in family.samples:
            if s.labels.get("cluster_id") != cluster_id:
                continue
            key = f"events:{s.labels['event_type']}" if "event_type" in s.labels else s.name
            out[key] = s.value
    return out
