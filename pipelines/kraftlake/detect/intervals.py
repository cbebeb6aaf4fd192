"""partition_intervals: the spans a partition spent in a bad state, from its timeline.

A partition is in state `kind` during a timeline row when (B = the row's full state,
m = min(effective min.insync.replicas at that offset, |replicas|), as for `under_min_isr`
events in `events.py`):

* `offline`: leader = -1 (no leader);
* `under_min_isr`: |isr| < m;
* `recovering`: LeaderRecoveryState = 1 (after an unclean election, until the new leader
  has rebuilt its ISR);
* `reassigning`: adding or removing replicas non-empty;
* `single_isr`: |isr| = 1 while more replicas are assigned (one copy of the data in sync);
* `under_replicated`: |isr| < |replicas| (Kafka's UnderReplicatedPartitions, per partition):
  what keeps an incident open after its brokers are back, until their replicas caught up.

An interval is a maximal run of consecutive timeline rows of one partition in that state:
it starts at the first row's `valid_from` and ends at the last row's `valid_to` (the change
that left the state, or the partition's deletion); the end is null while the run includes
the current state. A snapshot row between two rows in the same state does not split a run.
The state is judged at the partition's own changes only: a `min.insync.replicas` change
with no partition change does not open or close an `under_min_isr` interval (Kafka writes
no partition record then, so the timeline has no row there).

Incremental by construction: `intervals` needs the timeline rows of the touched partitions
from their previous current state on (the fold's `timeline_rows` are exactly that: the new
states plus the seeds they closed) and the intervals still open in the lake; a run that
starts at a partition's first input row continues the open interval of that partition and
kind, and keeps its start (the key), so closing it is an upsert on the key.
"""

from __future__ import annotations

from pyspark.sql import Column, DataFrame, Window
from pyspark.sql import functions as F

from ..fold.silver import KEY
from ..kraft.partition import NO_LEADER
from ..kraft.partition import RECOVERING as LRS_RECOVERING
from .events import context_at

OFFLINE, UNDER_MIN_ISR, RECOVERING = "offline", "under_min_isr", "recovering"
REASSIGNING, SINGLE_ISR = "reassigning", "single_isr"
UNDER_REPLICATED = "under_replicated"
KINDS = (OFFLINE, UNDER_MIN_ISR, RECOVERING, REASSIGNING, SINGLE_ISR, UNDER_REPLICATED)
INTERVAL_KEY = [*KEY, "kind", "start_offset", "start_seq"]
COLUMNS = [*KEY, "topic_name", "kind", "start_offset", "start_seq", "start_ts", "end_offset",
           "end_ts", "duration_ms"]


def _n(c: str) -> Column:
    return F.coalesce(F.size(F.col(c)), F.lit(0))


def kind_flags(rows: DataFrame) -> dict[str, Column]:
    """kind -> condition on a timeline row with its `min_isr_config` (see module doc)."""
    # kraft.configs.partition_min_isr: no threshold when min.insync.replicas is unparseable
    m = F.least(F.col("min_isr_config"), _n("replicas"))
    return {
        OFFLINE: F.col("leader") == NO_LEADER,
        UNDER_MIN_ISR: F.col("min_isr_config").isNotNull() & (_n("isr") < m),
        RECOVERING: F.col("leader_recovery_state") == LRS_RECOVERING,
        REASSIGNING: (_n("adding_replicas") > 0) | (_n("removing_replicas") > 0),
        SINGLE_ISR: (_n("isr") == 1) & (_n("replicas") > 1),
        UNDER_REPLICATED: _n("isr") < _n("replicas"),
    }


def duration_ms(start: Column, end: Column) -> Column:
    """Milliseconds between two timestamps (null while the end is)."""
    return ((end.cast("double") - start.cast("double")) * 1000).cast("long")


def intervals(timeline: DataFrame, configs: DataFrame, *, default_min_isr: int = 1,
              open_intervals: DataFrame | None = None,
              topic_names: DataFrame | None = None) -> DataFrame:
    """partition_intervals rows (COLUMNS) for every run in `timeline`.

    `timeline`: partition_timeline rows (whole table, or an increment's rows from each
    touched partition's previous current state on). `configs`: the configs table (min ISR
    in force per offset). `open_intervals`: rows of partition_intervals with a null end
    (an increment's seed); a run starting at a partition's first input row inherits the
    start of the open interval of the same partition and kind.
    """
    rows = timeline.select(*KEY, "topic_name", F.col("valid_from_offset").alias("offset"),
                           "seq", F.col("valid_from_ts").alias("timestamp"), "valid_to_offset",
                           "valid_to_ts", "leader", "isr", "replicas", "adding_replicas",
                           "removing_replicas", "leader_recovery_state",
                           F.lit(False).alias("is_delete"))
    rows = context_at(rows, configs, default_min_isr, topic_names)
    flags = kind_flags(rows)
    rows = rows.withColumn("_k", F.explode(F.array(*[
        F.struct(F.lit(k).alias("kind"), F.coalesce(c, F.lit(False)).alias("bad"))
        for k, c in flags.items()])))
    rows = rows.select("*", "_k.kind", "_k.bad").drop("_k")
    wk = Window.partitionBy(*KEY, "kind").orderBy("offset", "seq")
    rows = (rows.withColumn("_first_input", F.row_number().over(wk) == 1)
            .withColumn("_begins", F.col("bad") & ~F.coalesce(F.lag("bad").over(wk),
                                                             F.lit(False)))
            .withColumn("_run", F.sum(F.col("_begins").cast("int")).over(
                wk.rowsBetween(Window.unboundedPreceding, Window.currentRow))))
    first = F.struct("offset", "seq", "timestamp", "_first_input")
    last = F.struct("offset", "seq", "valid_to_offset", "valid_to_ts")
    runs = (rows.filter("bad").groupBy(*KEY, "kind", "_run")
            .agg(F.max("topic_name").alias("topic_name"), F.min(first).alias("_s"),
                 F.max(last).alias("_e"))
            .select(*KEY, "topic_name", "kind", F.col("_s.offset").alias("start_offset"),
                    F.col("_s.seq").alias("start_seq"), F.col("_s.timestamp").alias("start_ts"),
                    F.col("_s._first_input").alias("_continues"),
                    F.col("_e.valid_to_offset").alias("end_offset"),
                    F.col("_e.valid_to_ts").alias("end_ts")))
    if open_intervals is not None:
        prior = open_intervals.select(*KEY, "kind", F.col("start_offset").alias("_po"),
                                      F.col("start_seq").alias("_ps"),
                                      F.col("start_ts").alias("_pt"))
        runs = runs.join(prior, [*KEY, "kind"], "left")
        keep = F.col("_continues") & F.col("_po").isNotNull()
        runs = (runs.withColumn("start_offset", F.when(keep, F.col("_po"))
                                .otherwise(F.col("start_offset")))
                .withColumn("start_seq", F.when(keep, F.col("_ps")).otherwise(F.col("start_seq")))
                .withColumn("start_ts", F.when(keep, F.col("_pt")).otherwise(F.col("start_ts"))))
    return runs.withColumn("duration_ms", duration_ms(F.col("start_ts"), F.col("end_ts"))
                           ).select(*COLUMNS)
