"""Spark frames the suites validate: each lake table plus derived `dq_*` columns.

Great Expectations checks one column (or one table) at a time; the invariants of
docs/semantics.md section 5 compare rows (an offset with the previous one, a state with the
previous state of the same partition) or tables (a change with the topic it names). Those are
computed here, in Spark column expressions and window functions (no Python per row), into
columns that the suites then validate like any other column. Naming convention: a derived
column is `dq_<what>`; a `dq_*_violation` column is null when the row is fine and otherwise
says what is wrong, so the sample of unexpected values in a report is self-explaining.

`record_columns` is row-local (it needs no other row) and is shared with
`record_checks`, which runs the same checks on every ingest batch.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime

from pyspark.sql import Column, DataFrame, SparkSession, Window
from pyspark.sql import functions as F

from ..kraft.partition import (
    LRS_CHANGE_VALUES,
    LRS_VALUES,
    NO_LEADER,
    RECOVERING,
    STATE_COLUMNS,
)
from ..kraft.records import (
    LEADER_CHANGE,
    PARTITION_CHANGE_RECORD,
    PARTITION_DELTA_TYPES,
    PARTITION_RECORD,
)
from ..lake.delta import Lake
from ..lake.schema import PARTITION_KEY, table_schema

KEY = list(PARTITION_KEY)
# Full partition state columns that must be present in every timeline / current row; the
# directories may not (the columns are Kafka's; nullable in the table's schema)
STATE_REQUIRED = [c for c in STATE_COLUMNS if c != "directories"]

# Tables each suite's frame is built from: a suite must be re-validated when one changes.
INPUTS: dict[str, list[str]] = {
    "records": ["records", "ingest_progress"],
    "partition_changes": ["partition_changes", "topics", "records"],
    "partition_timeline": ["partition_timeline", "partition_changes"],
    "partition_events": ["partition_events", "partition_timeline"],
    "partition_current": ["partition_current", "partition_timeline"],
    "partition_intervals": ["partition_intervals", "partition_timeline", "configs"],
    "incidents": ["incidents", "partition_timeline", "brokers", "partition_events"],
}


def _unexpected_nulls(required: list[str], when: dict[str, Column] | None = None) -> Column:
    """Comma-separated names of required columns that are null; null when none is.

    `when` adds columns required only on some rows (column -> condition of those rows).
    """
    parts = [F.when(F.col(c).isNull(), F.lit(c)) for c in required]
    parts += [F.when(cond & F.col(c).isNull(), F.lit(c)) for c, cond in (when or {}).items()]
    joined = F.concat_ws(",", *parts)
    return F.when(joined != "", joined)


def _schema_required(table: str) -> list[str]:
    return [c["name"] for c in table_schema(table).columns if not c["nullable"]]


# ------------------------------------------------------------------------------ records


def record_columns(df: DataFrame) -> DataFrame:
    """Row-local checks on bronze `records` rows (used per batch by `record_checks` too).

    * `dq_unexpected_nulls`: schema-required columns, plus what every record read from a
      file has (batch offset, Raft epoch, time, control flag, type), `data` for a record
      that decoded, and the snapshot columns for snapshot rows.
    * `dq_leader_recovery_state_violation`: the LeaderRecoveryState *field* of a
      PartitionRecord (must be 0/1) or PartitionChangeRecord (-1 = unchanged, 0, 1). Kafka
      refuses such a record as a whole and so does the silver layer, so bronze is the only
      place left where a corrupt value (invariant 18) can be seen. The field is read from
      the decoder's typed struct `fields` when `df` has it (an ingest's source rows: no
      JSON parsed per record on the ingest path), else from the JSON `data` (bronze read
      back by `kraftlake quality`, which does not store the struct).
    """
    t = F.col("record_type")
    lrs = (F.col("fields.leader_recovery_state") if "fields" in df.columns
           else F.get_json_object("data", "$.leader_recovery_state")).cast("int")
    bad_lrs = (F.when((t == PARTITION_RECORD) & ~lrs.isin(*LRS_VALUES), lrs)
               .when((t == PARTITION_CHANGE_RECORD) & ~lrs.isin(*LRS_CHANGE_VALUES), lrs))
    snap = F.col("source") == "snapshot"
    nulls = _unexpected_nulls(
        [*_schema_required("records"), "batch_base_offset", "epoch", "timestamp", "control",
         "record_type"],
        {"data": F.col("error").isNull(), "snapshot_end_offset": snap, "snapshot_role": snap})
    return (df.withColumn("dq_unexpected_nulls", nulls)
            .withColumn("dq_leader_recovery_state_violation",
                        F.when(bad_lrs.isNotNull(), F.concat(t, F.lit(" leader_recovery_state "),
                                                             bad_lrs.cast("string")))))


def _records_frame(spark: SparkSession, lake: Lake, now: datetime) -> DataFrame:
    """`records` with row-local checks, log-order checks (1, 2), freshness and volume.

    Log-order columns are computed over the log rows of each cluster ordered by offset
    (snapshot rows all carry their snapshot's offset and are not a sequence):
    `dq_offset_step` (must be 1), `dq_epoch_step` (>= 0) and `dq_epoch_start` (when the Raft
    epoch grows, the first record of the new epoch's type; must be a LeaderChangeMessage).
    Per-cluster values sit on one row per cluster so counts are counts of clusters:
    `dq_newest_age_seconds` (on the newest record) and `dq_progress_difference` (records in
    the table minus records that `ingest_progress` says were written).
    """
    df = record_columns(lake.read(spark, "records").drop("value"))
    log = F.col("source") == "log"
    w = Window.partitionBy("cluster_id", "source").orderBy("offset", "position")
    step = F.col("offset") - F.lag("offset").over(w)
    estep = F.col("epoch") - F.lag("epoch").over(w)
    df = (df.withColumn("dq_offset_step", F.when(log, step))
          .withColumn("dq_epoch_step", F.when(log, estep)))
    df = df.withColumn("dq_epoch_start", F.when(
        log & (F.col("dq_epoch_step") > 0),
        F.when(F.col("control") & (F.col("record_type") == LEADER_CHANGE), F.lit(LEADER_CHANGE))
        .otherwise(F.coalesce(F.col("record_type"), F.lit("undecodable")))))
    # per cluster: newest record's age, and the volume written according to ingest_progress
    now_s = now.replace(tzinfo=now.tzinfo or UTC).timestamp()
    wc = Window.partitionBy("cluster_id").orderBy(F.col("timestamp").desc_nulls_last(),
                                                 F.col("offset").desc(), F.col("position"))
    first = F.row_number().over(wc) == 1
    progress = (lake.read(spark, "ingest_progress").groupBy("cluster_id")
                .agg(F.sum("records").alias("_progress")))
    counts = df.groupBy("cluster_id").agg(F.count(F.lit(1)).alias("_rows"))
    diff = counts.join(progress, "cluster_id", "inner").select(
        "cluster_id", (F.col("_rows") - F.col("_progress")).alias("_diff"))
    df = df.join(F.broadcast(diff), "cluster_id", "left")
    return (df.withColumn("_first", first)
            .withColumn("dq_newest_age_seconds", F.when(
                F.col("_first"), F.lit(now_s) - F.col("timestamp").cast("double")))
            .withColumn("dq_progress_difference", F.when(F.col("_first"), F.col("_diff")))
            .drop("_first", "_diff"))


# ------------------------------------------------------------------------------ silver


def _partition_changes_frame(spark: SparkSession, lake: Lake, now: datetime) -> DataFrame:
    """`partition_changes` with topic resolution (5) and changes to partitions that exist.

    * `dq_topic_name`: the name `topics` gives the row's topic id (null = unknown topic).
    * `dq_orphan_change`: a change (not a reset, not a delete) of a partition that has no
      live full state before it (never created, or deleted) - Kafka's replay would refuse
      it (invariant 5).
    * `dq_unexpected_nulls`: schema-required columns and the record time; a reset row
      (PartitionRecord, snapshot row) is a full state, so its state columns are required.
    """
    ch = lake.read(spark, "partition_changes")
    topics = lake.read(spark, "topics").select(
        "cluster_id", "topic_id", F.col("topic_name").alias("dq_topic_name")).dropDuplicates(
        ["cluster_id", "topic_id"])
    df = ch.join(topics, ["cluster_id", "topic_id"], "left")
    w = Window.partitionBy(*KEY).orderBy("offset", "seq")
    marker = F.when(F.col("is_reset"), F.lit(1)).when(F.col("is_delete"), F.lit(0))
    alive = F.last(marker, True).over(w.rowsBetween(Window.unboundedPreceding, -1))
    change = ~F.col("is_reset") & ~F.col("is_delete")
    df = df.withColumn("dq_orphan_change", F.when(change, F.coalesce(alive, F.lit(0)) == 0))
    reset = F.col("is_reset")
    return df.withColumn("dq_unexpected_nulls", _unexpected_nulls(
        [*_schema_required("partition_changes"), "timestamp"],
        {c: reset for c in ["leader", "leader_epoch", "partition_epoch", "isr", "replicas",
                            "leader_recovery_state"]}))


# ------------------------------------------------------------------------------ gold


def _not_member(arr: str, value: str) -> Column:
    return ~F.coalesce(F.array_contains(F.col(arr), F.col(value)), F.lit(False))


def _state_columns(df: DataFrame) -> DataFrame:
    """Single-state invariants (10, 11, 13, 19) of full partition states, as columns.

    * `dq_leader_violation` (10): leader neither -1 nor a member of the ISR.
    * `dq_isr_violation` (11): ISR has a duplicate, a negative id or a non-replica.
    * `dq_elr_isr_overlap` (13): brokers in both ELR and ISR.
    * `dq_recovering_isr_size` (19): |ISR| of a RECOVERING state (null otherwise).
    """
    isr, reps = F.col("isr"), F.col("replicas")
    leader_bad = (F.col("leader") != NO_LEADER) & _not_member("isr", "leader")
    dup = F.size(F.array_distinct(isr)) != F.size(isr)
    neg = F.exists(isr, lambda b: b < 0)
    outside = F.array_except(isr, F.coalesce(reps, F.array().cast("array<int>")))
    isr_bad = F.concat_ws("; ",
                          F.when(dup, F.lit("duplicate")),
                          F.when(neg, F.lit("negative id")),
                          F.when(F.size(outside) > 0, F.concat(
                              F.lit("not replicas "), F.array_join(outside, ","))))
    overlap = F.array_intersect(isr, F.col("eligible_leader_replicas"))
    return (df
            .withColumn("dq_leader_violation", F.when(leader_bad, F.concat(
                F.lit("leader "), F.col("leader").cast("string"), F.lit(" not in ISR ["),
                F.array_join(isr, ","), F.lit("]"))))
            .withColumn("dq_isr_violation", F.when(isr.isNotNull() & (isr_bad != ""), F.concat(
                F.lit("ISR ["), F.array_join(isr, ","), F.lit("] replicas ["),
                F.array_join(reps, ","), F.lit("]: "), isr_bad)))
            .withColumn("dq_elr_isr_overlap", F.when(F.size(overlap) > 0,
                                                     F.array_join(overlap, ",")))
            .withColumn("dq_recovering_isr_size", F.when(
                F.col("leader_recovery_state") == RECOVERING, F.size(isr))))


def _partition_timeline_frame(spark: SparkSession, lake: Lake, now: datetime) -> DataFrame:
    """`partition_timeline` with single-state invariants and per-partition sequences.

    Per (cluster, topic id, partition) ordered by (valid_from_offset, seq):
    `dq_leader_epoch_step` (7, never negative), `dq_partition_epoch_step` (6, exactly 1 on a
    change row; null on resets, which legitimately set any epoch), and
    `dq_validity_length` = valid_to_offset - valid_from_offset (must be positive: a state
    is valid from its change up to, not including, the next one).
    """
    df = _state_columns(lake.read(spark, "partition_timeline"))
    w = Window.partitionBy(*KEY).orderBy("valid_from_offset", "seq")
    change = F.col("record_type").isin(*PARTITION_DELTA_TYPES)
    df = (df.withColumn("dq_leader_epoch_step",
                        F.col("leader_epoch") - F.lag("leader_epoch").over(w))
          .withColumn("dq_partition_epoch_step", F.when(
              change, F.col("partition_epoch") - F.lag("partition_epoch").over(w)))
          .withColumn("dq_validity_length",
                      F.col("valid_to_offset") - F.col("valid_from_offset")))
    return df.withColumn("dq_unexpected_nulls", _unexpected_nulls(
        [*_schema_required("partition_timeline"), "valid_from_ts", *STATE_REQUIRED],
        {"recovering_since_offset": F.col("leader_recovery_state") == RECOVERING}))


def _open_timeline(spark: SparkSession, lake: Lake) -> DataFrame:
    return lake.read(spark, "partition_timeline").filter(F.col("valid_to_offset").isNull())


MATCHED = ["valid_from_offset", "seq", "leader", "leader_epoch", "partition_epoch", "isr",
           "replicas", "eligible_leader_replicas", "last_known_elr", "adding_replicas",
           "removing_replicas", "leader_recovery_state"]


def _partition_current_frame(spark: SparkSession, lake: Lake, now: datetime) -> DataFrame:
    """`partition_current` checked against the open (valid_to null) timeline rows.

    `dq_timeline_mismatch` names the columns in which the current state differs from the
    partition's open timeline row ("no open timeline row" if there is none): the current
    table is the timeline's last state, nothing else.
    """
    cur = lake.read(spark, "partition_current")
    tl = _open_timeline(spark, lake).select(
        *KEY, *[F.col(c).alias(f"_t_{c}") for c in MATCHED], F.lit(True).alias("_t"))
    tl = tl.dropDuplicates(KEY)
    df = cur.join(tl, KEY, "left")
    diffs = F.concat_ws(",", *[F.when(~F.col(c).eqNullSafe(F.col(f"_t_{c}")), F.lit(c))
                               for c in MATCHED])
    df = df.withColumn("dq_timeline_mismatch", F.when(
        F.col("_t").isNull(), F.lit("no open timeline row")).when(diffs != "", diffs))
    df = df.drop("_t", *[f"_t_{c}" for c in MATCHED])
    return df.withColumn("dq_unexpected_nulls", _unexpected_nulls(
        [*_schema_required("partition_current"), "valid_from_ts", *STATE_REQUIRED],
        {"recovering_since_offset": F.col("leader_recovery_state") == RECOVERING}))


def _any(df: DataFrame) -> int:
    return 0 if df.limit(1).count() == 0 else 1


def suite_parameters(spark: SparkSession, lake: Lake, suite: str) -> dict[str, int]:
    """Run-time values of the suite's $PARAMETERs that come from other tables (volume).

    A layer must not be empty when its input is not: partition changes exist if bronze
    holds a PartitionRecord that takes effect (log, or a snapshot replay starts from); the
    timeline has states if there are non-delete changes; events exist if the timeline has a
    partition creation (`partition_created`); `partition_current` has exactly one row per
    open timeline state.
    """
    if suite == "partition_changes":
        rec = lake.read(spark, "records").filter(
            (F.col("record_type") == PARTITION_RECORD) & F.col("error").isNull()
            & ((F.col("source") == "log") | (F.col("snapshot_role") == "reset")))
        return {"min_partition_changes": _any(rec)}
    if suite == "partition_timeline":
        ch = lake.read(spark, "partition_changes").filter(~F.col("is_delete"))
        return {"min_timeline_rows": _any(ch)}
    if suite == "partition_events":
        tl = lake.read(spark, "partition_timeline").filter(
            F.col("record_type") == PARTITION_RECORD)
        return {"min_events": _any(tl)}
    if suite == "partition_current":
        return {"open_timeline_rows": _open_timeline(spark, lake).count()}
    return {}


def _partition_events_frame(spark: SparkSession, lake: Lake, now: datetime) -> DataFrame:
    """`partition_events` with the timeline row each event belongs to.

    `dq_in_timeline`: an event is detected on a change, so the timeline has a state that
    starts at the event's (partition, offset, seq); `partition_deleted` is the exception
    (a delete ends a timeline instead of adding a state) and gets null.
    `dq_recovery_started_before`: for recovery_completed, whether RECOVERING began before
    the completing record.
    """
    ev = lake.read(spark, "partition_events")
    tl = lake.read(spark, "partition_timeline").select(
        *KEY, F.col("valid_from_offset").alias("offset"), "seq",
        F.lit(True).alias("_in")).dropDuplicates([*KEY, "offset", "seq"])
    df = ev.join(tl, [*KEY, "offset", "seq"], "left")
    deleted = F.col("event_type") == "partition_deleted"
    rec = F.col("event_type") == "recovery_completed"
    df = (df.withColumn("dq_in_timeline", F.when(~deleted, F.coalesce(F.col("_in"),
                                                                      F.lit(False))))
          .withColumn("dq_recovery_started_before", F.when(
              rec, F.coalesce(F.col("recovery_started_offset") < F.col("offset"),
                              F.lit(False))))
          .drop("_in"))
    return df.withColumn("dq_unexpected_nulls", _unexpected_nulls(
        [*_schema_required("partition_events"), "timestamp"],
        {"recovery_started_offset": rec, "recovery_duration_ms": rec}))


def _partition_intervals_frame(spark: SparkSession, lake: Lake, now: datetime) -> DataFrame:
    """`partition_intervals` with its sequence invariants.

    Per (partition, kind) ordered by start: `dq_overlap` says how an interval overlaps the
    one before it (that one is open, or ends after this one starts);
    `dq_interval_length` = end_offset - start_offset (at least 1: an interval spans at least
    the state it starts with); `dq_starts_on_timeline`: a timeline state starts at
    (start_offset, start_seq).
    """
    df = lake.read(spark, "partition_intervals")
    w = Window.partitionBy(*KEY, "kind").orderBy("start_offset", "start_seq")
    prev_end = F.lag("end_offset").over(w)
    has_prev = F.lag("start_offset").over(w).isNotNull()
    df = df.withColumn("dq_overlap", F.when(has_prev & prev_end.isNull(), F.lit(
        "previous interval still open")).when(prev_end > F.col("start_offset"), F.concat(
            F.lit("previous interval ends at "), prev_end.cast("string"))))
    tl = lake.read(spark, "partition_timeline").select(
        *KEY, F.col("valid_from_offset").alias("start_offset"), F.col("seq").alias(
            "start_seq"), F.lit(True).alias("_on")).dropDuplicates(
        [*KEY, "start_offset", "start_seq"])
    df = (df.join(tl, [*KEY, "start_offset", "start_seq"], "left")
          .withColumn("dq_starts_on_timeline", F.coalesce(F.col("_on"), F.lit(False)))
          .drop("_on")
          .withColumn("dq_interval_length", F.col("end_offset") - F.col("start_offset")))
    closed = F.col("end_offset").isNotNull()
    return df.withColumn("dq_unexpected_nulls", _unexpected_nulls(
        [*_schema_required("partition_intervals"), "start_ts"],
        {"end_ts": closed, "duration_ms": closed}))


def _incidents_frame(spark: SparkSession, lake: Lake, now: datetime) -> DataFrame:
    """`incidents` with its invariants: `dq_incident_length` = end - start offsets (never
    negative), `dq_overlap` (per cluster by start: the previous incident is open or ends
    after this one starts), `dq_counts_mismatch` (parallel arrays of different length, a
    type counting more partitions than the incident affects, more data-loss partitions
    than unclean elections)."""
    df = lake.read(spark, "incidents")
    w = Window.partitionBy("cluster_id").orderBy("start_offset")
    prev_end = F.lag("end_offset").over(w)
    has_prev = F.lag("start_offset").over(w).isNotNull()
    sizes = F.size("event_types") != F.size("event_partitions")
    too_many = F.exists("event_partitions", lambda n: n > F.col("partitions_affected"))
    loss = F.size("data_loss_partitions") > F.col("unclean_elections")
    closed = F.col("end_offset").isNotNull()
    return (df.withColumn("dq_incident_length", F.col("end_offset") - F.col("start_offset"))
            .withColumn("dq_overlap", F.when(has_prev & prev_end.isNull(), F.lit(
                "previous incident still open")).when(prev_end > F.col("start_offset"), F.concat(
                    F.lit("previous incident ends at "), prev_end.cast("string"))))
            .withColumn("dq_counts_mismatch", F.when(sizes, F.lit("event arrays differ"))
                        .when(too_many, F.lit("a type counts more than partitions_affected"))
                        .when(loss, F.lit("data_loss_partitions > unclean_elections")))
            .withColumn("dq_unexpected_nulls", _unexpected_nulls(
                [*_schema_required("incidents"), "start_ts"],
                {"end_ts": closed, "duration_ms": closed})))


FRAMES: dict[str, Callable[[SparkSession, Lake, datetime], DataFrame]] = {
    "records": _records_frame,
    "partition_changes": _partition_changes_frame,
    "partition_timeline": _partition_timeline_frame,
    "partition_events": _partition_events_frame,
    "partition_current": _partition_current_frame,
    "partition_intervals": _partition_intervals_frame,
    "incidents": _incidents_frame,
}


def frame(spark: SparkSession, lake: Lake, suite: str, now: datetime) -> DataFrame:
    """The DataFrame suite `suite` validates (its table plus derived columns)."""
    return FRAMES[suite](spark, lake, now)
