"""The fold: partition changes -> full state after every change, in window functions only.

Per (cluster_id, topic_id, partition_id) ordered by (offset, seq):

* `grp` = running count of resets and deletes; each group starts from a full state
  (PartitionRecord, snapshot row, or the seeded current state) or from a delete;
* every state column is `last(col, ignorenulls)` over the group (null = unchanged);
* leader_epoch = base + number of rows carrying a leader (Leader != -2) since the reset;
  partition_epoch = base + number of effective change rows since the reset;
* a ClearElr row is effective only if ELR or LastKnownElr was non-empty just before
  (computed from the lagged folded state); ineffective ones are dropped;
* directories follow `PartitionRegistration.defaultToMigrating` (empty or all-MIGRATING ->
  MIGRATING per replica, resized with the replica list);
* rows before any full state (a change for a partition never created) are orphans and are
  returned separately so they can be counted, not folded.

The same code folds a whole log (no seed) and a micro-batch (seeded with the touched
partitions' rows from `partition_current`).
"""

from __future__ import annotations

from pyspark.sql import Column, DataFrame, Window
from pyspark.sql import functions as F

from ..kraft.partition import LIST_COLUMNS, MIGRATING_DIR
from .silver import KEY, STATE

LISTS = list(LIST_COLUMNS)
PLAIN = ["leader", "leader_recovery_state", *LISTS]
ORDER = ["offset", "seq"]


def _seed_rows(seed: DataFrame) -> DataFrame:
    return seed.select(
        *KEY, F.col("valid_from_offset").alias("offset"), "seq",
        F.col("valid_from_ts").alias("timestamp"), "record_type", "source",
        F.lit(True).alias("is_reset"), F.lit(False).alias("is_delete"), *STATE,
        F.lit(True).alias("is_seed"), F.col("recovering_since_offset").alias("_rs_seed_off"),
        F.col("recovering_since_ts").alias("_rs_seed_ts"))


def _size0(c: Column) -> Column:
    return F.coalesce(F.size(c), F.lit(0)) <= 0


def fold(changes: DataFrame, seed: DataFrame | None = None) -> tuple[DataFrame, DataFrame]:
    """(folded rows incl. seeds and deletes, orphan rows). See the module docstring.

    Orphans are computed from the changes alone (a change before any full state); call
    `orphan_rows` on the same inputs when they are needed, the folded frame excludes them.
    """
    rows = changes.select(*KEY, *ORDER, "timestamp", "record_type", "source", "is_reset",
                          "is_delete", *STATE, F.lit(False).alias("is_seed"),
                          F.lit(None).cast("long").alias("_rs_seed_off"),
                          F.lit(None).cast("timestamp").alias("_rs_seed_ts"))
    if seed is not None:
        rows = _seed_rows(seed).unionByName(rows)
    rows = (rows.withColumn("r_leader", F.col("leader"))
            .withColumn("r_leader_recovery_state", F.col("leader_recovery_state"))
            .withColumn("is_clear", F.col("record_type") == "ClearElrRecord"))

    wk = Window.partitionBy(*KEY).orderBy(*ORDER)
    upto = Window.unboundedPreceding, Window.currentRow
    rows = rows.withColumn("grp", F.sum(
        (F.col("is_reset") | F.col("is_delete")).cast("int")).over(wk.rowsBetween(*upto)))
    wg = Window.partitionBy(*KEY, "grp").orderBy(*ORDER)
    wga = wg.rowsBetween(*upto)

    s = rows.withColumn("_base", F.first("is_reset").over(wg))
    for c in PLAIN:
        s = s.withColumn(c, F.last(c, True).over(wga))
    # directories: normalise where present, carry and resize while all-MIGRATING
    mig = F.array_repeat(F.lit(MIGRATING_DIR), F.size("replicas"))
    all_mig = F.forall("directories", lambda d: d == F.lit(MIGRATING_DIR))
    s = s.withColumn("directories", F.when(F.col("directories").isNotNull(),
                                           F.when(all_mig, mig).otherwise(F.col("directories"))))
    s = s.withColumn("directories", F.last("directories", True).over(wga))
    s = s.withColumn("directories", F.when(all_mig, mig).otherwise(F.col("directories")))
    # a ClearElr row changes something only if ELR or LastKnownElr was non-empty before it
    s = s.withColumn("_noop", F.col("is_clear") & _size0(
        F.lag("eligible_leader_replicas").over(wk)) & _size0(F.lag("last_known_elr").over(wk)))
    counted = ~F.col("is_reset") & ~F.col("is_delete") & ~F.col("_noop")
    s = (s.withColumn("leader_epoch", F.first("leader_epoch").over(wg) + F.sum(
            F.when(counted & F.col("r_leader").isNotNull(), 1).otherwise(0)).over(wga))
         .withColumn("partition_epoch", F.first("partition_epoch").over(wg) + F.sum(
             F.when(counted, 1).otherwise(0)).over(wga)))
    based = F.coalesce(F.col("_base"), F.lit(False))
    orphan = ~based & ~F.col("is_delete")
    orphans = s.filter(orphan).select(*KEY, *ORDER, "record_type")
    # a delete only ends a partition that exists right before it
    s = s.withColumn("_prev_live", F.lag(based & ~F.col("is_delete")).over(wk))
    s = s.filter(~orphan & ~F.col("_noop")
                 & (~F.col("is_delete") | F.coalesce(F.col("_prev_live"), F.lit(False))))
    s = s.drop("_prev_live")
    for c in STATE:  # a delete row carries no state
        s = s.withColumn(c, F.when(~F.col("is_delete"), F.col(c)))
    for c in STATE:
        s = s.withColumn(f"prev_{c}", F.lag(c).over(wk))
    s = (s.withColumn("prev_exists", F.lag(~F.col("is_delete")).over(wk))
         .withColumn("valid_to_offset", F.lead("offset").over(wk))
         .withColumn("valid_to_ts", F.lead("timestamp").over(wk)))
    lrs, prev_lrs = F.col("leader_recovery_state"), F.col("prev_leader_recovery_state")
    began = (lrs == 1) & (prev_lrs.isNull() | (prev_lrs != 1))
    s = (s.withColumn("_rs_off", F.when(F.col("is_seed"), F.col("_rs_seed_off"))
                      .when(began, F.col("offset")))
         .withColumn("_rs_ts", F.when(F.col("is_seed"), F.col("_rs_seed_ts"))
                     .when(began, F.col("timestamp")))
         .withColumn("recovering_since_offset",
                     F.when(lrs == 1, F.last("_rs_off", True).over(wk.rowsBetween(*upto))))
         .withColumn("recovering_since_ts",
                     F.when(lrs == 1, F.last("_rs_ts", True).over(wk.rowsBetween(*upto)))))
    s = (s.withColumn("prev_recovering_since_offset", F.lag("recovering_since_offset").over(wk))
         .withColumn("prev_recovering_since_ts", F.lag("recovering_since_ts").over(wk)))
    return s.drop("_rs_off", "_rs_ts", "_rs_seed_off", "_rs_seed_ts", "_base", "grp"), orphans


def timeline_rows(folded: DataFrame, topic_names: DataFrame) -> DataFrame:
    """partition_timeline rows to upsert: new states, plus seeds that got closed."""
    rows = folded.filter(~F.col("is_delete") & (~F.col("is_seed")
                                                 | F.col("valid_to_offset").isNotNull()))
    return (rows.join(topic_names.select("cluster_id", "topic_id", "topic_name"),
                      ["cluster_id", "topic_id"], "left")
            .withColumnRenamed("offset", "valid_from_offset")
            .withColumnRenamed("timestamp", "valid_from_ts")
            .withColumn("is_current", F.col("valid_to_offset").isNull()))


def current_rows(folded: DataFrame, topic_names: DataFrame) -> tuple[DataFrame, DataFrame]:
    """(partition_current rows to upsert, keys to delete) after this increment."""
    w = Window.partitionBy(*KEY).orderBy(F.col("offset").desc(), F.col("seq").desc())
    last = folded.withColumn("_rn", F.row_number().over(w)).filter("_rn = 1").drop("_rn")
    live = (last.filter(~F.col("is_delete") & ~F.col("is_seed"))
            .join(topic_names.select("cluster_id", "topic_id", "topic_name"),
                  ["cluster_id", "topic_id"], "left")
            .withColumnRenamed("offset", "valid_from_offset")
            .withColumnRenamed("timestamp", "valid_from_ts"))
    gone = last.filter(F.col("is_delete")).select(*KEY)
    return live, gone
