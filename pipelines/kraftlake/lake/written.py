"""Rows of a table that a job's Spark tasks wrote as data files before its commit.

A large increment's kernel tasks write the timeline, event and interval rows they make
straight into their tables' directories (`lake.arrow_files.TableFiles`) and hand back the
files' add actions: the rows never pass through the JVM, are never written to a work frame,
and are never read back to be written again. The commit (`lake.transaction.commit_files`)
adds those files. Where kraftlake's transaction does not commit a table itself (a protocol
it does not know, statistics it does not compute: `Lake.files_target`), the tasks write to the
increment's work directory instead, and the rows are read back and handed to Delta's writer
(`frame`). Files a killed or retried task left behind are in no commit: Delta's VACUUM
removes them, as it does a killed writer's.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any
from urllib.parse import unquote

import pyarrow as pa
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql import types as T

from ..uris import join
from .arrow_files import TableFiles, records
from .schema import table_schema


@dataclass(frozen=True)
class Target:
    """Where a job's tasks write table `table`'s data files (`uri`), laid out as the table
    is (its partition columns, its count of columns with statistics); `direct`: `uri` is the
    table's own directory (`Lake.files_target`)."""

    table: str
    uri: str
    partition_by: tuple[str, ...]
    indexed: int
    direct: bool

    def files(self) -> TableFiles:
        """A writer of the table's rows into new files there (in a task)."""
        return TableFiles(self.uri, table_schema(self.table).arrow, self.partition_by,
                          self.indexed)

    def written(self, adds: list[dict[str, Any]]) -> Written:
        """The rows of the files whose add actions are `adds`."""
        return Written(self.table, self.uri, tuple(adds), self.direct)


@dataclass(frozen=True)
class Written:
    """Table `table`'s rows in the data files `adds` (add actions, paths relative to `root`),
    and `rest`: rows still to write in the same commit (the driver's Arrow, in the table's
    schema), e.g. the open rows of partitions an increment left alone. `direct`: `root` is the
    table's own directory, so the files can be added as they are."""

    table: str
    root: str
    adds: tuple[dict[str, Any], ...]
    direct: bool
    rest: pa.Table | None = None

    @property
    def rows(self) -> int:
        """The rows in the files and in `rest`."""
        return sum(records(a) for a in self.adds) + (
            0 if self.rest is None else self.rest.num_rows)

    def with_rest(self, rest: pa.Table | None) -> Written:
        return Written(self.table, self.root, self.adds, self.direct, rest)

    def files_frame(self, spark: SparkSession) -> DataFrame:
        """The files' rows (not `rest`) in the table's columns, read back: each file's
        partition values are the log's, not its path's."""
        schema = table_schema(self.table)
        data = [f for f in schema.spark.fields if f.name not in schema.partition_by]
        groups: dict[tuple[tuple[str, Any], ...], list[str]] = {}
        for a in self.adds:
            key = tuple(sorted(a["partitionValues"].items()))
            groups.setdefault(key, []).append(join(self.root, unquote(a["path"])))
        frames = []
        reader = spark.read.schema(T.StructType(data))
        types = {f.name: f.dataType for f in schema.spark.fields}
        for key, paths in groups.items():
            values = dict(key)
            frames.append(reader.parquet(*paths).select(*[
                F.lit(values[c]).cast(types[c]).alias(c) if c in values else F.col(c)
                for c in schema.names]))
        if not frames:
            return spark.createDataFrame(schema.arrow.empty_table(), schema.spark)
        out = frames[0]
        for f in frames[1:]:
            out = out.unionByName(f)
        return out

    def frame(self, spark: SparkSession) -> DataFrame:
        """Every row: the files' and `rest`."""
        rows = self.files_frame(spark)
        if self.rest is None or not self.rest.num_rows:
            return rows
        schema = table_schema(self.table)
        return rows.unionByName(spark.createDataFrame(self.rest, schema.spark))
