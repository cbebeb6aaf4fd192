"""Lake maintenance: compact small files, vacuum unreferenced ones, checkpoint the Delta log.

Every increment (a batch run, or every micro-batch of a stream) appends at least one small
parquet file to each table, and every merge leaves the files it rewrote behind as tombstones.
Readers pay for both: a read lists every file of the table's snapshot, and opening a table
replays its Delta log (one JSON commit per write). So, per table, with delta-spark:

1. `OPTIMIZE` (`DeltaTable.optimize().executeCompaction()`) rewrites the small files of each
   partition into few large ones. It commits with `dataChange=false` and carries the table's
   transaction identifiers over unchanged, which the exactly-once writes rely on: both the row
   count and every app id's version are checked after the fact (`MaintenanceError` if not).
   A table of one file per partition has nothing to compact and is not asked to. The row
   counts and the commits made since the pass began are read from the Delta log itself
   (the record counts it holds with each file, its commit files), not by Spark jobs.
2. `VACUUM` deletes files that no snapshot newer than the retention period references. A
   reader of an older snapshot (a `kraftlake sql` started before the compaction, a
   `VERSION AS OF` query) needs those files until it is done; hence the retention (Delta's
   default, a week) and the refusal of a shorter one unless asked. A table with no data file
   older than the retention has nothing to vacuum and is not vacuumed.
3. A checkpoint folds the log into one parquet file, so opening a table reads the checkpoint
   and the few commits after it instead of the whole log.

Compaction may run while jobs write the lake. It conflicts with a concurrent commit that
removes files it rewrites (a job replacing a slice, a merge): a job that loses retries its
commit (`delta._retrying`; compactions change no rows), a compaction that loses reports the
table's conflict in one line and leaves the table for its next run. Its checks compare its
own commit with the version just before it, so rows other jobs add meanwhile do not count
as a change. A stream compacts its lake between micro-batches (`stream.compact_every`).
Vacuum and checkpoint commit no data and do not conflict with writers.
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Iterable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

import pyarrow as pa
import pyarrow.compute as pc
from delta.tables import DeltaTable

from .delta import COMMIT_CONFLICTS, Lake
from .deltalog import UnreadableError, add_actions
from .jvmclass import java_class
from .retention import DEFAULT_RETENTION_HOURS
from .schema import table_names

OWN_OPERATIONS = {"OPTIMIZE", "VACUUM START", "VACUUM END"}
_HISTORY_LIMIT = 100  # commits looked through for maintenance's own (`_own_commit`)
# Tables maintained at once. One table's compaction, vacuum and checkpoint touch no other
# table, and a small table's maintenance is mostly the driver waiting on Delta's protocol and
# the file system, which overlaps with another table's Spark jobs (docs/benchmarks.md).
THREADS = 3


class MaintenanceError(RuntimeError):
    """Maintenance changed what it must not: a table's rows or a transaction version."""


@dataclass
class TableMaintenance:
    """What maintenance did to one table (sizes are of the current snapshot's files)."""

    table: str
    files_before: int = 0
    files_after: int = 0
    bytes_before: int = 0
    bytes_after: int = 0
    rows: int = 0
    vacuumed: int = 0  # files deleted by vacuum
    version_before: int = -1  # -1: no table
    version_after: int = -1
    seconds: float = 0.0
    error: str | None = None  # a commit conflict: the table was left as it was


def _nothing_to_vacuum(lake: Lake, name: str, retention_hours: int) -> bool:
    """VACUUM deletes only files last modified before now minus the retention (Delta's
    VacuumCommand), so a table whose oldest data file is younger than that has nothing to
    vacuum. The listing on the driver costs milliseconds on a small table; VACUUM itself
    lists the table in a Spark job, rebuilds the snapshot's file list and commits twice
    (VACUUM START and END), about a second per table even when it deletes nothing, which
    is every run with the default retention in a lake younger than a week."""
    oldest = lake.fs.oldest_file(lake.path(name))
    return oldest is None or oldest >= (time.time() - retention_hours * 3600) * 1000


def count_rows(lake: Lake, name: str, version: int | None = None) -> int:
    """Rows of the table at `version` (None: now)."""
    return _rows(lake, name, version, _files(lake, name, version))


def _files(lake: Lake, name: str, version: int | None) -> pa.Table | None:
    """The files of the table's snapshot at `version` as its Delta log lists them
    (`deltalog.add_actions`), None where delta-rs cannot say exactly."""
    try:
        return add_actions(lake.path(name), version)
    except UnreadableError:
        return None


def _rows(lake: Lake, name: str, version: int | None, files: pa.Table | None) -> int:
    """The sum of the snapshot's record counts as its writers logged them with each file,
    which is what Delta itself answers a `count(*)` from, without the Spark jobs that
    rebuild a snapshot's state (three of them a table were most of a maintenance pass);
    Spark counts where the log cannot say (a file logged without statistics, a table
    delta-rs does not read exactly)."""
    if files is not None and "num_records" in files.column_names:
        counts = files.column("num_records")
        if counts.null_count == 0:
            return int(pc.sum(counts).as_py() or 0)
    return lake.read(None, name, version).count()


def _compactable(files: pa.Table | None) -> bool:
    """Whether OPTIMIZE could rewrite anything: some partition holds two files or more.
    Delta's compaction bins files per partition and leaves a bin of one file alone (without
    a deletion vector, which this reader refuses), so a table of one file per partition is
    left as it is, and asking OPTIMIZE costs its Spark jobs for nothing. Not known (None):
    OPTIMIZE decides."""
    if files is None:
        return True
    parts = [c for c in files.column_names if c.startswith("partition.")]
    if not parts:
        return files.num_rows > 1
    keys = Counter(zip(*(files.column(c).to_pylist() for c in parts), strict=True))
    return any(n > 1 for n in keys.values())


def txn_versions(lake: Lake, name: str, app_ids: Iterable[str]) -> dict[str, int | None]:
    return {a: lake.txn_version(name, a) for a in app_ids}


def lake_app_ids(lake: Lake) -> list[str]:
    """The app ids of the lake's exactly-once writers: every ingest or stream records its
    runs in `ingest_progress` (a quality run's id is used once and never checked again)."""
    if not lake.exists("ingest_progress"):
        return []
    t = lake.read_arrow("ingest_progress", columns=["app_id"])
    return sorted(set(t.column("app_id").to_pylist()) - {None})


def _last_metrics(lake: Lake, name: str, operation: str) -> dict[str, str]:
    for _v, info in lake.commit_infos(name, limit=5):
        if info.get("operation") == operation:
            return dict(info.get("operationMetrics") or {})
    return {}


def _own_commit(lake: Lake, name: str, since: int, operation: str) -> int:
    """The version of the newest `operation` commit after version `since`: maintenance's own
    commit, whatever other writers committed after it (jobs of other clusters may write the
    lake meanwhile: the README's concurrency rules)."""
    for v, info in lake.commit_infos(name, newer_than=since, limit=_HISTORY_LIMIT):
        if info.get("operation") == operation:
            return v
    raise MaintenanceError(f"no {operation} commit after version {since} among the last "
                           f"{_HISTORY_LIMIT}")


def _check_txns(lake: Lake, name: str, before: dict[str, int | None],
                version_before: int) -> None:
    """Every app id's transaction version after maintenance must be the one before; only
    another writer's commit meanwhile may have raised it. A lost or lowered version would
    let a re-run of an increment write its rows a second time."""
    after = txn_versions(lake, name, before)
    foreign = any(info.get("operation") not in OWN_OPERATIONS
                  for _v, info in lake.commit_infos(name, newer_than=version_before))
    for app_id, v in before.items():
        w = after[app_id]
        if v is None:
            continue
        if w is None or w < v or (w != v and not foreign):
            raise MaintenanceError(f"{name}: transaction version of {app_id!r} was {v}, "
                                   f"is {w} after maintenance")


def _maintain_table(lake: Lake, name: str, app_ids: Iterable[str] = (), *, compact: bool = True,
                   vacuum: bool = True, retention_hours: int = DEFAULT_RETENTION_HOURS,
                   checkpoint: bool = True) -> TableMaintenance:
    """Compact, vacuum and checkpoint table `name` (see the module doc for why)."""
    t0 = time.perf_counter()
    res = TableMaintenance(name)
    version = lake.version(name)
    if version is None:
        res.error = "no such table"
        return res
    spark = lake.spark
    dt = DeltaTable.forPath(spark, lake.path(name))
    res.files_before, res.bytes_before = lake.size(name)  # Delta's checksum, no data read
    res.version_before = version
    app_ids = list(app_ids)
    txns = txn_versions(lake, name, app_ids)
    files = _files(lake, name, version)
    res.rows = _rows(lake, name, version, files)
    try:
        if compact and _compactable(files):
            compaction = dt.optimize().executeCompaction().first()
            assert compaction is not None  # OPTIMIZE answers one row of metrics
            metrics = compaction.metrics
            if metrics.numFilesRemoved:
                # the compaction's commit against the version just before it: jobs of other
                # clusters may have added rows between the start and the compaction
                v = _own_commit(lake, name, version, "OPTIMIZE")
                if (n := count_rows(lake, name, v)) != (was := count_rows(lake, name, v - 1)):
                    raise MaintenanceError(f"{name}: compaction (version {v}) changed the row "
                                           f"count from {was} to {n}")
        if vacuum and not _nothing_to_vacuum(lake, name, retention_hours):
            dt.vacuum(retention_hours)
            res.vacuumed = int(_last_metrics(lake, name, "VACUUM END")
                               .get("numDeletedFiles", 0))
        if checkpoint:
            java_class(spark, "org.apache.spark.sql.delta.DeltaLog").forTable(
                spark._jsparkSession, lake.path(name)).checkpoint()
    except COMMIT_CONFLICTS as exc:  # a concurrent writer won
        res.error = str(exc).splitlines()[0]
    _check_txns(lake, name, txns, res.version_before)
    # rows as counted at the start: compaction was checked to keep them, and vacuum and
    # checkpoints change none
    res.files_after, res.bytes_after = lake.size(name)
    after = lake.version(name)
    res.version_after = -1 if after is None else after
    res.seconds = round(time.perf_counter() - t0, 2)
    return res


def maintain(lake: Lake, tables: Iterable[str] | None = None, *, compact: bool = True,
             vacuum: bool = True, retention_hours: int = DEFAULT_RETENTION_HOURS,
             enforce_retention: bool = True, checkpoint: bool = True) -> list[TableMaintenance]:
    """Maintain `tables` (default: every table of the lake that exists), `THREADS` at a
    time.

    `retention_hours` below the table's `delta.deletedFileRetentionDuration` (a week unless
    set) is refused by Delta unless `enforce_retention` is False: only do that when no
    reader can still be on an older snapshot.

    Args:
        lake: the `Lake`.
        tables: the tables to maintain (default: all that exist).
        compact, vacuum, checkpoint: which steps to run (OPTIMIZE, VACUUM, a checkpoint).
        retention_hours: the age of the files vacuum may delete.
        enforce_retention: Delta's check of that age against the table's own.

    Returns:
        One `TableMaintenance` per table: files and bytes before and after, seconds.

    Example, going on from `kraftlake.ingest`'s: `records` compacted into one file, its
    rows kept:

        >>> from kraftlake import Lake, maintain
        >>> done = maintain(Lake(cfg.lake, spark), ["records"])
        >>> [(m.table, m.files_after, m.rows, m.error) for m in done]
        [('records', 1, 153, None)]
    """
    names = list(tables) if tables is not None else [n for n in table_names() if lake.exists(n)]
    app_ids = lake_app_ids(lake)
    spark = lake.spark  # resolved here: a new thread has no active session
    check = "spark.databricks.delta.retentionDurationCheck.enabled"
    spark.conf.set(check, str(enforce_retention).lower())
    try:
        with ThreadPoolExecutor(THREADS, thread_name_prefix="kraftlake-maintain") as pool:
            return list(pool.map(lambda n: _maintain_table(
                lake, n, app_ids, compact=compact, vacuum=vacuum,
                retention_hours=retention_hours, checkpoint=checkpoint), names))
    finally:
        spark.conf.unset(check)
