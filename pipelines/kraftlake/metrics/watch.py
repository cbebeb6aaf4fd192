"""What a running stream tells its live gauges: its start, each micro-batch, a restart and a
failure (`kraftlake stream --metrics-port`; `jobs.stream.start_stream`'s `on_start` and
`on_batch`).

At the start the event counters are set to the lake's count of the cluster's events (one
Spark job, at the start only), so a counter continues where the lake stands rather than
from zero after a restart; each micro-batch then adds the events it committed, as soon as
`partition_events` has committed them (the first commit of its wave). The gauges
are counted again after each micro-batch from the slices the stream holds for its next one
(`jobs.seed.held_slices`): nothing is read from the tables between micro-batches.
"""

from __future__ import annotations

import datetime as dt

from pyspark.sql import SparkSession
from pyspark.sql import functions as F

from ..jobs.progress import IncrementResult
from ..jobs.seed import held_slices
from ..kraft.events import EVENT_TYPES
from ..lake.delta import Lake
from .state import COUNTED_FROM, Fleet, count


class StreamWatch:
    """The live numbers of the clusters one process streams, kept in `fleet`."""

    def __init__(self, spark: SparkSession, fleet: Fleet) -> None:
        self.spark, self.fleet = spark, fleet
        self.lakes: dict[str, Lake] = {}

    def started(self, lake: Lake, cluster_id: str) -> None:
        """A query of the cluster starts (the first, or again after a failure): its event
        counters from the lake's events, its gauges from the held slices."""
        self.lakes[cluster_id] = lake
        rows = (lake.read(self.spark, "partition_events")
                .filter(F.col("cluster_id") == cluster_id).groupBy("event_type").count()
                .collect())
        events = dict.fromkeys(EVENT_TYPES, 0) | {r["event_type"]: r["count"] for r in rows}
        self.fleet.update(cluster_id, events=events)
        self._recount(cluster_id)

    def events(self, res: IncrementResult) -> None:
        """A micro-batch committed its events (`process_increment`'s `on_events`, before its
        other tables): the counters count them at once. A micro-batch whose events were
        committed before this query started (a re-run) does not call this: the lake's count
        at the start has them."""
        self.fleet.add_events(res.cluster_id, res.event_counts)

    def batch(self, res: IncrementResult) -> None:
        """A micro-batch completed: its position in the log, its time, the gauges again."""
        cid = res.cluster_id
        now = self.fleet.get(cid)
        changes: dict[str, object] = {"batches": now.batches + 1,
                                      "batch_seconds": now.batch_seconds + res.seconds,
                                      "last_batch_seconds": res.seconds}
        if res.newest_us is not None:  # the newest log record read
            changes["last_timestamp"] = dt.datetime.fromtimestamp(res.newest_us / 1e6, dt.UTC)
        self.fleet.update(cid, **changes)
        self._recount(cid)

    def restarted(self, cluster_id: str) -> None:
        self.fleet.add(cluster_id, restarts=1)

    def failed(self, cluster_id: str) -> None:
        self.fleet.add(cluster_id, failures=1)

    def _recount(self, cluster_id: str) -> None:
        gauges, last = count(held_slices(self.spark, self.lakes[cluster_id], cluster_id,
                                         COUNTED_FROM))
        self.fleet.update(cluster_id, gauges=gauges, last_offset=last)
