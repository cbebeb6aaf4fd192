"""Every commit of an increment, the one that creates a table included: one Delta
transaction opened by kraftlake, not by the DataFrame writer.

Delta's writer answers two questions before it writes, and both reconstruct the state of
the table's snapshot (Delta: "Compute snapshot for version", about three Spark jobs and
1-2 s on a table of an increment's lake, every time, since each commit makes a new
snapshot): whether the app id committed this version already (`txnAppId` / `txnVersion`),
and, for an overwrite with `replaceWhere`, which files hold the rows it replaces.
kraftlake knows both answers already: the transaction ids come from the version's checksum
file (`delta._done`, milliseconds), and the files of a slice it replaces are those its own
last commit of that slice added (`SliceFiles`, held by the job).

So the commit goes through the transaction API the writer itself uses
(`OptimisticTransaction.writeFiles` and `commit`, as Delta's own streaming sink does), with
the writer's actions: the data files (statistics computed by the same code), the removal
of the slice's files, a `SetTransaction` of the app id and version, and a `WRITE` commit
with the user metadata and the replaced predicate, so the table's history, checksum and
every reader see what the writer would have written.

What the transaction read is registered as the writer would register it, so Delta's
conflict check still decides whether the commit may land:
* the app id (`readTxn`): a concurrent commit of the same app id (a re-run) fails with
  `ConcurrentTransactionException`;
* for a replacement, the slice's files and its partition predicate: a commit after the
  transaction's snapshot that removed one of those files (an OPTIMIZE of the slice by
  `maintain` or a stream's compaction, a second job of the cluster) or added a file to the
  slice fails with `ConcurrentDeleteReadException` / `ConcurrentAppendException`. The held
  file list is never trusted on its own: the transaction starts on the snapshot of the very
  commit that list came from, so every commit since is checked against it. Without a held
  list (a new process, a conflict a moment ago) the transaction starts on the latest
  snapshot and the slice's files are those its Delta log lists there, read by delta-rs
  (`deltalog.slice_adds`: milliseconds) instead of Delta's `filterFiles`, which rebuilds
  the snapshot's state in Spark jobs (seconds in a new process); `filterFiles` where
  delta-rs cannot say exactly.

A table's first write creates it in the same transaction (`NewTable`): the metadata the
writer would declare (the table's schema, partition columns and properties), set with
`updateMetadataForNewTable`, the call the writer makes, so Delta picks the protocol and adds
the session's default table properties as it would for the writer. Through the writer, the
creation cost each table of a new lake about 0.3 s and three Spark jobs more (2026-12-04:
eight tables of a 153-record lake in 3.1-3.6 s against 1.2-1.4 s, 3.5-4.1 against 0.6-0.8
JVM CPU s). Only for a protocol kraftlake knows (`known_protocol`): a table another engine
upgraded (deletion vectors, column mapping ...), or one Delta would create with such
features (a session's `spark.databricks.delta.properties.defaults.*`), is written by the
writer, which honours them (`UnknownProtocol`).
"""

from __future__ import annotations

import json
import time
import uuid
from dataclasses import dataclass
from typing import Any
from urllib.parse import unquote

import pyarrow as pa
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql.types import StructType

from ..uris import join
from .arrow_files import data_files, partition_value, records, writable
from .deltalog import UnreadableError, slice_adds
from .hadoopfs import HadoopFS
from .jvmclass import java_class
from .schema import table_schema
from .written import Written

# The table property naming how many leading columns have statistics, and Delta's default
INDEXED_KEY = "delta.dataSkippingNumIndexedCols"
DEFAULT_INDEXED = 32
# A slice of a table: partition column -> value (one cluster's rows, or its open ones)
Slice = dict[str, str | bool]


@dataclass(frozen=True)
class SliceFiles:
    """The data files of one slice of a table as of one commit (`version`), and that
    version's snapshot (JVM): a replacement continuing from them starts its transaction
    there, so that Delta checks every commit since against them."""

    table_id: str
    version: int
    snapshot: Any  # org.apache.spark.sql.delta.Snapshot at `version`
    files: tuple[Any, ...]  # its AddFile actions of the slice


@dataclass(frozen=True)
class NewTable:
    """What a table's first commit declares besides its schema: the writer's `partitionBy`
    and the table properties it takes as options."""

    partition_by: tuple[str, ...]
    properties: dict[str, str]


class UnknownProtocol(Exception):
    """Delta would create the table with a protocol kraftlake's transaction does not know
    (`known_protocol`): the caller writes it through Delta's writer instead."""


def known_protocol(snapshot) -> bool:
    """The table's protocol is the one kraftlake's tables are created with (reader 1,
    writer 2: no table feature a transaction of its own would have to honour). `snapshot`:
    a Delta snapshot, or a transaction (whose protocol is the one it would commit)."""
    p = snapshot.protocol()
    return int(p.minReaderVersion()) == 1 and int(p.minWriterVersion()) <= 2


def indexed_columns(metadata) -> int | None:
    """How many leading data columns Delta keeps statistics on in a table of `metadata`
    (JVM): its `INDEXED_KEY`, else Delta's default; None when the table names its
    statistics columns instead (`delta.dataSkippingStatsColumns`), which the files
    kraftlake writes itself (`lake.arrow_files`) do not follow."""
    conf = metadata.configuration()
    if conf.contains("delta.dataSkippingStatsColumns"):
        return None
    return int(conf.apply(INDEXED_KEY)) if conf.contains(INDEXED_KEY) else DEFAULT_INDEXED


def sql_eq(col: str, value: str) -> str:
    """`col = 'value'` as a SQL predicate, the value quoted (ids come from the input)."""
    return "{} = '{}'".format(col, value.replace("'", "''"))


def predicate(slice_: Slice) -> str:
    """The slice as a SQL predicate on its partition columns."""
    return " AND ".join(sql_eq(c, v) if isinstance(v, str) else f"{c} = {str(v).lower()}"
                        for c, v in slice_.items())


def commit_files(spark: SparkSession, path: str,
                 frame: DataFrame | pa.Table | Written | None, snapshot, app_id: str,
                 version: int, user_metadata: str, *,
                 schema: StructType, slice_: Slice | None = None,
                 held: SliceFiles | None = None, new_table: NewTable | None = None
                 ) -> SliceFiles | None:
    """Commit `frame` (rows conformed to the table; None: no rows) to the Delta table at
    `path` as (app_id, version), whose latest snapshot `snapshot` was read to decide that
    this has not committed yet. An Arrow table's rows (in the table's schema) are written by
    the driver (`lake.arrow_files`) where the table's indexed columns allow, else by Spark;
    rows `Written` by a job's tasks are added as their files (`_arrow_files`).

    Without `slice_` an append. With it a replacement of that slice: its files are removed
    in the same commit, those of `held` when given (the transaction then starts on
    `held.snapshot`), else those Delta finds on `snapshot`. Rows of `frame` outside the
    slice are added by the same commit. Returns the slice's files after the commit (None:
    an append, or a commit another one overtook before its snapshot was read). `schema`:
    the table's columns, which the slice's predicate is resolved against (and Arrow rows
    the driver cannot write are handed to Spark as). `new_table`: what the table is created
    with when `snapshot` has none (version -1); `UnknownProtocol` if Delta would give it
    features this transaction does not honour (nothing is written then)."""
    some, none = java_class(spark, "scala.Some"), java_class(spark, "scala.Option").empty()
    log, txn = _transaction(spark, path, held.snapshot if held else snapshot, snapshot,
                            schema, new_table)
    seq = java_class(spark, "org.apache.spark.api.python.PythonUtils").toSeq
    partition_by = none  # the writer names its partition columns when it creates the table
    if int(snapshot.version()) < 0 and new_table is not None:  # `_transaction` declared it
        partition_by = some(seq(list(new_table.partition_by)))
    txn.readTxn().addOne(app_id)  # as the writer's own check would (see the module doc)
    where = None if slice_ is None else predicate(slice_)
    read: tuple[Any, ...] = ()
    if slice_ is not None and where is not None:
        expr = _resolved(spark, schema, where)
        listed = held.files if held is not None else _slice_files(spark, path, snapshot,
                                                                   slice_)
        if listed is not None:
            read = listed
            txn.trackFilesRead(seq(list(read)))
            txn.trackReadPredicates(seq([expr]), True, True)  # columns -> partition values
        else:
            found = txn.filterFiles(seq([expr]), False)
            read = tuple(found.apply(i) for i in range(found.size()))
    now = int(time.time() * 1000)
    if isinstance(frame, pa.Table | Written):
        actions = _arrow_files(spark, txn, path, frame, schema)
    else:
        actions = [] if frame is None else _seq_items(txn.writeFiles(frame._jdf))
    added = list(actions)
    if frame is not None:  # a replacement without rows keeps the slice (a marker commit)
        actions += [f.removeWithTimestamp(now, True) for f in read]
    actions.append(java_class(spark, "org.apache.spark.sql.delta.actions.SetTransaction")(
        app_id, version, some(now)))
    save_mode = java_class(spark, "org.apache.spark.sql.SaveMode")
    replacing = where is not None and frame is not None
    # DeltaOperations.Write(mode, partitionBy, predicate, userMetadata, and five options
    # the writer leaves unset for these writes)
    operation = java_class(spark, "org.apache.spark.sql.delta.DeltaOperations$Write")(
        save_mode.Overwrite if replacing else save_mode.Append, partition_by,
        some(where) if replacing else none, some(user_metadata), none, none, none, none, none)
    committed = int(txn.commit(seq(actions), operation))
    if slice_ is None:
        return None
    after = log.unsafeVolatileSnapshot()
    if int(after.version()) != committed:  # another commit came first: no file list held
        return None
    files = tuple(f for f in added if _in_slice(f, slice_)) if frame is not None else read
    return SliceFiles(str(after.metadata().id()), committed, after, files)


def write_files(spark: SparkSession, path: str, frame: DataFrame, snapshot, *,
                schema: StructType, new_table: NewTable | None = None) -> list[dict[str, Any]]:
    """`frame`'s rows written as data files of the table at `path` by Delta's writer
    (`writeFiles` of a transaction on `snapshot` that never commits), their add actions
    returned: rows a later stage reads back and `commit_files` adds as they are (`Written`),
    written once. `new_table`: the table's creation when `snapshot` has none, as
    `commit_files` declares it (`UnknownProtocol` as there). Files of a run that stops
    before their commit are in no commit, as a failed write's are; VACUUM removes them."""
    _log, txn = _transaction(spark, path, snapshot, snapshot, schema, new_table)
    return [json.loads(a.json())["add"] for a in _seq_items(txn.writeFiles(frame._jdf))]


def _transaction(spark: SparkSession, path: str, start, snapshot, schema: StructType,
                 new_table: NewTable | None) -> tuple[Any, Any]:
    """(DeltaLog, transaction) of the table at `path`, the transaction started on snapshot
    `start`; when `snapshot` (the table as last read) has no table, the transaction creates
    it (`_declare`), which needs `new_table`."""
    some, none = java_class(spark, "scala.Some"), java_class(spark, "scala.Option").empty()
    log = java_class(spark, "org.apache.spark.sql.delta.DeltaLog").forTable(
        spark._jsparkSession, path)
    txn = log.startTransaction(none, some(start))
    if int(snapshot.version()) < 0:
        if new_table is None:
            raise ValueError(f"{path}: no table there, and nothing says how to create it")
        _declare(spark, txn, schema, new_table)
    return log, txn


def _declare(spark: SparkSession, txn, schema: StructType, new_table: NewTable) -> None:
    """Make `txn` create its table: the `metaData` action the writer's first write makes
    (a new id, parquet, the schema, the partition columns, the properties), given to
    `updateMetadataForNewTable` as the writer gives it, which settles the protocol.
    `UnknownProtocol` if that is not one `known_protocol` accepts."""
    metadata = {"id": str(uuid.uuid4()), "format": {"provider": "parquet", "options": {}},
                "schemaString": schema.json(), "partitionColumns": list(new_table.partition_by),
                "configuration": new_table.properties, "createdTime": int(time.time() * 1000)}
    action = java_class(spark, "org.apache.spark.sql.delta.actions.Action")
    txn.updateMetadataForNewTable(action.fromJson(json.dumps({"metaData": metadata})))
    if not known_protocol(txn):
        p = txn.protocol()
        raise UnknownProtocol(f"reader {p.minReaderVersion()}, writer {p.minWriterVersion()}")


def _slice_files(spark: SparkSession, path: str, snapshot, slice_: Slice
                 ) -> tuple[Any, ...] | None:
    """The files of the slice on `snapshot`, as Delta's log holds them, read by delta-rs
    (`deltalog.slice_adds`); None where delta-rs cannot say exactly (Delta's `filterFiles`
    then finds them)."""
    try:
        adds = slice_adds(path, (str(snapshot.metadata().id()), int(snapshot.version())),
                          slice_values(slice_))
    except UnreadableError:
        return None
    action = java_class(spark, "org.apache.spark.sql.delta.actions.Action")
    return tuple(action.fromJson(json.dumps({"add": add})) for add in adds)


def _arrow_files(spark: SparkSession, txn, path: str, rows: pa.Table | Written,
                 schema: StructType) -> list[Any]:
    """`rows` written as the table's data files, as add actions of `txn`: by the driver
    when the table's statistics columns allow (`arrow_files.writable`), else by Spark
    (`writeFiles` of the rows as a local relation). Rows `Written` already (by a job's
    tasks, into the table's directory) are added as they are, their `rest` written by the
    driver. The commit's history then says what the writer's would: files, rows and bytes
    written."""
    meta = txn.metadata()
    parts = tuple(_seq_items(meta.partitionColumns()))
    indexed = indexed_columns(meta)
    arrow = rows.rest if isinstance(rows, Written) else rows
    columns = table_schema(rows.table).arrow if isinstance(rows, Written) else rows.schema
    if indexed is None or not writable(columns, parts, indexed) or (
            isinstance(rows, Written) and not rows.direct):
        frame = rows.frame(spark) if isinstance(rows, Written) else \
            spark.createDataFrame(rows, schema)
        return _seq_items(txn.writeFiles(frame._jdf))
    fs = HadoopFS(spark, path)
    adds = list(rows.adds) if isinstance(rows, Written) else []
    for add, data in data_files(arrow, parts, indexed) if arrow is not None else ():
        fs.write_bytes(join(path, unquote(add["path"])), data)
        adds.append(add)
    metrics = java_class(spark, "org.apache.spark.sql.execution.metric.SQLMetrics")
    sc = spark.sparkContext._jsc.sc()
    counted = {}
    for key, n in (("numFiles", len(adds)),
                   ("numOutputRows", sum(records(a) for a in adds)),
                   ("numOutputBytes", sum(a["size"] for a in adds))):
        counted[key] = metrics.createMetric(sc, key)
        counted[key].add(n)
    txn.registerSQLMetrics(spark._jsparkSession, java_class(
        spark, "org.apache.spark.api.python.PythonUtils").toScalaMap(counted))
    action = java_class(spark, "org.apache.spark.sql.delta.actions.Action")
    return [action.fromJson(json.dumps({"add": add})) for add in adds]


def _resolved(spark: SparkSession, schema: StructType, where: str):
    """`where` as a resolved Catalyst expression over the table's columns (`schema`): Delta
    rewrites a read predicate's columns into the partition values of the files it checks,
    which it can only do for resolved columns. Only analysed, never run."""
    filtered = spark.createDataFrame([], schema).filter(where)
    return filtered._jdf.queryExecution().analyzed().condition()


def _seq_items(seq) -> list[Any]:
    """The elements of a Scala sequence (a few files: one call each)."""
    return [seq.apply(i) for i in range(seq.size())]


def slice_values(slice_: Slice) -> dict[str, str | None]:
    """The slice's partition values as Delta's log holds them (`partitionValues`)."""
    return {c: partition_value(v) for c, v in slice_.items()}


def _in_slice(add, slice_: Slice) -> bool:
    """The AddFile's partition values are the slice's."""
    values = json.loads(add.json())["add"].get("partitionValues") or {}
    return all(values.get(c) == v for c, v in slice_values(slice_).items())
