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
from urllib.parse import quote

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

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
    parts = [rows] if not partition_by else _partitions(rows, partition_by)
    for part in parts:
        if not part.num_rows:
            continue
        values = {c: partition_value(part.column(c)[0].as_py()) for c in partition_by}
        data = part.drop_columns(list(partition_by))
        buf = io.BytesIO()
        pq.write_table(data, buf, compression="snappy")
        name = f"part-00000-{uuid.uuid4()}-c000.snappy.parquet"
        folder = "".join(f"{c}={_escape(v)}/" for c, v in values.items())
        add = {"path": quote(folder + name, safe="/="),
               "partitionValues": values, "size": buf.tell(),
               "modificationTime": int(time.time() * 1000), "dataChange": True,
               "stats": stats(data, indexed)}
        yield add, buf.getvalue()


def stats(data: pa.Table, indexed: int) -> str:
    """The statistics Delta's writer records for a file of `data` (data columns only)."""
    mins: dict[str, Any] = {}
    maxs: dict[str, Any] = {}
    nulls: dict[str, int] = {}
    for f in _indexed(data.schema, (), indexed):
        col = data.column(f.name)
        kind = _kind(f.type)
        if kind != "count" and col.null_count < len(col):
            lo, hi = pc.min_max(col).values()
            mins[f.name] = _stat(lo.as_py(), kind, "min")
            high = _stat(hi.as_py(), kind, "max")
            if high is not None:
                maxs[f.name] = high
        nulls[f.name] = col.null_count
    return json.dumps({"numRecords": data.num_rows, "minValues": mins, "maxValues": maxs,
                       "nullCount": nulls}, separators=(",", ":"), ensure_ascii=False)


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


def _partitions(rows: pa.Table, partition_by: tuple[str, ...]) -> list[pa.Table]:
    """`rows` split by the values of the partition columns."""
    keys = rows.select(list(partition_by)).to_pylist()
    groups: dict[tuple[Any, ...], list[int]] = {}
    for i, k in enumerate(keys):
        groups.setdefault(tuple(k.values()), []).append(i)
    return [rows.take(pa.array(idx, pa.int64())) for idx in groups.values()]


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
