"""A small increment's rows as a Delta table's data files, written from the driver's Arrow.

A small increment (`jobs/increment.py`: decoded and folded on the driver) holds each
table's rows as an Arrow table already. Handing them to Spark to write costs one or two
Spark jobs per table (planning the local relation, a task, the write's statistics), about
a dozen per increment for a few hundred rows each. Here pyarrow writes the parquet file
and this module computes the Delta statistics of it, so the commit (`lake.transaction`) adds
files Spark never saw.

The statistics are the ones Delta's writer computes for the same rows (a test writes the
same rows both ways and compares the add actions): the row count, and for the first
`delta.dataSkippingNumIndexedCols` data columns (partition columns excluded) the null
count, and the minimum and maximum where Delta collects them (numbers, dates, timestamps,
strings). Strings are truncated to 32 characters (a maximum: 32 UTF-16 units, and a
tie-breaker appended so that it still bounds every value); timestamps are written to the
millisecond in the session's time zone (UTC: `conf/kraftlake.yaml`), as Spark's JSON
writes them. A table whose indexed columns hold a type this module does not know is not
written here (`writable`): the caller hands its rows to Spark instead.
"""

from __future__ import annotations

import datetime as dt
import io
import json
import time
import uuid
from collections.abc import Iterator
from typing import Any
from urllib.parse import quote, unquote

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.fs as pafs
import pyarrow.parquet as pq

from ..uris import filesystem

# Delta's string statistics: the prefix kept, and what a truncated maximum is extended with
PREFIX = 32
_ASCII_MAX = "\x7f"
_UNICODE_MAX = "\U0010ffff"
# Characters Spark escapes in a partition directory's value (`ExternalCatalogUtils`)
_ESCAPED = set('"#%\'*/:=?\\\x7f{[]^') | {chr(c) for c in range(0x20)}


def writable(schema: pa.Schema, partition_by: tuple[str, ...], indexed: int) -> bool:
    """Every indexed data column of `schema` is of a type whose statistics this module
    computes as Delta does (no nested struct among them, no float or decimal)."""
    return all(_kind(f.type) is not None for f in _indexed(schema, partition_by, indexed))


def data_files(rows: pa.Table, partition_by: tuple[str, ...], indexed: int
               ) -> Iterator[tuple[dict[str, Any], bytes]]:
    """One parquet file per partition of `rows` (in the table's schema): each as the add
    action Delta's log takes (path relative to the table, URI-encoded) and the file's
    bytes, to be written at that path."""
    for values, part in _partitions(rows, partition_by):
        data = part.drop_columns(list(partition_by))
        buf = io.BytesIO()
        pq.write_table(data, buf, compression="snappy")
        counted = Stats(data.schema, indexed)
        counted.add(data)
        yield _add(_file_path(values), values, buf.tell(), counted), buf.getvalue()


class TableFiles:
    """A table's rows written as parquet data files while they come, one file per partition
    value, for a commit that adds them (`lake.written`): what a Spark task writes of one
    table, a batch at a time, so that its rows never pass through the JVM. Statistics as
    `data_files` computes them, gathered per batch (`Stats`)."""

    def __init__(self, uri: str, schema: pa.Schema, partition_by: tuple[str, ...],
                 indexed: int) -> None:
        self.fs, self.base = filesystem(uri)
        self.partition_by, self.indexed = partition_by, indexed
        self.data_schema = pa.schema([f for f in schema if f.name not in partition_by])
        self.open: dict[tuple[Any, ...], tuple[str, Any, pq.ParquetWriter, Stats]] = {}

    def write(self, rows: pa.Table) -> None:
        """Add `rows` (in the table's schema) to the files of their partitions."""
        for values, part in _partitions(rows, self.partition_by):
            key = tuple(values.values())
            if key not in self.open:
                path = _file_path(values)
                full = f"{self.base}/{unquote(path)}"
                if isinstance(self.fs, pafs.LocalFileSystem):
                    self.fs.create_dir(full.rsplit("/", 1)[0], recursive=True)
                sink = self.fs.open_output_stream(full)
                self.open[key] = (path, sink, pq.ParquetWriter(
                    sink, self.data_schema, compression="snappy"),
                    Stats(self.data_schema, self.indexed))
            _path, _sink, writer, counted = self.open[key]
            data = part.drop_columns(list(self.partition_by))
            writer.write_table(data)
            counted.add(data)

    def close(self) -> list[dict[str, Any]]:
        """Finish every file; their add actions."""
        adds = []
        for key, (path, sink, writer, counted) in self.open.items():
            writer.close()
            size = sink.tell()
            sink.close()
            adds.append(_add(path, dict(zip(self.partition_by, key, strict=True)), size,
                             counted))
        self.open = {}
        return adds


def _file_path(values: dict[str, str | None]) -> str:
    """A new data file's path in the table, under its partition's directories, URI-encoded
    as the log holds it."""
    name = f"part-00000-{uuid.uuid4()}-c000.snappy.parquet"
    return quote("".join(f"{c}={_escape(v)}/" for c, v in values.items()) + name, safe="/=")


def _add(path: str, values: dict[str, str | None], size: int, counted: Stats
         ) -> dict[str, Any]:
    return {"path": path, "partitionValues": values, "size": size,
            "modificationTime": int(time.time() * 1000), "dataChange": True,
            "stats": counted.json()}


class Stats:
    """The statistics Delta's writer records for a file (data columns only), gathered from
    its rows a batch at a time: the row count, and for the indexed columns the null count,
    the minimum and the maximum."""

    def __init__(self, schema: pa.Schema, indexed: int) -> None:
        self.fields = _indexed(schema, (), indexed)
        self.rows = 0
        self.nulls = {f.name: 0 for f in self.fields}
        self.lo: dict[str, Any] = {}
        self.hi: dict[str, Any] = {}

    def add(self, data: pa.Table) -> None:
        self.rows += data.num_rows
        for f in self.fields:
            col = data.column(f.name)
            self.nulls[f.name] += col.null_count
            if _kind(f.type) == "count" or col.null_count == len(col):
                continue
            lo, hi = (v.as_py() for v in pc.min_max(col).values())
            if f.name not in self.lo or lo < self.lo[f.name]:
                self.lo[f.name] = lo
            if f.name not in self.hi or hi > self.hi[f.name]:
                self.hi[f.name] = hi

    def json(self) -> str:
        kinds = {f.name: _kind(f.type) for f in self.fields}
        mins = {c: _stat(v, kinds[c], "min") for c, v in self.lo.items()}
        maxs = {c: high for c, v in self.hi.items()
                if (high := _stat(v, kinds[c], "max")) is not None}
        return json.dumps({"numRecords": self.rows, "minValues": mins, "maxValues": maxs,
                           "nullCount": self.nulls}, separators=(",", ":"), ensure_ascii=False)


def stats(data: pa.Table, indexed: int) -> str:
    """The statistics Delta's writer records for a file of `data` (data columns only)."""
    counted = Stats(data.schema, indexed)
    counted.add(data)
    return counted.json()


def records(add: dict[str, Any]) -> int:
    """The rows of the data file an add action (as the log holds it) adds."""
    return int(json.loads(add["stats"])["numRecords"])


def _indexed(schema: pa.Schema, partition_by: tuple[str, ...], indexed: int) -> list[pa.Field]:
    return [f for f in schema if f.name not in partition_by][:indexed]


def _kind(t: pa.DataType) -> str | None:
    """How Delta takes statistics of a column of type `t`: "int", "string", "timestamp",
    "date" (minimum, maximum and nulls), "count" (nulls only); None: not known here."""
    if pa.types.is_integer(t):
        return "int"
    if pa.types.is_string(t) or pa.types.is_large_string(t):
        return "string"
    if pa.types.is_timestamp(t):
        return "timestamp"
    if pa.types.is_date32(t):
        return "date"
    if (pa.types.is_boolean(t) or pa.types.is_binary(t) or pa.types.is_list(t)
            or pa.types.is_map(t)):
        return "count"
    return None


def _stat(value: Any, kind: str | None, which: str) -> Any:
    if kind == "string":
        return _truncated(value, which)
    if kind == "timestamp":
        return _millis(value)
    if kind == "date":
        return value.isoformat()
    return value


def _millis(value: dt.datetime) -> str:
    """A timestamp as Spark's JSON writes it: milliseconds (truncated), UTC as `Z`."""
    utc = value.astimezone(dt.UTC)
    return utc.strftime("%Y-%m-%dT%H:%M:%S.") + f"{utc.microsecond // 1000:03d}Z"


def _utf16(s: str) -> list[str]:
    """`s` as UTF-16 units (Java's `String` characters), each a one-character string."""
    raw = s.encode("utf-16-le", "surrogatepass")
    return [raw[i:i + 2].decode("utf-16-le", "surrogatepass") for i in range(0, len(raw), 2)]


def _truncated(value: str, which: str) -> str | None:
    """A string statistic as Delta keeps it: a minimum's first `PREFIX` characters; a
    maximum longer than `PREFIX` UTF-16 units (Java's length) cut there, never inside a
    surrogate pair, and extended by a character above what was cut off (None: no such
    bound within twice the prefix, and Delta keeps no maximum)."""
    if which == "min":  # Spark's substring, in characters
        return value[:PREFIX]
    units = _utf16(value)
    if len(units) <= PREFIX:
        return value
    keep = PREFIX + (1 if _is_pair(units, PREFIX - 1) else 0)
    top = _utf16(_UNICODE_MAX)
    while keep <= 2 * PREFIX:
        if keep >= len(units):
            return value
        if units[keep:keep + 2] == top:
            keep += 2
        elif units[keep] < _ASCII_MAX:
            return _joined(units[:keep]) + _ASCII_MAX
        else:
            return _joined(units[:keep]) + _UNICODE_MAX
    return None


def _is_pair(units: list[str], i: int) -> bool:
    return (i + 1 < len(units) and "\ud800" <= units[i] <= "\udbff"
            and "\udc00" <= units[i + 1] <= "\udfff")


def _joined(units: list[str]) -> str:
    return "".join(units).encode("utf-16-le", "surrogatepass").decode("utf-16-le")


def _partitions(rows: pa.Table, partition_by: tuple[str, ...]
                ) -> Iterator[tuple[dict[str, str | None], pa.Table]]:
    """`rows` split by the values of the partition columns: each part's partition values
    (as the log holds them) and rows; none for no rows."""
    if not partition_by:
        if rows.num_rows:
            yield {}, rows
        return
    keys = rows.select(list(partition_by)).group_by(list(partition_by), use_threads=False
                                                    ).aggregate([]).to_pylist()
    for key in keys:
        mask = None
        for c, v in key.items():
            m = pc.is_null(rows[c]) if v is None else pc.equal(rows[c], v)
            mask = m if mask is None else pc.and_(mask, m)
        yield {c: partition_value(v) for c, v in key.items()}, rows.filter(mask)


def partition_value(value: Any) -> str | None:
    """A partition value as Delta's log holds it (a string; booleans lower-case)."""
    if value is None:
        return None
    return str(value).lower() if isinstance(value, bool) else str(value)


def _escape(value: str | None) -> str:
    """A partition value as a directory name (Spark's escaping; null as Hive's default)."""
    if value is None:
        return "__HIVE_DEFAULT_PARTITION__"
    return "".join(f"%{ord(c):02X}" if c in _ESCAPED else c for c in value)
