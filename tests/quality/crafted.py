"""Crafted inputs for the quality tests: real segment bytes and tables derived from real lakes.

Segments are written with the simulator's `LogWriter` (RecordBatch v2, CRC-32C, the
controller's framing) and decoded by the pipeline's own `kraft-metadata` Spark source, so a
broken byte sequence reaches the records suite exactly the way ingest would deliver it.
"""

from __future__ import annotations

import base64
import shutil
import uuid
from collections.abc import Callable
from pathlib import Path

import deltalake
import pyarrow as pa
import pyarrow.compute as pc
from pyspark.sql import SparkSession
from pyspark.sql import functions as F

from kraftlake.codec.batch import build_batch, encode_batch
from kraftlake.codec.records import encode_metadata_value
from kraftlake.lake.delta import Lake
from kraftlake.lake.schema import table_schema
from kraftlake.simulate.writer import LogWriter

CLUSTER = "crafted-quality-cluster"
T0 = 1_700_000_000_000  # ms; 2023-11-14
TOPIC_ID = base64.urlsafe_b64encode(uuid.UUID(int=0x1234).bytes).decode().rstrip("=")
DIR_ID = base64.urlsafe_b64encode(uuid.UUID(int=0x5678).bytes).decode().rstrip("=")

BREAKS = ("gap", "epoch_back", "epoch_without_leader_change", "bad_lrs", "undecodable")


def _partition_record() -> tuple[str, int, dict]:
    return ("PartitionRecord", 1, {
        "partition_id": 0, "topic_id": TOPIC_ID, "replicas": [1, 2], "isr": [1, 2],
        "removing_replicas": [], "adding_replicas": [], "leader": 1, "leader_epoch": 0,
        "partition_epoch": 0, "leader_recovery_state": 0, "directories": [DIR_ID, DIR_ID]})


def write_log(root: Path, brk: str | None = None) -> Path:
    """A small valid metadata log (two Raft epochs, a topic, changes) with one optional break.

    `brk` is one of BREAKS: an offset gap, a Raft epoch going back, a new epoch that does not
    start with a LeaderChange, a LeaderRecoveryState field of 5, or a truncated record value.
    Returns the `__cluster_metadata-0` directory.
    """
    assert brk is None or brk in BREAKS, brk
    w = LogWriter(root)
    ts = T0
    w.new_epoch(1, [1], ts)
    w.append([("FeatureLevelRecord", 0, {"name": "metadata.version", "feature_level": 21})], ts)
    w.append([("TopicRecord", 0, {"name": "orders", "topic_id": TOPIC_ID}),
              _partition_record()], ts + 10)
    for i in range(3):
        w.append_noop(ts + 500 * (i + 1))
    lrs = 5 if brk == "bad_lrs" else -1
    w.append([("PartitionChangeRecord", 1, {"partition_id": 0, "topic_id": TOPIC_ID,
                                            "isr": [1], "leader_recovery_state": lrs})],
             ts + 2000)
    if brk == "gap":
        w.next += 3
    if brk == "epoch_without_leader_change":
        w.epoch += 1
        w.epoch_starts.append((w.epoch, w.next))
    else:
        w.new_epoch(1, [1], ts + 2500)
    for i in range(3):
        w.append_noop(ts + 3000 + 500 * i)
    if brk == "epoch_back":
        w.epoch -= 1
        w.append_noop(ts + 5000)
    w.close()
    if brk == "undecodable":
        value = encode_metadata_value("TopicRecord", 0, {"name": "late", "topic_id": TOPIC_ID})
        batch = build_batch(w.next, w.epoch, w.stamp(ts + 6000), [value[:-4]])
        seg = sorted(w.dir.glob("*.log"))[-1]
        with seg.open("ab") as f:
            f.write(encode_batch(batch))
    w.write_companions(cluster_id=CLUSTER, node_id=1, directory_id=DIR_ID, bootstrap=[],
                       leader_id=1, voters=[1], ts=T0, formatted="crafted for tests/quality")
    return w.dir


def bronze(spark: SparkSession, log_dir: Path) -> pa.Table:
    """The `records` rows the ingest's bronze step would write for `log_dir`."""
    df = (spark.read.format("kraft-metadata").option("cluster_id", CLUSTER).load(str(log_dir))
          .filter(F.col("row_kind") == "record"))
    return df.select(*table_schema("records").names).toArrow()


def records_lake(root: Path, records: pa.Table, progress_records: int | None = None) -> Lake:
    """A lake holding `records` (and an ingest_progress row claiming `progress_records`)."""
    lake = Lake(root)
    lake.append("records", records)
    if progress_records is None:
        _mark_lake(lake)
    else:  # the progress row makes it a lake: no empty commit before it (a Spark write)
        lake.append("ingest_progress", pa.table({
            "cluster_id": [CLUSTER], "app_id": [f"kraftlake-ingest:{CLUSTER}"], "version": [0],
            "start_offset": [0], "end_offset": [records.num_rows],
            "records": [progress_records]}))
    return lake


# ------------------------------------------------------------------- crafted tables

GOLD = ["topics", "partition_changes", "partition_timeline", "partition_events",
        "partition_current"]


def copy_lake(base: Lake, root: Path,
              edits: dict[str, Callable[[pa.Table], pa.Table]] | None = None) -> Lake:
    """The silver/gold tables of `base` (and its PartitionRecord bronze rows) in a new lake,
    each passed through its edit function if there is one."""
    edits = edits or {}
    lake = Lake(root)
    rec = base.read_arrow("records", "record_type = 'PartitionRecord'")
    for name, table in [("records", rec), *[(n, base.read_arrow(n)) for n in GOLD]]:
        if name in edits:
            table = edits[name](table)
        lake.append(name, table)
    _mark_lake(lake)
    return lake


def _mark_lake(lake: Lake) -> None:
    """An (empty) ingest_progress table: what makes a directory a kraftlake lake."""
    lake.append("ingest_progress", pa.table({}))


def edited_copy(base: Path, root: Path,
                edits: dict[str, Callable[[pa.Table], pa.Table]]) -> Lake:
    """A file copy of the lake at `base` (a Delta log names its data files relative to the
    table, so the copy is a lake of its own) with each table in `edits` overwritten by its
    edit of the table's rows: one Delta commit per edited table, where `copy_lake` creates
    and fills every table (1.1 s against 5.4-6.5 s for one edit, idle machine).

    The rows are read and written back by delta-rs, in the table's own schema and
    partitioning; the suites then read the edited table through Spark, as they read any
    lake. Through the test's Spark session the read cost 0.8-1.8 CPU s and the write
    0.4-1.1 per table (five cases, under load), delta-rs 0.02-0.3 s for both."""
    shutil.copytree(base, root)
    lake = Lake(root)
    for name, edit in edits.items():
        path = lake.path(name)
        deltalake.write_deltalake(path, edit(deltalake.DeltaTable(path).to_pyarrow_table()),
                                  mode="overwrite")
    return lake


def set_cell(table: pa.Table, row: int, column: str, value) -> pa.Table:
    """`table` with one cell replaced (value None = null)."""
    col = table.column(column).to_pylist()
    col[row] = value
    i = table.column_names.index(column)
    return table.set_column(i, column, pa.array(col, type=table.schema.field(column).type))


def find_row(table: pa.Table, pred: Callable[[dict], bool]) -> int:
    """Index of the first row (as a dict) satisfying `pred`."""
    for i, row in enumerate(table.to_pylist()):
        if pred(row):
            return i
    raise LookupError("no row matches")


def drop_row(table: pa.Table, row: int) -> pa.Table:
    mask = [i != row for i in range(table.num_rows)]
    return table.filter(pa.array(mask))


def empty(table: pa.Table) -> pa.Table:
    return table.slice(0, 0)


def only(table: pa.Table, column: str, value) -> pa.Table:
    return table.filter(pc.equal(table[column], value))
