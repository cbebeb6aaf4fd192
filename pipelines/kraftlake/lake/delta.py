"""The lake: a directory of Delta tables written with delta-rs and read by Spark.

Every write of an increment carries a Delta transaction id (app id, version). Before writing
a table we ask the table for the last version it committed for that app id; if it already
has this one, the write is skipped. That is what makes a killed job safe to re-run: the
tables that committed keep their rows, the others get exactly the same rows now.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from itertools import chain
from pathlib import Path

import pyarrow as pa
import pyarrow.dataset as pads
from deltalake import CommitProperties, DeltaTable, Transaction, write_deltalake
from pyspark.sql import DataFrame, SparkSession

from .schema import table_names, table_schema
from .staging import conform, conformed_reader

Rows = pa.Table | pa.RecordBatchReader
META_APP, META_VERSION = "kraftlake.app_id", "kraftlake.version"  # in every commit's info


def _predicate(f: pads.Expression, op: str, val: object) -> pads.Expression:
    """One filter term; built lazily, since `isin` of a scalar raises."""
    if op == "==":
        return f == val
    if op == ">=":
        return f >= val
    if op == ">":
        return f > val
    if op == "<":
        return f < val
    if op == "in":
        return f.isin(val)
    raise ValueError(f"unknown filter operator {op!r}")


class LakeLayoutError(ValueError):
    """A table on disk does not have the layout this version of kraftlake writes."""


class Lake:
    """A lake root; table `name` lives in `<root>/<name>`."""

    def __init__(self, root: str | Path) -> None:
        self.root = Path(root).resolve()
        self._ensured: set[str] = set()  # tables created or checked by this instance

    # ------------------------------------------------------------------ metadata

    def path(self, name: str) -> Path:
        return self.root / name

    def exists(self, name: str) -> bool:
        return DeltaTable.is_deltatable(str(self.path(name)))

    def table(self, name: str) -> DeltaTable | None:
        return DeltaTable(str(self.path(name))) if self.exists(name) else None

    def txn_version(self, name: str, app_id: str) -> int | None:
        """Last transaction version `app_id` committed to table `name` (None = never)."""
        dt = self.table(name)
        return None if dt is None else dt.transaction_version(app_id)

    def committed(self, name: str, app_id: str, version: int) -> bool:
        v = self.txn_version(name, app_id)
        return v is not None and v >= version

    # ------------------------------------------------------------------ writing

    @staticmethod
    def _props(app_id: str | None, version: int | None,
               metadata: dict[str, str] | None = None) -> CommitProperties | None:
        if app_id is None:
            return None
        meta = {META_APP: app_id, META_VERSION: str(version), **(metadata or {})}
        return CommitProperties(app_transactions=[Transaction(app_id, int(version))],
                                custom_metadata=meta)

    def commit_metadata(self, name: str, app_id: str, version: int) -> dict[str, str] | None:
        """The metadata written with the commit of (app_id, version) to `name`, if any.

        Lets a re-run that skips an already committed table learn what that commit wrote.
        The newest commits are searched first: the one sought is normally among them.
        """
        dt = self.table(name)
        if dt is None or not self.committed(name, app_id, version):
            return None
        for limit in (50, None):
            for h in dt.history(limit=limit):
                if h.get(META_APP) == app_id and h.get(META_VERSION) == str(version):
                    return {k: v for k, v in h.items() if isinstance(v, str)}
        return None

    def ensure(self, name: str) -> None:
        """Create table `name` (empty) if it does not exist yet.

        An existing table partitioned otherwise than its schema says was written by an
        older kraftlake; writing on would mix layouts, so it is refused with the remedy.
        Checked once per table and instance: every write calls this, and loading a table's
        Delta log each time would put that I/O on every micro-batch.
        """
        if name in self._ensured:
            return
        schema = table_schema(name)
        dt = self.table(name)
        if dt is None:
            write_deltalake(str(self.path(name)), schema.arrow.empty_table(), mode="append",
                            partition_by=list(schema.partition_by) or None,
                            description=schema.doc)
        elif tuple(dt.metadata().partition_columns) != schema.partition_by:
            raise LakeLayoutError(
                f"{self.path(name)}: table is partitioned by "
                f"{list(dt.metadata().partition_columns)}, this kraftlake expects "
                f"{list(schema.partition_by)}; it was written by an older version: ingest "
                f"into a new lake (the log is the source of truth)")
        self._ensured.add(name)

    def ensure_all(self) -> None:
        for name in table_names():
            self.ensure(name)

    def append(self, name: str, data: Rows, app_id: str | None = None,
               version: int | None = None) -> bool:
        """Append rows once per (app_id, version); returns False if already committed.

        `data` is a table or a stream of batches (e.g. `Staged.reader()`): a stream is
        written as it is read, so the driver never holds all the rows.
        """
        if app_id is not None and self.committed(name, app_id, version):
            return False
        self.ensure(name)
        schema = table_schema(name)
        if isinstance(data, pa.Table):
            if data.num_rows == 0 and app_id is None:
                return True
            data = conform(data, schema.arrow)
        else:
            data = conformed_reader(data, schema.arrow)
        write_deltalake(str(self.path(name)), data, mode="append",
                        partition_by=list(schema.partition_by) or None,
                        commit_properties=self._props(app_id, version))
        return True

    def upsert(self, name: str, data: Rows, app_id: str, version: int,
               delete_keys: pa.Table | None = None, target_filter: str = "",
               metadata: dict[str, str] | None = None) -> bool:
        """Merge rows on the table key (update or insert), once per (app_id, version).

        `delete_keys` (key columns only) are removed in the same commit. `target_filter`
        restricts which target rows can match (it lets delta-rs skip files by statistics).
        `data` may be a stream of batches; delta-rs merges it as a stream (`streamed_exec`).
        `metadata` goes into the commit (see `commit_metadata`).
        """
        if self.committed(name, app_id, version):
            return False
        self.ensure(name)
        schema = table_schema(name)
        loose = pa.schema([f.with_nullable(True) for f in schema.arrow])
        marked = loose.append(pa.field("_delete", pa.bool_()))

        def mark(batches: Iterable[pa.RecordBatch], delete: bool) -> Iterator[pa.RecordBatch]:
            for t in conformed_reader(batches, loose):
                flag = pa.array([delete] * t.num_rows, pa.bool_())
                yield t.append_column("_delete", flag)

        rows = data.to_batches() if isinstance(data, pa.Table) else data
        deletes = delete_keys.to_batches() if delete_keys is not None else []
        source = pa.RecordBatchReader.from_batches(
            marked, chain(mark(rows, False), mark(deletes, True)))
        on = " AND ".join(f"t.{k} = s.{k}" for k in schema.key)
        if target_filter:
            on = f"{on} AND ({target_filter})"
        cols = {c: f"s.{c}" for c in schema.names}
        (DeltaTable(str(self.path(name)))
         .merge(source, predicate=on, source_alias="s", target_alias="t",
                commit_properties=self._props(app_id, version, metadata))
         .when_matched_delete(predicate="s._delete = true")
         .when_matched_update(updates=cols, predicate="s._delete = false")
         .when_not_matched_insert(updates=cols, predicate="s._delete = false")
         .execute())
        return True

    # ------------------------------------------------------------------ reading

    def read(self, spark: SparkSession, name: str) -> DataFrame:
        """Table `name` as a Spark DataFrame, through its current snapshot's file list."""
        schema = table_schema(name)
        dt = self.table(name)
        files = dt.file_uris() if dt is not None else []
        if not files:
            return spark.createDataFrame([], schema.spark)
        reader = spark.read.schema(schema.spark)
        if schema.partition_by:  # partition values live in the paths (`col=value/`), as in Delta
            reader = reader.option("basePath", self.path(name).as_uri())
        return reader.parquet(*files)

    def read_arrow(self, name: str, filters: list | None = None,
                   columns: list[str] | None = None) -> pa.Table:
        """Rows of `name` through delta-rs (pyarrow filters prune files by statistics)."""
        schema = table_schema(name)
        dt = self.table(name)
        if dt is None:
            t = schema.arrow.empty_table()
            return t.select(columns) if columns else t
        ds = dt.to_pyarrow_dataset()
        expr = None
        for col, op, val in filters or []:
            e = _predicate(pads.field(col), op, val)
            expr = e if expr is None else expr & e
        return ds.to_table(filter=expr, columns=columns)

    def register_views(self, spark: SparkSession) -> list[str]:
        """Every table as a temp view under its own name (for `kraftlake sql`)."""
        names = []
        for name in table_names():
            self.read(spark, name).createOrReplaceTempView(name)
            names.append(name)
        return names
