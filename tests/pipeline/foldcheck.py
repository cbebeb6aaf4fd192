"""Helpers comparing the Spark fold with the reference replay (`kraftlake.reference.replay`)."""

from __future__ import annotations

from typing import Any

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from kraftlake.fold.silver import committed, partition_changes, relevant, topics_of
from kraftlake.fold.window import fold

STATE_KEYS = ["leader", "leader_epoch", "partition_epoch", "isr", "eligible_leader_replicas",
              "last_known_elr", "replicas", "adding_replicas", "removing_replicas",
              "leader_recovery_state", "directories"]


def spark_fold_rows(spark: SparkSession, src: DataFrame) -> list[dict[str, Any]]:
    """Fold source rows (several clusters at once) -> plain dicts, deletes included.

    The relevant rows are computed once (`localCheckpoint`): every branch of the fold plan
    would otherwise decode all sources again (the real logs: ~6x the 20 s decode).
    """
    rel = relevant(src).localCheckpoint()
    done, _pending = committed(rel)
    eff = done.filter((F.col("source") == "log") | (F.col("snapshot_role") == "reset"))
    names = topics_of(eff).select("cluster_id", "topic_id", "topic_name")
    empty = spark.createDataFrame([], "cluster_id string, topic_id string, partition_id int")
    none = spark.createDataFrame([], "cluster_id string, topic_id string")
    changes = partition_changes(done, empty, names, none)
    folded, _orphans = fold(changes)
    rows = folded.select("cluster_id", "topic_id", "partition_id", "offset", "seq",
                         "record_type", "is_delete", *STATE_KEYS).collect()
    return [r.asDict() for r in rows]


def replay_rows(steps) -> list[dict[str, Any]]:
    out = []
    for s in steps:
        d = {"topic_id": s.topic_id, "partition_id": s.partition_id, "offset": s.offset,
             "is_delete": s.deleted}
        if not s.deleted:
            d.update(s.after.as_dict(directories=True))
        out.append(d)
    return out


def normalise(rows: list[dict[str, Any]]) -> list[tuple]:
    """Comparable, order-independent form (deletes carry no state)."""
    out = []
    for r in rows:
        key = (r["topic_id"], r["partition_id"], r["offset"], bool(r["is_delete"]))
        state = () if r["is_delete"] else tuple(
            tuple(r[k]) if isinstance(r[k], (list, tuple)) else r[k] for k in STATE_KEYS)
        out.append((key, state))
    return sorted(out)
