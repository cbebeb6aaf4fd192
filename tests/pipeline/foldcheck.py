"""Helpers comparing the Spark fold and event detection with the reference replay
(`kraftlake.reference.replay`) and the ground-truth label rules (`simulate.labels`)."""

from __future__ import annotations

from typing import Any

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from kraftlake.detect.events import events
from kraftlake.fold.silver import committed, configs_of, partition_changes, relevant, topics_of
from kraftlake.fold.window import fold
from kraftlake.kraft.partition import STATE_COLUMNS

STATE_KEYS = list(STATE_COLUMNS)


def spark_fold_rows(spark: SparkSession, src: DataFrame) -> list[dict[str, Any]]:
    """Fold source rows (several clusters at once) -> plain dicts, deletes included.

    The relevant rows are computed once (`localCheckpoint`): every branch of the fold plan
    would otherwise decode all sources again (the real logs: ~6x the 20 s decode).
    """
    return spark_fold_and_events(spark, src, events_too=False)[0]


def spark_fold_and_events(spark: SparkSession, src: DataFrame, default_min_isr: int = 1,
                          *, events_too: bool = True
                          ) -> tuple[list[dict[str, Any]], list[tuple]]:
    """(fold rows as `spark_fold_rows`, event keys (cluster_id, topic_id, partition_id,
    offset, event_type)) of source rows, through the same silver / fold / detect functions
    the increment job calls."""
    rel = relevant(src).localCheckpoint()
    done, _pending = committed(rel)
    eff = done.filter((F.col("source") == "log") | (F.col("snapshot_role") == "reset"))
    topics = topics_of(eff)
    names = topics.select("cluster_id", "topic_id", "topic_name")
    empty = spark.createDataFrame([], "cluster_id string, topic_id string, partition_id int")
    none = spark.createDataFrame([], "cluster_id string, topic_id string")
    changes = partition_changes(done, empty, names, none)
    folded, _orphans = fold(changes)
    folded = folded.localCheckpoint()
    rows = folded.select("cluster_id", "topic_id", "partition_id", "offset", "seq",
                         "record_type", "is_delete", *STATE_KEYS).collect()
    keys: list[tuple] = []
    if events_too:
        evs = events(folded, topics, configs_of(eff), default_min_isr)
        keys = [tuple(r) for r in evs.select("cluster_id", "topic_id", "partition_id",
                                              "offset", "event_type").collect()]
    return [r.asDict() for r in rows], keys


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
