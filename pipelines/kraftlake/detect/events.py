"""Events from folded rows (state and previous state side by side), per kraft-semantics 2.9.

The rules are the issue's definitions as made exact by the simulator's label rules
(simulate/README.md "Label rules", `simulate.labels.step_events`), so that
`benchmarks/bench_events.py` and tests/pipeline/test_events_labels.py can require equality:

* unclean_election: the record sets LeaderRecoveryState = 1 (detection `leader_recovery_state`);
  or, when that signal cannot exist (partition already RECOVERING: `already_recovering`;
  metadata.version < 3.2-IV0 or unknown, i.e. no FeatureLevelRecord yet: `metadata_version`),
  the new leader was in neither the previous ISR nor the previous ELR and the record does not
  complete a reassignment.
* recovery_completed: LeaderRecoveryState 1 -> 0, with the time since RECOVERING began.
* elr_change: ELR or LastKnownElr changed as a set (members added / removed in columns),
  by a change, a reset or a ClearElrRecord.
* elr_election, clean_election, preferred_election (a clean election, from a live leader, to
  replicas[0]), leader_offline, isr_shrink, isr_expand, under_min_isr (on the transition:
  |A.isr| < m(A) while |B.isr| >= m(B), m = min(effective min.insync.replicas, |replicas|)),
  reassignment_started / _completed / _cancelled (completion = B.replicas minus B.removing,
  cancel = minus B.adding; a replica change with no reassignment state on either side is a
  reassignment done in one record: started and completed), partition_created (plus
  under_min_isr when born under), partition_deleted.
* A PartitionRecord for an existing partition (a reset) is compared with the state before it
  like a change. Snapshot rows are not changes and produce no events.
"""

from __future__ import annotations

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from ..fold.silver import KEY
from ..kraft.configs import CLUSTER_DEFAULT, INT_PATTERN, MIN_ISR, RESOURCE_BROKER, RESOURCE_TOPIC
from ..kraft.events import DETECTED_ALREADY_RECOVERING, DETECTED_BY_LRS, DETECTED_BY_MV
from ..kraft.partition import NO_LEADER, NO_LEADER_CHANGE, RECOVERED, RECOVERING
from ..kraft.versions import MV_3_2_IV0, MV_FEATURE


def _set(c: str) -> Column:
    return F.array_sort(F.array_distinct(F.coalesce(F.col(c), F.array().cast("array<int>"))))


def _has(arr: str, v: str) -> Column:
    return F.coalesce(F.array_contains(F.col(arr), F.col(v)), F.lit(False))


def _nonempty(c: str) -> Column:
    return F.coalesce(F.size(F.col(c)), F.lit(0)) > 0


def context_at(rows: DataFrame, configs: DataFrame, default_min_isr: int,
               topic_names: DataFrame | None = None) -> DataFrame:
    """Add `min_isr_config` and `metadata_version` in force at each row's offset (as-of join).

    `min_isr_config` is `kraft.configs.resolve_min_isr`: the topic's value if it has one,
    else the cluster default, else `default_min_isr` (the controllers' static config); the
    value of the first level that has one is parsed like `Integer.parseInt`, and is null
    (unknown: no under-min-ISR verdict) when that fails. `metadata_version` is null before
    any FeatureLevelRecord (logs below 3.3-IV0 have none).
    """
    cfg = configs.filter(F.col("kind") == "config").filter(F.col("name") == MIN_ISR)
    topic_cfg = cfg.filter(F.col("resource_type") == RESOURCE_TOPIC).select(
        "cluster_id", F.col("resource_name").alias("_t"), F.col("offset").alias("_o"),
        F.col("seq").alias("_s"), F.col("value").alias("_v"))
    cluster_cfg = cfg.filter((F.col("resource_type") == RESOURCE_BROKER)
                             & (F.col("resource_name") == CLUSTER_DEFAULT))\
        .select("cluster_id", F.col("offset").alias("_o"), F.col("seq").alias("_s"),
                F.col("value").alias("_v"))
    mv = configs.filter((F.col("kind") == "feature") & (F.col("name") == MV_FEATURE))\
        .select("cluster_id", F.col("offset").alias("_o"), F.col("seq").alias("_s"),
                F.col("feature_level").alias("_v"))
    # RemoveTopicRecord drops the topic's configs (ConfigurationsDelta / RCM.replay), so a
    # topic re-created under the same name does not inherit them: a deletion is a marker
    # with no value, after which only newer topic ConfigRecords count. Deletions come from
    # this fold's delete rows, and from `deleted_offset` when topic_names carries it.
    gone = rows.filter(F.col("is_delete")).select(
        "cluster_id", F.col("topic_name").alias("_t"), F.col("offset").alias("_o"),
        F.col("seq").alias("_s"))
    if topic_names is not None and "deleted_offset" in topic_names.columns:
        gone = gone.unionByName(topic_names.filter(F.col("deleted_offset").isNotNull()).select(
            "cluster_id", F.col("topic_name").alias("_t"), F.col("deleted_offset").alias("_o"),
            F.lit(0).alias("_s")))
    topic_cfg = topic_cfg.unionByName(gone.distinct().withColumn(
        "_v", F.lit(None).cast("string")))
    points = rows.select("cluster_id", "topic_name", "offset", "seq").distinct()
    before = (F.col("_o") < F.col("offset")) | ((F.col("_o") == F.col("offset"))
                                                 & (F.col("_s") <= F.col("seq")))

    def asof(table: DataFrame, on: list, name: str) -> DataFrame:
        j = points.join(F.broadcast(table), on, "inner").filter(before)
        return j.groupBy("cluster_id", "topic_name", "offset", "seq").agg(
            F.max_by("_v", F.struct("_o", "_s")).alias(name))

    t = asof(topic_cfg.withColumnRenamed("_t", "topic_name"), ["cluster_id", "topic_name"],
             "_topic_min")
    c = asof(cluster_cfg, ["cluster_id"], "_cluster_min")
    m = asof(mv, ["cluster_id"], "metadata_version")
    k = ["cluster_id", "topic_name", "offset", "seq"]
    ctx = points.join(t, k, "left").join(c, k, "left").join(m, k, "left")
    value = F.coalesce(F.col("_topic_min"), F.col("_cluster_min"))
    ctx = ctx.withColumn("min_isr_config", F.when(value.isNull(), F.lit(default_min_isr))
                         .when(value.rlike(INT_PATTERN), value.try_cast("int"))
                         ).drop("_topic_min", "_cluster_min")
    return rows.join(ctx, k, "left")


def _b(c: Column) -> Column:
    """Null-safe boolean: SQL's three-valued logic would turn `~unclean` into NULL for every
    record without a LeaderRecoveryState field and silently drop the event (an absent
    field is null in the fold), so every condition is collapsed to true/false."""
    return F.coalesce(c, F.lit(False))


def _list_eq(a: Column, b: Column) -> Column:
    return _b(a == b)


def _without(lst: str, drop: str) -> Column:
    """`lst` minus the members of `drop`, order kept (Kafka's replica order matters)."""
    d = F.coalesce(F.col(drop), F.array().cast("array<int>"))
    return F.filter(F.coalesce(F.col(lst), F.array().cast("array<int>")),
                    lambda r: ~F.array_contains(d, r))


def events(folded: DataFrame, topic_names: DataFrame, configs: DataFrame,
           default_min_isr: int = 1) -> DataFrame:
    """partition_events rows for the non-seed rows of a fold.

    The rules are those of the simulator's ground truth (simulate/README.md "Label rules",
    `simulate.labels.step_events`), which implement the issue's definitions; B = the state
    before the record (`prev_*`), A = after. Only log records (seq 0) are events: a snapshot
    row is not a change (the records in between are unknown), so it carries none.
    """
    rows = folded.filter(~F.col("is_seed")).join(
        topic_names.select("cluster_id", "topic_id", "topic_name"), ["cluster_id", "topic_id"],
        "left")
    rows = context_at(rows, configs, default_min_isr, topic_names)
    rt = F.col("record_type")
    log = F.col("seq") == 0
    prev = _b(F.col("prev_exists"))
    live = log & prev & ~F.col("is_delete")
    change = live & (rt == "PartitionChangeRecord")
    # a PartitionRecord for an existing partition is compared with B like a change
    reset = live & (rt == "PartitionRecord")
    step = change | reset
    created = log & ~prev & (rt == "PartitionRecord")
    cleared = live & (rt == "ClearElrRecord")
    leader, pleader = F.col("leader"), F.col("prev_leader")
    # the record's Leader field (-2 = absent); a PartitionRecord always carries one
    leader_field = F.coalesce(F.when(change, F.col("r_leader")).otherwise(leader),
                              F.lit(NO_LEADER_CHANGE))
    moved = step & _b(~leader.eqNullSafe(pleader))
    prev_moving = _nonempty("prev_adding_replicas") | _nonempty("prev_removing_replicas")
    now_moving = _nonempty("adding_replicas") | _nonempty("removing_replicas")
    finished = step & prev_moving & ~now_moving
    # completion: A.replicas = B.replicas minus B.removing; cancel: minus B.adding
    completes = finished & _list_eq(F.col("replicas"),
                                    _without("prev_replicas", "prev_removing_replicas"))
    cancels = finished & ~completes & _list_eq(
        F.col("replicas"), _without("prev_replicas", "prev_adding_replicas"))
    # a reassignment whose ISR already covered the target completes in its first record
    instant = step & ~prev_moving & ~now_moving & ~_list_eq(F.col("replicas"),
                                                            F.col("prev_replicas"))
    lrs, plrs = F.col("leader_recovery_state"), F.col("prev_leader_recovery_state")
    was_recovering = _b(plrs == RECOVERING)
    by_lrs = change & _b(F.col("r_leader_recovery_state") == RECOVERING)
    # no FeatureLevelRecord yet (pre-3.3 log) = metadata.version unknown: LRS may not exist
    old_mv = _b(F.col("metadata_version").isNull() | (F.col("metadata_version") < MV_3_2_IV0))
    heuristic = (moved & (leader_field >= 0) & (was_recovering | old_mv)
                 & ~_has("prev_isr", "leader") & ~_has("prev_eligible_leader_replicas", "leader")
                 & ~completes)
    unclean = by_lrs | heuristic
    elected = moved & _b(leader >= 0) & ~unclean
    elr_elect = elected & _has("prev_eligible_leader_replicas", "leader") & ~_nonempty(
        "prev_isr")
    clean = elected & ~elr_elect
    elr_changed = (step | cleared) & _b(
        (_set("eligible_leader_replicas") != _set("prev_eligible_leader_replicas"))
        | (_set("last_known_elr") != _set("prev_last_known_elr")))
    # m(X) = `kraft.configs.partition_min_isr` (the broker's `Partition.effectiveMinIsr`):
    # min(min.insync.replicas, |X.replicas|), before and after separately; null stays null
    # (`least` would skip it)
    known = F.col("min_isr_config").isNotNull()
    min_isr = F.when(known, F.least(F.col("min_isr_config"), F.size("replicas")))
    prev_min_isr = F.when(known, F.least(F.col("min_isr_config"), F.size("prev_replicas")))
    n_isr = F.coalesce(F.size("isr"), F.lit(0))
    n_prev_isr = F.coalesce(F.size("prev_isr"), F.lit(0))
    under = (step & _b((n_isr < min_isr) & (n_prev_isr >= prev_min_isr))) | (
        created & _b(n_isr < min_isr))
    rows = rows.withColumn("min_isr", F.when(~F.col("is_delete"), min_isr))

    def ev(cond: Column, name: str, detection: Column | str | None = None) -> Column:
        det = detection if isinstance(detection, Column) else F.lit(detection).cast("string")
        return F.when(cond, F.struct(F.lit(name).alias("event_type"), det.alias("detection")))

    evs = F.array(
        ev(created, "partition_created"),
        ev(log & F.col("is_delete") & prev, "partition_deleted", rt),
        ev(unclean, "unclean_election",
           F.when(by_lrs, DETECTED_BY_LRS).when(was_recovering, DETECTED_ALREADY_RECOVERING)
           .otherwise(DETECTED_BY_MV)),
        ev(step & was_recovering & _b(lrs == RECOVERED), "recovery_completed"),
        ev(elr_changed, "elr_change", F.when(cleared, "ClearElrRecord")),
        ev(elr_elect, "elr_election"),
        ev(clean, "clean_election",
           F.when(completes | instant, "reassignment_completed")),
        ev(clean & _b(pleader >= 0) & _b(leader == F.get(F.col("replicas"), 0)),
           "preferred_election"),
        ev(step & _b((leader == NO_LEADER) & (pleader != NO_LEADER)), "leader_offline"),
        ev(step & _b(F.size(F.array_except("prev_isr", "isr")) > 0), "isr_shrink"),
        ev(step & _b(F.size(F.array_except("isr", "prev_isr")) > 0), "isr_expand"),
        ev(under, "under_min_isr"),
        ev((step & ~prev_moving & now_moving) | instant, "reassignment_started"),
        ev(completes | instant, "reassignment_completed"),
        ev(cancels, "reassignment_cancelled"),
    )
    out = rows.withColumn("_e", F.explode(F.filter(evs, lambda x: x.isNotNull())))
    prev_set, new_set = _set("prev_eligible_leader_replicas"), _set("eligible_leader_replicas")
    pl, nl = _set("prev_last_known_elr"), _set("last_known_elr")
    is_rec = F.col("_e.event_type") == "recovery_completed"
    return out.select(
        *KEY, "topic_name", "offset", "seq", "timestamp", F.col("_e.event_type").alias(
            "event_type"), F.col("_e.detection").alias("detection"), "record_type",
        F.col("prev_leader"), F.col("leader").alias("new_leader"),
        F.col("prev_isr"), F.col("isr").alias("new_isr"),
        F.col("prev_eligible_leader_replicas"),
        F.col("eligible_leader_replicas").alias("new_eligible_leader_replicas"),
        F.col("prev_last_known_elr"), F.col("last_known_elr").alias("new_last_known_elr"),
        F.array_except(new_set, prev_set).alias("elr_added"),
        F.array_except(prev_set, new_set).alias("elr_removed"),
        F.array_except(nl, pl).alias("last_known_elr_added"),
        F.array_except(pl, nl).alias("last_known_elr_removed"),
        F.col("prev_leader_recovery_state"),
        F.col("leader_recovery_state").alias("new_leader_recovery_state"),
        F.col("prev_replicas"), F.col("replicas").alias("new_replicas"), "min_isr",
        F.when(is_rec, F.col("prev_recovering_since_offset")).alias("recovery_started_offset"),
        F.when(is_rec, (F.col("timestamp").cast("double") - F.col(
            "prev_recovering_since_ts").cast("double")) * 1000).cast("long").alias(
                "recovery_duration_ms"))
