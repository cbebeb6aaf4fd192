"""One cluster's live numbers, counted from the slices a stream holds, and the fleet of them.

Counting happens once per micro-batch (`count`), on the stream's thread; a scrape reads the
numbers last counted (`Fleet.snapshot`) on the HTTP server's. Each gauge is one of Kafka's
rules applied to the held state: the controller's gauges by `kraft.gauges`, the troubles
(under min ISR, under-replicated, offline, recovering) as the open `partition_intervals`
the fold judged with `kraft.troubles`, so no rule is written twice.
"""

from __future__ import annotations

import datetime as dt
import threading
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any

import pyarrow as pa

from ..kraft.brokers import fenced_brokers
from ..kraft.events import EVENT_TYPES
from ..kraft.gauges import controller_gauges
from ..kraft.troubles import RECOVERING_KIND, UNDER_MIN_ISR, UNDER_REPLICATED

# the held slices the numbers are counted from (`jobs.seed.SLICES`)
COUNTED_FROM = ("partition_current", "partition_intervals", "incidents", "brokers",
                "ingest_progress")
# open interval kind -> the gauge counting its partitions
TROUBLE_GAUGES = {UNDER_MIN_ISR: "under_min_isr", UNDER_REPLICATED: "under_replicated",
                  RECOVERING_KIND: "recovering"}


@dataclass(frozen=True)
class ClusterNumbers:
    """What a scrape prints for one cluster (a value object: replaced, never changed)."""

    gauges: dict[str, int] = field(default_factory=dict)  # kraft.gauges.GAUGES and troubles
    events: dict[str, int] = field(default_factory=lambda: dict.fromkeys(EVENT_TYPES, 0))
    last_offset: int | None = None  # the log's last applied offset
    last_timestamp: dt.datetime | None = None  # the time of that record (None: not read yet)
    batches: int = 0
    batch_seconds: float = 0.0  # all micro-batches'
    last_batch_seconds: float | None = None
    restarts: int = 0
    failures: int = 0


def count(slices: Mapping[str, pa.Table]) -> tuple[dict[str, int], int | None]:
    """The gauges of one cluster's held slices (`COUNTED_FROM`), and its last applied log
    offset (None: nothing ingested)."""
    current = slices["partition_current"].select(
        ["topic_name", "leader", "replicas", "eligible_leader_replicas"]).to_pylist()
    brokers = sorted(slices["brokers"].select(
        ["offset", "seq", "broker_id", "record_type", "fenced", "in_controlled_shutdown",
         "broker_epoch"]).to_pylist(), key=lambda r: (r["offset"], r["seq"]))
    gauges = controller_gauges(current, fenced_brokers(brokers))
    gauges["elr_partitions"] = sum(bool(s["eligible_leader_replicas"]) for s in current)
    intervals = slices["partition_intervals"].select(["topic_id", "partition_id", "kind"])
    kinds = Counter(k for _t, _p, k in set(zip(*(intervals[c].to_pylist()
                                                 for c in intervals.column_names),
                                               strict=True)))
    gauges.update({name: kinds.get(kind, 0) for kind, name in TROUBLE_GAUGES.items()})
    gauges["open_incidents"] = slices["incidents"].num_rows
    ends = [e for e in slices["ingest_progress"]["end_offset"].to_pylist() if e]
    return gauges, (max(ends) - 1 if ends else None)


class Fleet:
    """Every cluster's `ClusterNumbers`, by cluster id; safe between the stream's threads
    and the HTTP server's."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._numbers: dict[str, ClusterNumbers] = {}

    def update(self, cluster_id: str, **changes: Any) -> None:
        """Replace some of a cluster's numbers (a new cluster starts from zeros)."""
        with self._lock:
            now = self._numbers.get(cluster_id, ClusterNumbers())
            self._numbers[cluster_id] = replace(now, **changes)

    def add(self, cluster_id: str, **increments: int | float) -> None:
        """Add to some of a cluster's counters."""
        with self._lock:
            now = self._numbers.get(cluster_id, ClusterNumbers())
            self._numbers[cluster_id] = replace(
                now, **{k: getattr(now, k) + v for k, v in increments.items()})

    def add_events(self, cluster_id: str, counts: Mapping[str, int]) -> None:
        """Add to a cluster's event counters (an event type not known yet starts at 0)."""
        with self._lock:
            now = self._numbers.get(cluster_id, ClusterNumbers())
            events = {e: now.events.get(e, 0) + counts.get(e, 0)
                      for e in now.events.keys() | counts.keys()}
            self._numbers[cluster_id] = replace(now, events=events)

    def get(self, cluster_id: str) -> ClusterNumbers:
        with self._lock:
            return self._numbers.get(cluster_id, ClusterNumbers())

    def snapshot(self) -> dict[str, ClusterNumbers]:
        """Every cluster's numbers as of now (what one scrape prints)."""
        with self._lock:
            return dict(self._numbers)
