"""The lake's Delta logs read without a JVM, through delta-rs (`deltalake`).

A command whose answer is already written in the lake (an ingest whose logs hold nothing
new, an upgrade of a lake in this layout, a timeline that must ask which cluster) would
otherwise start Spark, seconds of JVM, to read a few progress rows and table versions.
delta-rs replays the same Delta log delta-spark wrote (its JSON commits, the parquet
checkpoint `_last_checkpoint` names, `remove` actions) and reads the data files with
pyarrow, in milliseconds.

It answers only where it is exact, and says so otherwise (`UnreadableError`, the caller
then asks Spark): a table whose protocol needs more of a reader than version 1 (deletion
vectors, column mapping, any reader feature: kraftlake writes none, another engine may
have), a location other than a path or `s3a://` (the only ones given to delta-rs here), or
a Delta log delta-rs fails on. Whether a table exists is asked of the file system the same
way `lake.location` asks it (a listing of its `_delta_log`), so a store that answers
nothing is never taken for a lake without that table.
"""

from __future__ import annotations

import datetime as dt
import os
from collections.abc import Iterable, Mapping
from typing import Any
from urllib.parse import urlparse

import pyarrow as pa
import pyarrow.dataset as ds
import pyarrow.parquet as pq
from deltalake import DeltaTable
from deltalake.exceptions import DeltaError

from ..uris import S3_SCHEMES, is_local, join, listing, s3_options, to_uri
from .apps import COMMIT_LOOKBACK, INCREMENT_KINDS, app_id_for, increment_metadata
from .arrow_files import partition_value
from .location import PROGRESS_TABLE
from .schema import layout_problem, table_rows

# Delta's reader version 1: a snapshot is its `add` files less the `remove`d ones, each file
# read whole. Anything above (column mapping, deletion vectors, reader features) is Spark's.
READER_VERSION = 1
# the AWS settings delta-rs takes as storage options when the environment has them
_AWS_ENV = ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN")


class UnreadableError(Exception):
    """This reader cannot answer for the table exactly; Spark must."""


def _delta_rs_location(uri: str) -> tuple[str, dict[str, str]]:
    """delta-rs's URI of a table location and its storage options: the endpoint and region
    `uris` gives pyarrow, and the credentials pyarrow and Hadoop's s3a take from the same
    environment."""
    if is_local(uri):
        return uri, {}
    u = urlparse(uri)
    if u.scheme not in S3_SCHEMES:
        raise UnreadableError(f"{uri}: read through Spark (no delta-rs location here)")
    opts = s3_options()
    out = {"AWS_REGION": opts["region"]}
    if "endpoint" in opts:
        out["AWS_ENDPOINT_URL"] = opts["endpoint"]
        if opts["endpoint"].startswith("http://"):
            out["AWS_ALLOW_HTTP"] = "true"
    out.update({k: os.environ[k] for k in _AWS_ENV if os.environ.get(k)})
    return f"s3://{u.netloc}{u.path}", out


def open_table(path: str, pin: tuple[str, int] | None = None) -> DeltaTable | None:
    """The Delta table at `path` now, or at the (table id, version) `pin` (None: no table);
    `UnreadableError` where this reader cannot answer for it exactly."""
    dt = _open(path, None if pin is None else pin[1])
    if dt is not None and pin is not None and str(dt.metadata().id) != pin[0]:  # replaced
        raise UnreadableError(f"{path}: not the table of id {pin[0]}")
    return dt


def _open(path: str, version: int | None) -> DeltaTable | None:
    """The Delta table at `path` at `version` (None: now; None without a table), or
    `UnreadableError` when delta-rs fails on it or its protocol asks more of a reader than
    this one."""
    try:
        if not listing(join(path, "_delta_log")):
            return None
        uri, options = _delta_rs_location(path)
        dt = DeltaTable(uri, version=version, storage_options=options or None)
    except (DeltaError, OSError) as exc:
        raise UnreadableError(f"{path}: {' '.join(str(exc).split())}") from None
    protocol = dt.protocol()
    if protocol.min_reader_version > READER_VERSION or protocol.reader_features:
        raise UnreadableError(f"{path}: Delta reader version "
                              f"{protocol.min_reader_version} ({protocol.reader_features})")
    return dt


def add_actions(path: str, version: int | None = None) -> pa.Table:
    """The `add` actions of the table at `path` at `version` (None: now), flattened
    (delta-rs's `get_add_actions(flatten=True)`: `path`, `size_bytes`, `num_records`,
    `partition.<column>` ...): the files of that snapshot and the statistics their writer
    logged, without rebuilding the snapshot's state in Spark jobs. `UnreadableError`
    without a table or where this reader cannot answer exactly."""
    dt = _open(path, version)
    if dt is None:
        raise UnreadableError(f"{path}: no table")
    return pa.table(dt.get_add_actions(flatten=True))


def slice_adds(path: str, pin: tuple[str, int], values: Mapping[str, str | None]
               ) -> list[dict[str, Any]]:
    """The `add` actions of the files of the table at `path`, at `pin` (table id, version),
    whose partition values are `values` (column -> the value as Delta's log holds it): path,
    partition values, size and modification time, as the log holds them. What Delta's own
    `filterFiles` finds for that partition predicate on that snapshot, without rebuilding
    the snapshot's state in Spark jobs (seconds, in a new process). `UnreadableError` where
    this reader cannot say exactly (partition columns other than strings and booleans)."""
    dt = open_table(path, pin)
    if dt is None:
        raise UnreadableError(f"{path}: no table")
    parts = list(dt.metadata().partition_columns)
    if not set(values) <= set(parts):
        raise UnreadableError(f"{path}: {sorted(values)} are not all partition columns")
    adds = pa.table(dt.get_add_actions(flatten=True))
    out = []
    for add in adds.select(["path", "size_bytes", "modification_time",
                            *[f"partition.{c}" for c in parts]]).to_pylist():
        typed = {c: add[f"partition.{c}"] for c in parts}
        if any(v is not None and not isinstance(v, str | bool) for v in typed.values()):
            raise UnreadableError(f"{path}: partition values other than strings and booleans")
        logged = {c: partition_value(v) for c, v in typed.items()}
        if all(logged[c] == v for c, v in values.items()):
            out.append({"path": add["path"], "partitionValues": logged,
                        "size": add["size_bytes"], "modificationTime": add["modification_time"],
                        "dataChange": True})
    return out


class LakeLog:
    """A lake root's tables as their Delta logs say now, each loaded once (its version at
    the first question about it), or at the (table id, version) `versions` pins for it."""

    def __init__(self, root: str, versions: Mapping[str, tuple[str, int]] | None = None) -> None:
        self.root = to_uri(root)
        self._tables: dict[str, DeltaTable | None] = {}
        self._versions = dict(versions or {})

    def table(self, name: str) -> DeltaTable | None:
        """Table `name` at its version now (None: no table), or `UnreadableError`."""
        if name not in self._tables:
            self._tables[name] = self._load(name)
        return self._tables[name]

    def _load(self, name: str) -> DeltaTable | None:
        return open_table(join(self.root, name), self._versions.get(name))

    def transaction(self, name: str, app_id: str) -> int | None:
        """The last transaction version `app_id` committed to table `name` (None: never)."""
        dt = self.table(name)
        return None if dt is None else dt.transaction_version(app_id)

    def committed_at(self, name: str, app_id: str, version: int) -> dt.datetime | None:
        """When (naive UTC) the commit of increment (app_id, version) to table `name` was
        made, from its commitInfo (None: not among the last COMMIT_LOOKBACK commits)."""
        table = self.table(name)
        for info in [] if table is None else table.history(COMMIT_LOOKBACK):
            if increment_metadata(info, app_id, version) is not None and "timestamp" in info:
                return dt.datetime.fromtimestamp(info["timestamp"] / 1000, dt.UTC).replace(
                    tzinfo=None)
        return None

    def layout_problem(self, name: str) -> str | None:
        """How the table's layout differs from this kraftlake's (`schema.layout_problem`);
        None when it does not, or without a table."""
        dt = self.table(name)
        if dt is None:
            return None
        return layout_problem(name, tuple(dt.metadata().partition_columns),
                              tuple(f.name for f in dt.schema().fields))

    def rows(self, name: str, columns: list[str] | None = None,
             filters: list[tuple[str, str, Any]] | None = None) -> pa.Table:
        """The table's rows (those matching `filters`, pyarrow's `(column, op, value)`) in
        its schema's types; no rows without a table."""
        dt = self.table(name)
        if dt is None:
            t = pa.table({})
        else:
            try:
                # Read by this thread alone, without Parquet's pre-buffering: delta-rs's file
                # system is Python code, and a buffer it returned that an Arrow I/O thread
                # still held when the interpreter began to exit was released there, whose
                # thread then ended inside C++ ("terminate called without an active
                # exception", SIGABRT: a core of a `timeline` under load showed
                # ReadRangeCache -> PyBuffer::~PyBuffer -> PyGILState_Ensure in
                # Py_FinalizeEx; delta-rs issue 2184). With Arrow's CPU threads off but
                # pre-buffering on, one `timeline` in 30 did so under load; without it, none
                # of 150. These tables are small.
                t = dt.to_pyarrow_dataset().to_table(
                    columns=columns, use_threads=False,
                    fragment_scan_options=ds.ParquetFragmentScanOptions(pre_buffer=False),
                    filter=pq.filters_to_expression(filters) if filters else None)
            except (DeltaError, OSError, pa.ArrowException) as exc:
                raise UnreadableError(f"{join(self.root, name)}: "
                                      f"{' '.join(str(exc).split())}") from None
        return table_rows(t, name, columns)

    def progress_rows(self, cluster_id: str | None = None) -> list[dict]:
        """`ingest_progress` rows (of one cluster, or all), as Spark reads them (a column
        the table lacks is null). Refused when the table is laid out otherwise than this
        kraftlake's: its rows would not mean what the callers read in them."""
        if (problem := self.layout_problem(PROGRESS_TABLE)) is not None:
            raise UnreadableError(f"{join(self.root, PROGRESS_TABLE)}: table {problem}")
        filters = None if cluster_id is None else [("cluster_id", "=", cluster_id)]
        return self.rows(PROGRESS_TABLE, filters=filters).to_pylist()

    def clusters(self) -> set[str]:
        """The clusters the lake holds: those with a complete increment (a progress row)."""
        return set(self.rows(PROGRESS_TABLE, ["cluster_id"]).column("cluster_id").to_pylist())

    def held(self, name: str, clusters: Iterable[str]) -> set[str]:
        """Those of `clusters` with an increment under way in table `name`: an app id of
        theirs committed a newer transaction there than its last complete increment (its
        `ingest_progress` commit). `lake.cut` reads such a cluster at older versions; a
        caller of this reader leaves such a read to it."""
        def under_way(app_id: str) -> bool:
            got = self.transaction(name, app_id)
            done = self.transaction(PROGRESS_TABLE, app_id)
            return got is not None and got > (-1 if done is None else done)
        return {c for c in clusters
                if any(under_way(app_id_for(c, kind)) for kind in INCREMENT_KINDS)}
