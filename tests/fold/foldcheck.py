"""Helpers comparing the Spark fold's kernel with the reference replay
(`kraftlake.reference.replay`) and the ground-truth label rules (`simulate.labels`)."""

from __future__ import annotations

import tempfile
from collections.abc import Callable
from typing import Any

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from kraftlake.fold import kernel
from kraftlake.fold.context import cluster_contexts
from kraftlake.fold.silver import (
    committed,
    configs_of,
    partition_changes,
    relevant,
    topics_of,
    transaction_markers,
)
from kraftlake.kraft.partition import STATE_COLUMNS
from kraftlake.lake.delta import Lake, conform
from kraftlake.lake.schema import table_schema

STATE_KEYS = list(STATE_COLUMNS)


def spark_fold_rows(spark: SparkSession, src: DataFrame) -> list[dict[str, Any]]:
    """Fold source rows (several clusters at once) -> plain dicts, deletes included."""
    return spark_fold_and_events(spark, src)[0]


def spark_fold_and_events(spark: SparkSession, src: DataFrame, default_min_isr: int = 1,
                          on_driver: bool = False, rows: int = 0
                          ) -> tuple[list[dict[str, Any]], list[tuple], dict[tuple, Any]]:
    """(fold rows as `spark_fold_rows`, event keys (cluster_id, topic_id, partition_id,
    offset, event_type), intervals (cluster_id, topic_id, partition_id, kind, start_offset)
    -> end_offset) of source rows, through the same silver functions and kernel the
    increment job runs: Spark's tasks (`kernel.write_files`, as many as it gives `rows`
    changes, the tables' files they write read back), or
    with `on_driver` the driver (`kernel.run_on_driver_arrow`, a small increment's path).

    The kernel writes no delete rows: a state that ends with no state after it at that
    offset ended by a deletion, which is how the rows of a deletion are rebuilt here. The
    relevant rows are computed once (`localCheckpoint`): every branch of the plan would
    otherwise decode all sources again.
    """
    rel = relevant(src).localCheckpoint()
    done, _pending = committed(rel, transaction_markers(rel).toArrow())
    eff = done.filter((F.col("source") == "log") | (F.col("snapshot_role") == "reset"))
    topics = topics_of(eff)
    names = topics.select("cluster_id", "topic_id", "topic_name")
    empty = spark.createDataFrame([], "cluster_id string, topic_id string, partition_id int")
    none = spark.createDataFrame([], "cluster_id string, topic_id string")
    changes = partition_changes(done, empty, names, none)
    seeds, opened = (_empty_like(spark, "partition_current"),
                     _empty_like(spark, "partition_intervals"))
    contexts = cluster_contexts(configs_of(eff).toArrow(), topics.toArrow(), default_min_isr)
    if on_driver:  # as a small increment's rows reach it: Arrow on the driver
        out = spark.createDataFrame(kernel.run_on_driver_arrow(
            spark, conform(changes, "partition_changes").toArrow(), seeds.toArrow(),
            opened.toArrow(), contexts), kernel.output_schema())
        return _outputs(lambda kind: kernel.part(out, kind))
    with tempfile.TemporaryDirectory(prefix="kernel-files-") as tmp:
        # the tables' files, as a large increment's tasks write them into a new lake
        lake = Lake(tmp, spark)
        files = kernel.write_files(spark, changes, seeds, opened, contexts, {
            kind: lake.files_target(table, f"{tmp}/work") for kind, table in kernel.TABLES.items()
        }, rows=rows)
        return _outputs(lambda kind: files.written[kind].files_frame(spark))


def _outputs(part: Callable[[str], DataFrame]
             ) -> tuple[list[dict[str, Any]], list[tuple], dict[tuple, Any]]:
    """`spark_fold_and_events`' answer from the kernel's rows of each kind (`part`)."""
    tl = part("timeline").select(
        "cluster_id", "topic_id", "partition_id", "valid_from_offset", "valid_to_offset", "seq",
        "record_type", *STATE_KEYS).collect()
    rows, starts = [], {(r.cluster_id, r.topic_id, r.partition_id, r.valid_from_offset)
                        for r in tl}
    for r in tl:
        d = r.asDict()
        d["offset"] = d.pop("valid_from_offset")
        to = d.pop("valid_to_offset")
        rows.append({**d, "is_delete": False})
        if to is not None and (r.cluster_id, r.topic_id, r.partition_id, to) not in starts:
            rows.append({"cluster_id": r.cluster_id, "topic_id": r.topic_id,
                         "partition_id": r.partition_id, "offset": to, "is_delete": True})
    keys = [tuple(r) for r in part("event").select(
        "cluster_id", "topic_id", "partition_id", "offset", "event_type").collect()]
    intervals = {tuple(r[:5]): r[5] for r in part("interval").select(
        "cluster_id", "topic_id", "partition_id", "kind", "start_offset", "end_offset")
        .collect()}
    return rows, keys, intervals


def _empty_like(spark: SparkSession, table: str) -> DataFrame:
    return spark.createDataFrame([], table_schema(table).spark)


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
