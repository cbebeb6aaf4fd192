"""Snapshot reconciliation: the folded state at a snapshot's end offset - 1 vs. the snapshot.

A *check* snapshot (one whose end offset falls in a range the log also covers) must describe
exactly the state the fold reached after offset end - 1. Differences become rows of
`snapshot_reconciliation` (one per partition and field), so a mismatch is visible in SQL
instead of silently overwriting the log-derived history.
"""

from __future__ import annotations

from pyspark.sql import DataFrame, Window
from pyspark.sql import functions as F

from ..kraft.partition import LRS_VALUES, MIGRATING_DIR, NO_LEADER, RECOVERED
from ..kraft.records import PARTITION_RECORD
from .silver import KEY, field

SETS = ["isr", "eligible_leader_replicas", "last_known_elr", "adding_replicas",
        "removing_replicas"]
SCALARS = ["leader", "leader_epoch", "partition_epoch", "leader_recovery_state"]


def snapshot_states(src: DataFrame) -> DataFrame:
    """PartitionRecords of check snapshots, normalised like the fold's state.

    A PartitionRecord Kafka refuses (LeaderRecoveryState outside {0, 1}:
    `PartitionRegistration(PartitionRecord)` -> `LeaderRecoveryState.of` throws, and the
    snapshot loader skips it) is not part of the snapshot's state: the partition shows as
    absent from the snapshot.
    """
    rows = src.filter((F.col("row_kind") == "record") & (F.col("snapshot_role") == "check")
                      & (F.col("record_type") == PARTITION_RECORD))
    empty = F.array().cast("array<int>")
    lrs = field("leader_recovery_state")
    rows = rows.filter(lrs.isNull() | lrs.isin(*LRS_VALUES))
    return rows.select(
        "cluster_id", "snapshot_end_offset", field("topic_id").alias("topic_id"),
        field("partition_id").alias("partition_id"),
        F.coalesce(field("leader"), F.lit(NO_LEADER)).alias("leader"),
        F.coalesce(field("leader_epoch"), F.lit(0)).alias("leader_epoch"),
        F.coalesce(field("partition_epoch"), F.lit(0)).alias("partition_epoch"),
        F.coalesce(lrs, F.lit(RECOVERED)).alias("leader_recovery_state"),
        F.coalesce(field("replicas"), empty).alias("replicas"),
        *[F.coalesce(field(c), empty).alias(c) for c in SETS],
        field("directories").alias("directories"))


def check_points(src: DataFrame) -> DataFrame:
    return (src.filter((F.col("row_kind") == "record") & (F.col("snapshot_role") == "check"))
            .select("cluster_id", "snapshot_end_offset").distinct())


def reconcile(snap: DataFrame, points: DataFrame, timeline: DataFrame) -> DataFrame:
    """Mismatch rows between snapshot states and the fold's states at end offset - 1.

    A partition whose state was uncertain is re-anchored by the check snapshot itself (a
    timeline row of source `snapshot` at end offset - 1, seq 1): there the state compared
    is the one the fold had reached just before it, so the table shows what the snapshot
    corrected."""
    at = F.col("snapshot_end_offset") - 1
    t = timeline.join(F.broadcast(points), "cluster_id")
    anchor = ((F.col("source") == "snapshot") & (F.col("seq") == 1)
              & (F.col("valid_from_offset") == at))
    anchored = t.filter(anchor).select("cluster_id", "snapshot_end_offset", *KEY[1:],
                                       F.lit(True).alias("_anchored"))
    # the states valid at the point or ending there (of those, only one an anchor replaced
    # stays): filtered in the join with the points, so about one state per partition and
    # point is shuffled, not every state that began before the point (60 M rows of a
    # week's log and its 13 check snapshots: two thirds of the ingest's reconciliation CPU)
    t = t.filter(~anchor & (F.col("valid_from_offset") <= at) & (
        F.col("valid_to_offset").isNull() | (F.col("valid_to_offset") >= at))).join(
        anchored, ["cluster_id", "snapshot_end_offset", *KEY[1:]], "left").filter(
        F.col("valid_to_offset").isNull() | (F.col("valid_to_offset") > at)
        | (F.col("_anchored") & (F.col("valid_to_offset") == at)))
    # of an anchored partition's states, the last one before the anchor
    last = Window.partitionBy("cluster_id", "snapshot_end_offset", *KEY[1:]).orderBy(
        F.col("valid_from_offset").desc(), F.col("seq").desc())
    t = t.withColumn("_n", F.row_number().over(last)).filter("_n = 1")
    cols = [*SCALARS, "replicas", *SETS, "directories"]
    a = t.select("cluster_id", "snapshot_end_offset", *KEY[1:],
                 *[F.col(c).alias(f"f_{c}") for c in cols], F.lit(True).alias("_f"))
    b = snap.select("cluster_id", "snapshot_end_offset", *KEY[1:],
                    *[F.col(c).alias(f"s_{c}") for c in cols], F.lit(True).alias("_s"))
    j = a.join(b, ["cluster_id", "snapshot_end_offset", *KEY[1:]], "full_outer")
    diffs = [F.when(F.col("_f").isNull() | F.col("_s").isNull(), F.struct(
        F.lit("presence").alias("field"),
        F.when(F.col("_f").isNotNull(), "present").otherwise("absent").alias("folded_value"),
        F.when(F.col("_s").isNotNull(), "present").otherwise("absent").alias("snapshot_value")))]
    both = F.col("_f").isNotNull() & F.col("_s").isNotNull()
    for c in cols:
        f, s = F.col(f"f_{c}"), F.col(f"s_{c}")
        if c in SETS:
            f, s = F.array_sort(f), F.array_sort(s)
        cond = both & ~f.eqNullSafe(s)
        if c == "directories":  # not written below MV 3.7-IV2: only compare real ids
            cond = cond & F.exists(F.col(f"s_{c}"), lambda d: d != F.lit(MIGRATING_DIR))
        diffs.append(F.when(cond, F.struct(F.lit(c).alias("field"),
                                           F.to_json(F.struct(f.alias("v"))).alias("folded_value"),
                                           F.to_json(F.struct(s.alias("v"))).alias(
                                               "snapshot_value"))))
    out = j.withColumn("_d", F.explode(F.filter(F.array(*diffs), lambda x: x.isNotNull())))
    return out.select("cluster_id", "snapshot_end_offset", *KEY[1:], "_d.field",
                      "_d.folded_value", "_d.snapshot_value")
