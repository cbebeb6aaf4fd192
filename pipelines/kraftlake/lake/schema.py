"""Lake table schemas, loaded from `schemas/tables/*.json` (data, not Python constants).

Most tables are not partitioned: one increment writes one cluster's rows into new files, so
the per-file min/max statistics Delta keeps already prune by cluster and offset. A table is
partitioned only where an increment must rewrite rows in place (`partition_timeline` closes
the states it supersedes, `partition_intervals` the spans that end): there the partitioning
keeps the rewritable rows apart from the history, so an increment's cost does not grow with
the history.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING

import pyarrow as pa

from ..packaged import SCHEMAS

if TYPE_CHECKING:
    from pyspark.sql import types as T

TABLES_DIR = SCHEMAS / "tables"
# kraftlake's own directory beside the tables of a lake: work frames (`lake.work`), ingest
# plans (`jobs.batch`) and stream checkpoints (`jobs.stream`)
KRAFTLAKE_DIR = "_kraftlake"

_ARROW = {
    "string": pa.string(), "long": pa.int64(), "int": pa.int32(), "boolean": pa.bool_(),
    "binary": pa.binary(), "timestamp": pa.timestamp("us", tz="UTC"), "double": pa.float64(),
    "array<int>": pa.list_(pa.field("element", pa.int32())),
    "array<string>": pa.list_(pa.field("element", pa.string())),
    "map<string,long>": pa.map_(pa.string(), pa.int64()),
}


@cache
def _spark_types() -> dict[str, T.DataType]:
    """The Spark type of each column type. pyspark is imported here, not with the module:
    the commands that refuse input before Spark starts read the table names without it."""
    from pyspark.sql import types as T

    return {
        "string": T.StringType(), "long": T.LongType(), "int": T.IntegerType(),
        "boolean": T.BooleanType(), "binary": T.BinaryType(), "timestamp": T.TimestampType(),
        "double": T.DoubleType(), "array<int>": T.ArrayType(T.IntegerType()),
        "array<string>": T.ArrayType(T.StringType()),
        "map<string,long>": T.MapType(T.StringType(), T.LongType()),
    }


@dataclass(frozen=True)
class TableSchema:
    name: str
    layer: str
    doc: str
    key: tuple[str, ...]
    columns: tuple[dict, ...]
    partition_by: tuple[str, ...] = ()

    @property
    def names(self) -> list[str]:
        return [c["name"] for c in self.columns]

    @property
    def arrow(self) -> pa.Schema:
        return pa.schema([pa.field(c["name"], _ARROW[c["type"]], nullable=c["nullable"])
                          for c in self.columns])

    @property
    def spark(self) -> T.StructType:
        from pyspark.sql import types as T

        # Spark reads parquet columns as nullable whatever the file says; so do we.
        types = _spark_types()
        return T.StructType([T.StructField(c["name"], types[c["type"]], True)
                             for c in self.columns])


@cache
def table_schema(name: str) -> TableSchema:
    """The schema of lake table `name`, from `schemas/tables/<name>.json`.

    Args:
        name: a table name (`table_names()`).

    Returns:
        Its `TableSchema`: layer, key, columns, partition columns. KeyError for a name
        that is no table.

    Example:
        >>> from kraftlake import table_schema
        >>> s = table_schema("partition_current")
        >>> s.layer, s.key, s.partition_by
        ('gold', ('cluster_id', 'topic_id', 'partition_id'), ('cluster_id',))
    """
    path = TABLES_DIR / f"{name}.json"
    if not path.is_file():
        raise KeyError(f"no table schema {path}")
    raw = json.loads(path.read_text())
    return TableSchema(raw["name"], raw["layer"], raw["doc"], tuple(raw["key"]),
                       tuple(raw["columns"]), tuple(raw.get("partition_by", ())))


# a partition's key columns, as the lake keys partitions (`partition_current`'s key)
PARTITION_KEY: tuple[str, ...] = table_schema("partition_current").key


def table_names() -> list[str]:
    """Every lake table's name, sorted (one `schemas/tables/*.json` each).

    Example:
        >>> from kraftlake import table_names
        >>> table_names()[:3]
        ['brokers', 'configs', 'incidents']
    """
    return sorted(p.stem for p in Path(TABLES_DIR).glob("*.json"))


def layout_problem(name: str, partition_columns: tuple[str, ...],
                   columns: tuple[str, ...]) -> str | None:
    """How a table's partitioning or columns (names, order), as its Delta metadata gives
    them, differ from table `name`'s schema, as the end of "table ..." (None: they do not).
    One comparison for both readers of the metadata: delta-spark's snapshot (`lake.delta`)
    and delta-rs's (`lake.deltalog`)."""
    schema = table_schema(name)
    if partition_columns != schema.partition_by:
        return (f"is partitioned by {list(partition_columns)}, this kraftlake expects "
                f"{list(schema.partition_by)}")
    if columns != tuple(schema.names):
        return f"has the columns {list(columns)}, this kraftlake expects {schema.names}"
    return None


def table_rows(t: pa.Table, name: str, columns: list[str] | None = None) -> pa.Table:
    """`t`'s rows as Arrow in table `name`'s own schema (or in its `columns`), a column `t`
    lacks as nulls: rows read by Spark and by delta-rs, or held by a job, then compare."""
    arrow = table_schema(name).arrow
    fields = [arrow.field(c) for c in columns] if columns is not None else list(arrow)
    return pa.Table.from_arrays([t.column(f.name).cast(f.type) if f.name in t.column_names
                                 else pa.nulls(t.num_rows, f.type) for f in fields],
                                schema=pa.schema(fields))


def is_kraftlake_lake(path: Path) -> bool:
    """Whether every entry of `path` is a kraftlake table directory (a Delta log inside) or
    kraftlake's own `KRAFTLAKE_DIR` (`_kraftlake/`): what `demo --force` may delete. A home
    directory, a source tree or any other data never looks like that."""
    tables = set(table_names())
    entries = list(path.iterdir())
    return bool(entries) and all(
        e.is_dir() and not e.is_symlink()
        and (e.name == KRAFTLAKE_DIR or (e.name in tables and (e / "_delta_log").is_dir()))
        for e in entries)
