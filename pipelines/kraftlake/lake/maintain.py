"""Lake maintenance: compact small files, vacuum unreferenced ones, checkpoint the Delta log.

Every increment (a batch run, or every micro-batch of a stream) appends at least one small
parquet file to each table, and every merge leaves the files it rewrote behind as tombstones.
Readers pay for both: Spark reads a table through its current file list (`Lake.read`), and
delta-rs replays the Delta log (one JSON commit per write) before every read and every
`committed` check. So, per table:

1. `optimize.compact()` rewrites the small files of each partition into few large ones. It
   commits with `dataChange=false`: the same rows, in the same order within a partition, and
   no transaction action, so the (app id, version) pairs the exactly-once writes rely on are
   untouched. Both are checked after the fact (`MaintenanceError` if not).
2. `vacuum()` deletes files that no snapshot newer than the retention period references. A
   reader of an older snapshot (a `kraftlake sql` started before the compaction, a Spark job
   still listing the files it planned) needs those files until it is done; hence the
   retention (Delta's default, a week) and delta-rs's refusal of a shorter one unless asked.
   Only tombstones are deleted (delta-rs "lite" mode), never a file that no commit mentions:
   that could be a concurrent writer's file not committed yet.
3. `create_checkpoint()` folds the log into one parquet file, so opening a table reads the
   checkpoint and the few commits after it instead of the whole log.

Compaction conflicts with a concurrent merge of the same table (whichever commits second
fails), so it must not run while `ingest` or `stream` writes the lake; a stream compacts its
own lake between micro-batches (`stream.compact_every`). Vacuum and checkpoint commit no data
and do not conflict with writers.
"""

from __future__ import annotations

import time
from collections.abc import Iterable
from dataclasses import dataclass

import pyarrow as pa
from deltalake import DeltaTable
from deltalake.exceptions import CommitFailedError

from .delta import Lake
from .schema import table_names

DEFAULT_RETENTION_HOURS = 168  # Delta's default `delta.deletedFileRetentionDuration`
OWN_OPERATIONS = {"OPTIMIZE", "VACUUM START", "VACUUM END"}


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
    version_before: int = -1
    version_after: int = -1
    seconds: float = 0.0
    error: str | None = None  # a commit conflict: the table was left as it was


@dataclass(frozen=True)
class _Files:
    count: int
    bytes: int
    rows: int


def _files(dt: DeltaTable) -> _Files:
    """Files, bytes and rows of the snapshot `dt`, from its add actions (no data read)."""
    adds = pa.table(dt.get_add_actions(flatten=True))
    if adds.num_rows == 0:
        return _Files(0, 0, 0)
    size = sum(v or 0 for v in adds.column("size_bytes").to_pylist())
    counts = adds.column("num_records").to_pylist()
    stats = all(c is not None for c in counts)  # else a file has no statistics: count rows
    rows = sum(counts) if stats else dt.to_pyarrow_dataset().count_rows()
    return _Files(adds.num_rows, size, rows)


def _txn_versions(dt: DeltaTable, app_ids: Iterable[str]) -> dict[str, int | None]:
    return {a: dt.transaction_version(a) for a in app_ids}


def lake_app_ids(lake: Lake) -> list[str]:
    """The app ids of the lake's exactly-once writers: every ingest or stream records its
    runs in `ingest_progress` (a quality run's id is used once and never checked again)."""
    if not lake.exists("ingest_progress"):
        return []
    t = lake.read_arrow("ingest_progress", columns=["app_id"])
    return sorted(set(t.column("app_id").to_pylist()) - {None})


def _compact(dt: DeltaTable, target_size: int | None) -> int | None:
    """Compact every partition; returns the version of the compaction commit (None when
    there was nothing to compact, e.g. one file per partition)."""
    metrics = dt.optimize.compact(target_size=target_size)
    return dt.version() if metrics.get("numFilesRemoved") else None


def _check_compaction(path: str, name: str, version: int, app_ids: list[str]) -> None:
    """The compaction commit `version` must keep the rows and every transaction version of
    the snapshot it replaced (compared there, so a concurrent append does not count)."""
    before, after = DeltaTable(path, version=version - 1), DeltaTable(path, version=version)
    rows_before, rows_after = _files(before).rows, _files(after).rows
    if rows_before != rows_after:
        raise MaintenanceError(f"{name}: compaction (version {version}) changed the row count "
                               f"from {rows_before} to {rows_after}")
    txns_before, txns_after = _txn_versions(before, app_ids), _txn_versions(after, app_ids)
    if txns_before != txns_after:
        raise MaintenanceError(f"{name}: compaction (version {version}) changed transaction "
                               f"versions from {txns_before} to {txns_after}")


def _check_txns(name: str, dt: DeltaTable, before: dict[str, int | None],
                version_before: int) -> None:
    """Every app id's transaction version, read back from the new checkpoint, must be the one
    before maintenance; only another writer's commit meanwhile may have raised it. A lost or
    lowered version would let a re-run of an increment write its rows a second time."""
    after = _txn_versions(dt, before)
    moved = dt.version() - version_before
    foreign = moved > 0 and any(h.get("operation") not in OWN_OPERATIONS
                                for h in dt.history(moved))
    for app_id, v in before.items():
        w = after[app_id]
        if v is None:
            continue
        if w is None or w < v or (w != v and not foreign):
            raise MaintenanceError(f"{name}: transaction version of {app_id!r} was {v}, "
                                   f"is {w} after maintenance")


def maintain_table(lake: Lake, name: str, app_ids: Iterable[str] = (), *, compact: bool = True,
                   vacuum: bool = True, retention_hours: int = DEFAULT_RETENTION_HOURS,
                   enforce_retention: bool = True, checkpoint: bool = True,
                   target_size: int | None = None) -> TableMaintenance:
    """Compact, vacuum and checkpoint table `name` (see the module doc for why)."""
    t0 = time.perf_counter()
    res = TableMaintenance(name)
    dt = lake.table(name)
    if dt is None:
        res.error = "no such table"
        return res
    path = str(lake.path(name))
    first = _files(dt)
    res.files_before, res.bytes_before = first.count, first.bytes
    res.version_before = dt.version()
    app_ids = list(app_ids)
    txns = _txn_versions(dt, app_ids)
    try:
        if compact:
            v = _compact(dt, target_size)
            if v is not None:
                _check_compaction(path, name, v, app_ids)
        if vacuum:
            res.vacuumed = len(dt.vacuum(retention_hours=retention_hours, dry_run=False,
                                         enforce_retention_duration=enforce_retention))
        if checkpoint:
            dt = DeltaTable(path)
            dt.create_checkpoint()
    except CommitFailedError as exc:  # a concurrent writer won; nothing of ours committed
        res.error = str(exc).splitlines()[0]
    dt = DeltaTable(path)
    _check_txns(name, dt, txns, res.version_before)
    last = _files(dt)
    res.files_after, res.bytes_after, res.rows = last.count, last.bytes, last.rows
    res.version_after = dt.version()
    res.seconds = round(time.perf_counter() - t0, 2)
    return res


def maintain(lake: Lake, tables: Iterable[str] | None = None, *, compact: bool = True,
             vacuum: bool = True, retention_hours: int = DEFAULT_RETENTION_HOURS,
             enforce_retention: bool = True, checkpoint: bool = True,
             target_size: int | None = None) -> list[TableMaintenance]:
    """Maintain `tables` (default: every table of the lake that exists), one after another.

    `retention_hours` below the table's `delta.deletedFileRetentionDuration` (a week unless
    set) is refused by delta-rs unless `enforce_retention` is False: only do that when no
    reader can still be on an older snapshot.
    """
    names = list(tables) if tables is not None else [n for n in table_names() if lake.exists(n)]
    app_ids = lake_app_ids(lake)
    return [maintain_table(lake, n, app_ids, compact=compact, vacuum=vacuum,
                           retention_hours=retention_hours,
                           enforce_retention=enforce_retention, checkpoint=checkpoint,
                           target_size=target_size)
            for n in names]
