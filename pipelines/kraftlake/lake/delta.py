"""The lake: Delta tables under one root URI, written and read by delta-spark.

A large increment's rows are written by Spark in the executors; a small one's (a few
hundred rows, decoded and folded on the driver) by the driver from its Arrow tables
(`lake.arrow_files`). Either way the driver commits the Delta log entry, and exactly-once
comes from Delta's transaction identifiers, kept in the table itself (no side files):

* an append, the one that creates a table included (`new_table`), and a replacement of a
  table's slice (`replace`: one cluster's current states, open intervals, open incident,
  topics), is a Delta transaction kraftlake opens itself (`lake.transaction`) with a
  `SetTransaction` of the app id and version; a write into a table whose protocol kraftlake
  does not know carries the writer options `txnAppId` / `txnVersion` instead;
* merges (snapshot reconciliation, refusals in `quarantine`) carry the same pair as the
  session settings `spark.databricks.delta.write.txnAppId` / `txnVersion`, in a session of
  the writing thread's own (`own_session`) when an increment commits independent tables
  from several threads: one thread's transaction id must never reach another's merge.

Before computing a table's rows the increment asks `committed` (the table's last version for
the app id, from its Delta snapshot), so a job killed at any instant and re-run writes
exactly the tables that did not commit, with the same rows.

Reads go through the Delta protocol (`format("delta")`), so deletion vectors or column
mapping written by another engine are honoured, and `pinned()` gives a view of the lake at
the versions current when it was called: one increment reads all its inputs at one moment.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path

import delta.exceptions
import pyarrow as pa
from delta.tables import DeltaTable
from pyspark.errors import AnalysisException
from pyspark.sql import Column, DataFrame, DataFrameReader, SparkSession
from pyspark.sql import functions as F

from ..uris import join, to_uri
from .apps import COMMIT_LOOKBACK, META_APP, META_VERSION, increment_metadata
from .conflicts import SliceMovedError
from .cut import Cut, cut_query, take_cut
from .hadoopfs import HadoopFS
from .jvmclass import has_jvm, java_class
from .location import PROGRESS_TABLE, not_a_lake
from .schema import layout_problem, table_names, table_rows, table_schema
from .transaction import (
    DEFAULT_INDEXED,
    INDEXED_KEY,
    NewTable,
    Slice,
    SliceFiles,
    UnknownProtocol,
    commit_files,
    indexed_columns,
    known_protocol,
    predicate,
    slice_values,
    write_files,
)
from .written import Target, Written

_TXN_CONF = ("spark.databricks.delta.write.txnAppId", "spark.databricks.delta.write.txnVersion")
_USER_META_CONF = "spark.databricks.delta.commitInfo.userMetadata"
# A MERGE first copies its source unless Delta can prove it immutable (only Delta tables
# read); kraftlake's sources are its own work frames (parquet written once per increment)
# and rows computed from them, which nothing changes during the merge. The copy is one more
# Spark job and a full write of the source per merge, so the merges here skip it.
_MERGE_SOURCE_CONF = ("spark.databricks.delta.merge.materializeSource", "none")
# Table properties chosen for kraftlake's workload, set when a table is created:
# * a checkpoint about every 20 commits instead of 10 (`CHECKPOINT_INTERVALS`);
# * min/max statistics for the first 8 columns only (Delta's default: 32). The tables lead
#   with their keys and offsets, which the merges and readers filter on; later columns hold
#   JSON text, raw record bytes and arrays, whose statistics cost time at every write and
#   prune nothing.
TABLE_PROPERTIES = {INDEXED_KEY: "8"}
# Commits between two checkpoints of a table. An increment commits each table at most once,
# so tables created by the same first increment reach the same versions together: with one
# interval for all, every table would write its checkpoint (a Spark job and a parquet file,
# inside its commit) on the same increment, every 20th. Distinct primes make two tables
# checkpoint on one increment only at multiples of both; the tables committed most often
# get the shortest, so that a reader replays few JSON commits where they pile up fastest.
CHECKPOINT_INTERVALS = dict(zip(
    ("ingest_progress", "records", "partition_current", "partition_events",
     "partition_timeline", "partition_intervals", "partition_changes", "incidents",
     "quarantine", "brokers", "configs", "topics", "snapshot_reconciliation",
     "quality_results"),
    (17, 19, 23, 29, 31, 37, 41, 43, 47, 53, 59, 61, 67, 71), strict=True))


# Replacing a slice writes, in the same commit, rows outside it (the states an increment
# closes go to the history partition beside the slice's new rows). Delta refuses such rows
# in a `replaceWhere` overwrite unless this check is off; the files of the slice are still
# the only ones removed (`replace`).
_REPLACE_CHECK_CONF = "spark.databricks.delta.replaceWhere.constraintCheck.enabled"
UPGRADE_COMMAND = "kraftlake upgrade --lake {root}"
# Attempts of a write whose commit Delta refused for another writer's (`_retrying`).
WRITE_ATTEMPTS = 3

# (table id, version): which table, as of which commit (`Lake.tag`)
Tag = tuple[str, int]
# Delta's refusals of a commit for another writer's. Its Python classes do not derive from
# DeltaConcurrentModificationException (delta-spark 4.4), so each is named.
COMMIT_CONFLICTS = tuple(getattr(delta.exceptions, n) for n in (
    "DeltaConcurrentModificationException", "ConcurrentWriteException",
    "MetadataChangedException", "ProtocolChangedException", "ConcurrentAppendException",
    "ConcurrentDeleteReadException", "ConcurrentDeleteDeleteException",
    "ConcurrentTransactionException"))


# (table path, slice predicate) -> the slice's files after this process's last replacement
# of it (`Lake.replace`): what the next replacement removes, checked by Delta's conflict
# detection against every commit since (`lake.transaction`)
_SLICES: dict[tuple[str, str], SliceFiles] = {}
_SLICES_LOCK = threading.Lock()


def _commits_files(snap) -> bool:
    """kraftlake's transaction adds data files written for this table as they are: a
    protocol it knows, statistics on the first columns only (`known_protocol`,
    `arrow_files`)."""
    return known_protocol(snap) and indexed_columns(snap.metadata()) is not None


def new_table(name: str) -> NewTable:
    """What table `name` is created with: its partition columns and properties
    (`TABLE_PROPERTIES`, its `CHECKPOINT_INTERVALS`)."""
    return NewTable(table_schema(name).partition_by, {
        **TABLE_PROPERTIES, "delta.checkpointInterval": str(CHECKPOINT_INTERVALS[name])})


class LakeLayoutError(ValueError):
    """A table on disk does not have the layout this version of kraftlake writes."""


def conform(df: DataFrame, name: str) -> DataFrame:
    """`df` as rows of table `name`: its columns, in order, with their types (missing = null).

    One projection of SQL expressions, handed to the JVM in one call: built from `F.col`,
    `F.lit` and `cast`, each column cost several py4j round trips, and every write conforms
    its rows (an increment: ~800 round trips, most of them failed class lookups)."""
    have = set(df.columns)
    return df.selectExpr(*[_column_sql(f, f"`{f.name}`" if f.name in have else "NULL")
                           for f in table_schema(name).spark.fields])


def chunked(rows: pa.Table) -> pa.Table:
    """`rows`, with one empty chunk per column when it has no rows: pyspark makes no frame
    of a column of no chunks (what filtering, concatenating or collecting nothing gives)."""
    return rows if rows.num_rows else rows.schema.empty_table()


def from_arrow(spark: SparkSession, name: str, data: pa.Table) -> DataFrame:
    """Driver-made rows (`data`: some or all of table `name`'s columns; a missing one is
    null) as a DataFrame of the table's schema.

    Through Arrow, so the rows reach the JVM as Arrow batches and every later job reads them
    there. A DataFrame made from Python rows (`createDataFrame(list)`) is a Python RDD: each
    job that reads it, even an empty one (a table a new lake does not have yet), runs Python
    tasks, and a new lake's first increment read a dozen of them."""
    return spark.createDataFrame(chunked(table_rows(data, name)), table_schema(name).spark)


def _column_sql(field, value: str) -> str:
    """A table column as a SQL select item: `value` cast to the column's type, named as it."""
    return f"CAST({value} AS {field.dataType.simpleString()}) AS `{field.name}`"


class Lake:
    """A lake root; table `name` lives at `<root>/<name>`.

    `spark`: the session to use (default: the active one, so `Lake(path)` works wherever a
    session exists). `read(spark, name)` is a table as a DataFrame, `consistent()` the lake
    as of each cluster's last complete increment. Example: the notebook
    `examples/kraftlake-api.ipynb`, which the suite runs.
    """

    def __init__(self, root: str | Path, spark: SparkSession | None = None,
                 tags: dict[str, Tag] | None = None, cut: Cut | None = None) -> None:
        self.root = to_uri(root)
        self._spark = spark
        self._tags = tags or {}  # table -> (table id, version) of a pinned view
        # table -> version this view reads (None: the latest)
        self._pins = None if tags is None else {n: v for n, (_id, v) in tags.items()}
        self._cut = cut  # a consistent view's cut (`consistent`)
        self._checked: set[str] = set()  # tables whose layout was checked
        self._threads = threading.local()  # a committing thread's own session (own_session)

    @property
    def spark(self) -> SparkSession:
        """The lake's session: the one given, else the active one when first asked (kept:
        the active session is per thread, and a lake is also used by commit threads)."""
        if self._spark is None:
            self._spark = SparkSession.getActiveSession()
        if self._spark is None:
            raise RuntimeError("the lake needs a SparkSession (kraftlake.spark.get_spark)")
        return self._spark

    @property
    def fs(self) -> HadoopFS:
        return HadoopFS(self.spark, self.root)

    # ------------------------------------------------------------------ metadata

    def path(self, name: str) -> str:
        return join(self.root, name)

    def exists(self, name: str) -> bool:
        """The table has a commit, as the file system says now. (`DeltaTable.isDeltaTable`
        answers from Delta's cached view of the path, which a process that looked before
        another writer's first commit keeps for up to an hour.)"""
        return self.version(name) is not None

    def is_lake(self) -> bool:
        """A kraftlake lake has an `ingest_progress` table (every increment ends with it)."""
        return self.exists(PROGRESS_TABLE)

    def require(self) -> Lake:
        """This lake, or `NotALakeError` (a reader on a wrong `--lake` gets an error, not an
        empty answer)."""
        if not self.is_lake():
            raise not_a_lake(self.root)
        return self

    def _snapshot(self, name: str):
        """The table's current Delta snapshot (JVM), brought up to date."""
        spark = self.spark
        log = java_class(spark, "org.apache.spark.sql.delta.DeltaLog").forTable(
            spark._jsparkSession, self.path(name))
        none = java_class(spark, "scala.Option").empty()
        return log.update(False, none, none)

    def version(self, name: str) -> int | None:
        """The table's current version (None: no table)."""
        return _version(self._snapshot(name))

    def tag(self, name: str) -> Tag | None:
        """(table id, version) of the table now (None: no table): what rows read from it
        reflect. The version alone would not do: a table deleted and written again starts
        over at version 0 under a new id."""
        return _tag(self._snapshot(name))

    def txn_version(self, name: str, app_id: str) -> int | None:
        """Last transaction version `app_id` committed to table `name` (None = never)."""
        return _txn_version(self._snapshot(name), app_id)

    def committed(self, name: str, app_id: str, version: int) -> bool:
        """`app_id` committed `version` (or a later one) to table `name`."""
        return _done(self._snapshot(name), app_id, version)

    def commit_metadata(self, name: str, app_id: str, version: int) -> dict[str, str] | None:
        """The metadata written with the commit of (app_id, version) to `name`, if any.

        Lets a re-run that skips an already committed table learn what that commit wrote.
        Every commit file the table keeps is searched, newest first."""
        if not self.committed(name, app_id, version):
            return None
        found = self._commit_info(name, app_id, version, lookback=None)
        return None if found is None else found[2]

    def commit_of(self, name: str, app_id: str, version: int) -> tuple[int, dict[str, int]]:
        """The table version that committed (app_id, version), and Delta's operation
        metrics of that commit (rows written, ...).

        The commit sought is normally the newest, or a few behind it when jobs of other
        clusters committed to the table since. `LookupError` when it is not among the last
        `COMMIT_LOOKBACK` commits."""
        found = self._commit_info(name, app_id, version, lookback=COMMIT_LOOKBACK)
        if found is None:
            raise LookupError(f"{self.path(name)}: no commit of {app_id} {version} among the "
                              f"last {COMMIT_LOOKBACK}")
        v, info, _meta = found
        metrics = info.get("operationMetrics") or {}
        return v, {k: int(x) for k, x in metrics.items() if str(x).isdigit()}

    def _commit_info(self, name: str, app_id: str, version: int, lookback: int | None
                     ) -> tuple[int, dict, dict] | None:
        """(table version, commitInfo, its user metadata) of the commit of (app_id, version)
        to `name`, among the newest `lookback` commits (None: all the table keeps)."""
        for v, info in self.commit_infos(name, limit=lookback):
            if (meta := increment_metadata(info, app_id, version)) is not None:
                return v, info, meta
        return None

    def commit_infos(self, name: str, newer_than: int = -1, limit: int | None = None
                     ) -> Iterator[tuple[int, dict]]:
        """(table version, commitInfo) of table `name`'s commits after version `newer_than`,
        newest first, at most `limit` of them: read from the commit files, where Delta's
        `history()` would start a Spark job. Commits whose files the log no longer keeps
        (older than its retention, behind a checkpoint) are left out."""
        latest = self.version(name)
        if latest is None:
            return
        log = join(self.path(name), "_delta_log")
        stop = newer_than if limit is None else max(newer_than, latest - limit)
        for v in range(latest, stop, -1):
            for line in (self.fs.read_text(join(log, f"{v:020d}.json")) or "").splitlines():
                if (info := json.loads(line).get("commitInfo")) is not None:
                    yield v, info
                    break

    def transactions(self, name: str) -> tuple[int | None, dict[str, int]]:
        """The table's current version (None: no table) and every app id that committed to
        it with its last transaction version, from one snapshot."""
        snap = self._snapshot(name)
        return _version(snap), _transactions(snap)

    def _check_layout(self, name: str, snap) -> None:
        """Refuse to write on into a table laid out otherwise than its schema says.

        An existing table partitioned otherwise, or with other columns, was written by an
        older kraftlake; writing on would mix layouts (and an append through a transaction,
        `lake.transaction`, would not even compare the columns), so it is refused with the
        remedy. Checked once per table and instance, on the table's snapshot `snap`. Only
        for a table that exists (a first write creates it as it should be).
        """
        if name in self._checked:
            return
        problem = _layout_problem(name, snap)
        if problem is not None:
            raise LakeLayoutError(
                f"{self.path(name)}: table {problem}; it was written by an older version: "
                f"run `{UPGRADE_COMMAND.format(root=self.root)}` (it rewrites the lake's "
                f"tables into this layout) and start the job again")
        self._checked.add(name)

    # ------------------------------------------------------------------ writing

    def _frame(self, name: str, data: DataFrame | pa.Table | Written) -> DataFrame:
        """Rows for table `name`; an Arrow table is for the few rows the driver itself makes
        (a progress row, a quality run's results), never for rows read from a table; rows
        `Written` by tasks are read back (for Delta's writer)."""
        if isinstance(data, Written):
            data = data.frame(self.spark)
        elif isinstance(data, pa.Table):
            data = from_arrow(self.spark, name, data)
        return conform(data, name)

    def _rows(self, name: str, data: DataFrame | pa.Table | Written
              ) -> DataFrame | pa.Table | Written:
        """Rows for table `name` as the commit takes them: a frame conformed, an Arrow
        table (rows the driver holds) cast to the table's columns, files as they are."""
        if isinstance(data, Written):
            return data.with_rest(None if data.rest is None else table_rows(data.rest, name))
        return table_rows(data, name) if isinstance(data, pa.Table) else conform(data, name)

    @staticmethod
    def _meta(app_id: str | None, version: int | None,
              metadata: dict[str, str] | None = None) -> str:
        return json.dumps({META_APP: app_id, META_VERSION: str(version), **(metadata or {})},
                          sort_keys=True)

    def append(self, name: str, data: DataFrame | pa.Table | Written, app_id: str | None = None,
               version: int | None = None, metadata: dict[str, str] | None = None) -> bool:
        """Append rows once per (app_id, version); returns False if already committed.

        The first write of a table creates it, in the same commit: a lake holds the tables
        something was written to (readers see a missing table as an empty one), and a new
        lake costs no commit per table before its data."""
        if (app_id is None) != (version is None):
            raise ValueError(f"append to {name}: an app_id and its version go together")

        def attempt() -> bool:
            snap = self._snapshot(name)
            if app_id is not None and version is not None and _done(snap, app_id, version):
                return False
            return self._append(name, snap, data, app_id, version, metadata)
        return _retrying(attempt)

    def _append(self, name: str, snap, data: DataFrame | pa.Table | Written, app_id: str | None,
                version: int | None, metadata: dict[str, str] | None) -> bool:
        """`append` into the table whose snapshot is `snap` (none yet: the commit creates
        it, `new_table`), the transaction id checked."""
        creating = _version(snap) is None
        if not creating:
            self._check_layout(name, snap)
        if app_id is not None and version is not None and (creating or known_protocol(snap)):
            try:
                commit_files(self.spark, self.path(name), self._rows(name, data), snap,
                             app_id, version, self._meta(app_id, version, metadata),
                             schema=table_schema(name).spark,
                             new_table=new_table(name) if creating else None)
                return True
            except UnknownProtocol:
                pass  # the session's defaults give new tables features: the writer's
        w = self._frame(name, data).write.format("delta").mode("append")
        if creating:
            made = new_table(name)
            w = w.partitionBy(*made.partition_by)
            for key, value in made.properties.items():
                w = w.option(key, value)
        if app_id is not None and version is not None:
            w = (w.option("txnAppId", app_id).option("txnVersion", str(version))
                 .option("userMetadata", self._meta(app_id, version, metadata)))
        w.save(self.path(name))
        return True

    def replace(self, name: str, data: DataFrame | pa.Table | Written | None, slice_: Slice,
                app_id: str, version: int, *, read_version: int | None,
                metadata: dict[str, str] | None = None) -> bool:
        """Commit `data` as the new content of the table's slice `slice_` (partition column
        -> value: one cluster's rows, or its open ones), once per (app_id, version); returns
        False if already committed. `data` None keeps the slice as it is: a commit of the
        transaction id alone (a marker), which still reads the slice's files.

        One Delta commit removes every file of the slice (whole partitions: no file is read
        or rewritten) and adds `data` (`lake.transaction.commit_files`). Rows of `data` outside
        the slice (the states an increment closes, which belong to the history partition)
        are added by the same commit, so a table holds all of an increment or none of it.
        This is what an increment does instead of a MERGE: it knows every row of the slice
        after it, and a MERGE read its target twice to find the few rows it changed. The
        files removed are those this process's last commit of the slice left
        (`SliceFiles`), checked by Delta's conflict detection against every commit since;
        without them (a new process, a conflict) those the latest snapshot's log lists.

        `read_version`: the table's version when the slice's old rows were read (None: there
        was no table). A commit since then that changed the slice's rows (a second job of
        the same cluster) would be undone by the replacement: `SliceMovedError` instead.
        Commits into other slices (another cluster's job) and compactions (`dataChange`
        false, same rows) do not change the rows; a compaction that replaced the slice's
        files fails the commit's conflict check, and the attempt is made again on the
        latest snapshot (`_retrying`).
        """
        key = (self.path(name), predicate(slice_))

        def attempt() -> bool:
            """One try on the latest snapshot, made again by `_retrying` after a conflict: False
            when the transaction id committed already, else True once committed (a plain append to a
            new or empty table, Delta's overwrite under a protocol kraftlake does not know)."""
            snap = self._snapshot(name)
            if _done(snap, app_id, version):
                return False
            now = _version(snap)
            if now != read_version:
                self._check_slice_unmoved(name, slice_, read_version, now)
            if now is None or (_size(snap)[0] == 0 and data is not None):
                return self._append(name, snap, data if data is not None else
                                    table_schema(name).arrow.empty_table(),
                                    app_id, version, metadata)
            self._check_layout(name, snap)
            if not known_protocol(snap):
                self._overwrite(name, None if data is None else self._frame(name, data),
                                slice_, app_id, version, metadata)
                return True
            with _SLICES_LOCK:
                held = _SLICES.pop(key, None)
            if held is not None and (held.table_id != str(snap.metadata().id())
                                     or held.version > now):
                held = None  # another table under the same path, or another timeline
            after = commit_files(
                self.spark, self.path(name), None if data is None else self._rows(name, data),
                snap, app_id, version, self._meta(app_id, version, metadata), slice_=slice_,
                held=held, schema=table_schema(name).spark)
            if after is not None:
                with _SLICES_LOCK:
                    _SLICES[key] = after
            return True
        return _retrying(attempt)

    def _overwrite(self, name: str, frame: DataFrame | None, slice_: Slice, app_id: str,
                   version: int, metadata: dict[str, str] | None) -> None:
        """`replace` through Delta's writer (`replaceWhere`), for a table whose protocol
        kraftlake does not know (`known_protocol`); a marker is an append of no rows."""
        if frame is None:
            frame = self._frame(name, table_schema(name).arrow.empty_table())
            w = frame.write.format("delta").mode("append")
        else:
            frame.sparkSession.conf.set(_REPLACE_CHECK_CONF, "false")
            w = (frame.write.format("delta").mode("overwrite")
                 .option("replaceWhere", predicate(slice_)))
        (w.option("txnAppId", app_id).option("txnVersion", str(version))
         .option("userMetadata", self._meta(app_id, version, metadata))
         .save(self.path(name)))

    def _check_slice_unmoved(self, name: str, slice_: Slice,
                             since: int | None, until: int | None) -> None:
        """`SliceMovedError` if a commit after version `since` up to `until` added or
        removed rows of the slice. Read from the commits' JSON files (a few small files)."""
        want = slice_values(slice_)
        log = join(self.path(name), "_delta_log")
        for v in range(0 if since is None else since + 1, (until or -1) + 1):
            for line in (self.fs.read_text(join(log, f"{v:020d}.json")) or "").splitlines():
                action = json.loads(line)
                change = action.get("add") or action.get("remove")
                if change is None or not change.get("dataChange", True):
                    continue
                values = change.get("partitionValues") or {}
                if all(values.get(c) == x for c, x in want.items()):
                    raise SliceMovedError(
                        f"{self.path(name)}: another job changed the rows of "
                        f"{', '.join(f'{c}={x}' for c, x in want.items())} (version {v}) "
                        f"after this one read them; only one job per cluster may write a "
                        f"lake at a time: run it again once the other has ended")

    def partition_columns(self, name: str) -> tuple[str, ...]:
        """The table's partition columns as its Delta metadata says (() without a table)."""
        snap = self._snapshot(name)
        return () if _version(snap) is None else _partition_columns(snap)

    def layout_problem(self, name: str) -> str | None:
        """How the table's layout differs from this kraftlake's (`_layout_problem`); None
        when it does not, or without a table."""
        snap = self._snapshot(name)
        return None if _version(snap) is None else _layout_problem(name, snap)

    def files_target(self, name: str, work_dir: str) -> Target:
        """Where a job's tasks write table `name`'s new rows as data files for this lake's
        commit of them (`lake.written`): the table's own directory when kraftlake's
        transaction commits the table as it is (a protocol it knows, statistics on the first
        columns only: `known_protocol`, `arrow_files`), a new table included; else
        `<work_dir>/<name>`, from where the rows are read back and handed to Delta's
        writer."""
        snap = self._snapshot(name)
        if _version(snap) is None:
            made = new_table(name)
            return Target(name, self.path(name), made.partition_by,
                          int(made.properties[INDEXED_KEY]), True)
        indexed = indexed_columns(snap.metadata())
        direct = _commits_files(snap)
        return Target(name, self.path(name) if direct else join(work_dir, name),
                      _partition_columns(snap), DEFAULT_INDEXED if indexed is None else indexed,
                      direct)

    def write_files(self, name: str, frame: DataFrame) -> Written | None:
        """`frame`'s rows written once as table `name`'s data files by Delta's writer, not
        committed (`transaction.write_files`): a later stage reads them back
        (`Written.files_frame`), and the table's commit adds them as they are. None where
        kraftlake's transaction does not commit the table itself (`files_target`): the
        caller keeps the rows elsewhere, for Delta's writer to write at the commit."""
        snap = self._snapshot(name)
        creating = _version(snap) is None
        if not creating:
            self._check_layout(name, snap)
            if not _commits_files(snap):
                return None
        try:
            adds = write_files(self.spark, self.path(name), conform(frame, name), snap,
                               schema=table_schema(name).spark,
                               new_table=new_table(name) if creating else None)
        except UnknownProtocol:
            return None  # the session's defaults give new tables features: the writer's
        return Written(name, self.path(name), tuple(adds), True)

    def size(self, name: str) -> tuple[int, int]:
        """(data files, bytes) of the table's current version, (0, 0) without a table."""
        return _size(self._snapshot(name))

    def own_session(self) -> None:
        """Give the calling thread a session of its own for merges, before it commits
        beside other threads: a merge's transaction id is a session setting (`_txn`), and a
        setting of a session is seen by every thread using it. A new session shares the
        SparkContext, the catalog and the cache; only its settings and temporary views are
        its own. Threads that did not ask use the lake's session."""
        self._threads.session = self.spark.newSession()

    def _dml_session(self) -> SparkSession:
        return getattr(self._threads, "session", None) or self.spark

    @contextmanager
    def _txn(self, session: SparkSession, app_id: str, version: int,
             metadata: dict[str, str] | None) -> Iterator[None]:
        """Session settings that make the next DML command (a MERGE) of `session`
        idempotent."""
        conf = session.conf
        conf.set(_TXN_CONF[0], app_id)
        conf.set(_TXN_CONF[1], str(version))
        conf.set(_USER_META_CONF, self._meta(app_id, version, metadata))
        conf.set(*_MERGE_SOURCE_CONF)
        try:
            yield
        finally:
            for k in (*_TXN_CONF, _USER_META_CONF, _MERGE_SOURCE_CONF[0]):
                conf.unset(k)

    def upsert(self, name: str, data: DataFrame | pa.Table, app_id: str, version: int,
               delete_keys: DataFrame | None = None, target_filter: str = "",
               metadata: dict[str, str] | None = None) -> bool:
        """Merge rows on the table key (update or insert), once per (app_id, version).

        `delete_keys` (key columns only) are removed in the same commit. `target_filter`
        restricts which target rows can match (Delta skips files and partitions by it).
        `metadata` goes into the commit (see `commit_metadata`). Into a table without rows
        (or none yet) the rows are appended: a merge there could only insert, and costs a
        join and a second Spark job.
        """
        return _retrying(lambda: self._upsert(name, data, app_id, version, delete_keys,
                                              target_filter, metadata))

    def _upsert(self, name: str, data: DataFrame | pa.Table, app_id: str, version: int,
                delete_keys: DataFrame | None, target_filter: str,
                metadata: dict[str, str] | None) -> bool:
        """One attempt of `upsert`."""
        snap = self._snapshot(name)
        if _done(snap, app_id, version):
            return False
        if _size(snap)[0] == 0:
            return self._append(name, snap, data, app_id, version, metadata)
        self._check_layout(name, snap)
        schema = table_schema(name)
        source = self._frame(name, data).withColumn("_delete", F.lit(False))
        if delete_keys is not None:
            source = source.unionByName(
                conform(delete_keys, name).withColumn("_delete", F.lit(True)))
        on = " AND ".join(f"t.{k} <=> s.{k}" for k in schema.key)
        if target_filter:
            on = f"{on} AND ({target_filter})"
        cols: dict[str, str | Column] = {c: f"s.{c}" for c in schema.names}
        session = self._dml_session()
        with self._txn(session, app_id, version, metadata):
            (DeltaTable.forPath(session, self.path(name)).alias("t")
             .merge(source.alias("s"), on)
             .whenMatchedDelete(condition="s._delete")
             .whenMatchedUpdate(condition="NOT s._delete", set=cols)
             .whenNotMatchedInsert(condition="NOT s._delete", values=cols)
             .execute())
        return True

    # ------------------------------------------------------------------ reading

    def pinned(self) -> Lake:
        """This lake as of now: every read of the returned view is at the version each table
        has at this call, whatever is committed meanwhile (writes go to the latest).

        An increment pins the lake before it reads or writes anything, so the layout of
        every table is checked here (`_check_layout`): a lake an older kraftlake laid out
        otherwise is refused before the first commit, not by a failing read midway."""
        tags = {}
        for name in table_names():
            snap = self._snapshot(name)
            if (t := _tag(snap)) is not None:
                self._check_layout(name, snap)
                tags[name] = t
        return Lake(self.root, self._spark, tags)

    def pin(self, name: str) -> int | None:
        """The version this view reads table `name` at (None: no table when pinned)."""
        if self._pins is None:
            raise ValueError("only a pinned view (`pinned()`) has versions")
        return self._pins.get(name)

    def pinned_tag(self, name: str) -> Tag | None:
        """(table id, version) this pinned view reads table `name` at (None: no table)."""
        return self._tags.get(name)

    def consistent(self, names: Iterable[str] | None = None) -> Lake:
        """This lake as its readers should see it: every table (or those in `names`) as of
        each cluster's last complete increment (`lake.cut`), whatever jobs commit meanwhile.
        A reader that reads several tables reads them all through one such view, so a
        cluster's events never come without the states they were judged from.

        Needs a local session: the cut is read from the tables' Delta logs, which a Spark
        Connect client cannot (it reads a `kraftlake serve` endpoint's tables, `spark.table`,
        which are the server's consistent view)."""
        if not has_jvm(self.spark):
            raise ValueError("a consistent view needs a local SparkSession; through Spark "
                             "Connect, read the tables of the `kraftlake serve` endpoint "
                             "(spark.table(NAME)), which are its consistent view")
        return Lake(self.root, self._spark, cut=take_cut(self, names))

    @property
    def cut(self) -> Cut | None:
        """A consistent view's cut (None: this view reads the latest versions)."""
        return self._cut

    def read(self, spark: SparkSession | None, name: str, version: int | None = None) -> DataFrame:
        """Table `name` as a Spark DataFrame (at `version`, at this view's pin or cut, or the
        latest); a table nothing was written to yet is an empty frame of its schema.

        `spark` may be a Spark Connect client's session (a notebook connected to `kraftlake
        serve`): the lake's path is then read by the server, and whether the table exists is
        asked of it too (`_served_table`), since a client has no JVM to read Delta's log."""
        spark = spark or self.spark
        if version is None and self._cut is not None and name in self._cut.tables:
            tc = self._cut.tables[name]
            if tc.version is None:
                return from_arrow(spark, name, table_schema(name).arrow.empty_table())
            return spark.sql(cut_query(self.path(name), tc))
        version = version if version is not None else (self._pins or {}).get(name)
        empty = self._pins is not None and name not in self._pins
        reader = spark.read.format("delta")
        if version is not None:
            reader = reader.option("versionAsOf", version)
        if not empty and not has_jvm(spark):
            if (served := _served_table(reader, self.path(name))) is not None:
                return served
        elif not empty and self.exists(name):
            return reader.load(self.path(name))
        return from_arrow(spark, name, table_schema(name).arrow.empty_table())

    def read_arrow(self, name: str, where: str | None = None,
                   columns: list[str] | None = None) -> pa.Table:
        """A few rows of `name` on the driver (control tables: progress, small tests)."""
        df = self.read(None, name)
        if where:
            df = df.filter(where)
        if columns:
            df = df.select(*columns)
        return df.toArrow()

    def register_views(self, spark: SparkSession, names: Iterable[str] | None = None) -> None:
        """Every table (or those in `names`) in the session catalog under its own name. Each
        costs a load of the table's Delta snapshot, so a command that answers one statement
        registers only the tables it names (`cli.catalog`).

        In the catalog (not temporary views) so that every session of the SparkContext sees
        them (a Spark Connect client's session is a clone of the server's:
        `kraftlake.endpoint`). A consistent view (`consistent`) registers each table as a view
        of its cut; otherwise each is a catalog table over its Delta location, which reads
        the latest version and takes time travel (`VERSION AS OF 3`, `TIMESTAMP AS OF
        '...'`). A table nothing was written to yet is a view of its empty schema, so a
        query names every table whatever the lake has seen.
        """
        for name in table_names() if names is None else names:
            spark.catalog.dropTempView(name)  # it would hide the catalog's table
            tc = self._cut.tables.get(name) if self._cut is not None else None
            if tc is None and self.exists(name):
                kind, query = "TABLE", f"USING delta LOCATION '{self.path(name)}'"
            elif tc is not None and tc.version is not None:
                kind, query = "VIEW", f"AS {cut_query(self.path(name), tc)}"
            else:
                cols = ", ".join(_column_sql(f, "NULL") for f in table_schema(name).spark.fields)
                kind, query = "VIEW", f"AS SELECT {cols} WHERE false"
            if spark.catalog.tableExists(name):
                was = "VIEW" if spark.catalog.getTable(name).tableType == "VIEW" else "TABLE"
                if (was, kind) == ("VIEW", "VIEW"):
                    # in one step, so that a query of another session never finds the table
                    # missing (`kraftlake serve` refreshes its views while clients query)
                    spark.sql(f"CREATE OR REPLACE VIEW {name} {query}")
                    continue
                spark.sql(f"DROP {was} {name}")
            spark.sql(f"CREATE {kind} {name} {query}")


# What a read of a path holding no Delta table fails with: Spark's, for a directory that is
# not there; Delta's, for one without a Delta log
_NO_TABLE = frozenset({"PATH_NOT_FOUND", "DELTA_TABLE_NOT_FOUND"})


def _served_table(reader: DataFrameReader, path: str) -> DataFrame | None:
    """The Delta table at `path` read through a Spark Connect session's `reader`, or None
    when there is none. A Connect DataFrame is analysed by the server only when asked, so
    its schema is asked here (one round trip, which loads the table's snapshot the query
    then uses): a missing table is then an empty frame, as on a local session, not an error
    at the first action."""
    frame = reader.load(path)
    try:
        frame.schema  # noqa: B018 (the server's analysis)
    except AnalysisException as exc:
        if exc.getCondition() in _NO_TABLE:
            return None
        raise
    return frame


def _retrying(write: Callable[[], bool]) -> bool:
    """`write()`, again when Delta refused its commit for another writer's, at most
    `WRITE_ATTEMPTS` times in all.

    Writers of different clusters touch disjoint partitions and blind appends never
    conflict, but some races remain: two jobs creating the same table of a new lake (the
    loser's commit finds a protocol it did not read), a merge of an unpartitioned table
    beside another cluster's append, a compaction by `maintain`. Every write begins by
    asking whether its transaction id committed, on a fresh snapshot, so running it again
    never writes twice; a replacement also checks again that its slice did not move.
    """
    for attempt in range(1, WRITE_ATTEMPTS + 1):
        try:
            return write()
        except COMMIT_CONFLICTS:
            if attempt == WRITE_ATTEMPTS:
                raise
    raise AssertionError("unreachable")


# ---------------------------------------------------------------------- one snapshot
# What a write asks of a table (its transactions, its size, its layout) is read from one
# snapshot: each `Lake._snapshot` lists the table's Delta log again.


def _version(snap) -> int | None:
    """The snapshot's table version (None: no table; Delta says -1)."""
    v = int(snap.version())
    return v if v >= 0 else None


def _tag(snap) -> Tag | None:
    """(table id, version) of the snapshot (None: no table)."""
    v = _version(snap)
    return None if v is None else (str(snap.metadata().id()), v)


def _transactions(snap) -> dict[str, int]:
    """Every app id of the snapshot `snap` with its last transaction version."""
    if _version(snap) is None:
        return {}
    # The version's checksum file lists the table's transactions: reading it costs
    # milliseconds, where the snapshot's own state reconstruction runs a Spark job.
    crc = snap.checksumOpt()
    txns = crc.get().setTransactions() if crc.isDefined() else None
    if txns is not None and txns.isDefined():
        seq = txns.get()
        pairs = (seq.apply(i) for i in range(seq.size()))
        return {t.appId(): int(t.version()) for t in pairs}
    seq = snap.transactions().toSeq()  # a Scala map: its (app id, version) pairs
    return {seq.apply(i)._1(): int(seq.apply(i)._2()) for i in range(seq.size())}


def _txn_version(snap, app_id: str) -> int | None:
    """Last transaction version of `app_id` in the snapshot `snap` (None = never)."""
    return _transactions(snap).get(app_id)


def _partition_columns(snap) -> tuple[str, ...]:
    cols = snap.metadata().partitionColumns()
    return tuple(cols.apply(i) for i in range(cols.size()))


def _layout_problem(name: str, snap) -> str | None:
    """How the snapshot's partitioning or columns differ from table `name`'s schema
    (`schema.layout_problem`)."""
    return layout_problem(name, _partition_columns(snap),
                          tuple(snap.metadata().schema().fieldNames()))


def _done(snap, app_id: str, version: int) -> bool:
    """`app_id` committed `version` (or a later one) to the table of `snap`."""
    v = _txn_version(snap, app_id)
    return v is not None and v >= version


def _size(snap) -> tuple[int, int]:
    """(data files, bytes) of the snapshot, (0, 0) without a table; from the version's
    checksum when Delta wrote one, which costs no Spark job."""
    if _version(snap) is None:
        return 0, 0
    crc = snap.checksumOpt()
    if crc.isDefined():
        return int(crc.get().numFiles()), int(crc.get().tableSizeBytes())
    return int(snap.numOfFiles()), int(snap.sizeInBytes())
