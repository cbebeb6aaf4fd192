"""Decode one ReadRange (bytes of a segment or snapshot) into rows of the source schema.

This is the only per-record Python of the pipeline, and it runs inside Spark tasks. Rows
are bronze `records` columns plus a `row_kind`: `record`, `problem` (a damaged byte region,
kept raw for the quarantine, with the offsets and time its header claims and whether it may
have held state: `state_unknown`, `codec.damage`), `gap` (offsets the input lacks: lost to
retention, a missing segment; always `state_unknown`) or
`diverged` (bytes at an ingested offset changed).

Records are decoded by the columnar decoder (`codec.columnar.decode_columns`): runs of NoOp
heartbeat batches become Arrow columns in numpy without a Python object per record, every
other batch is decoded record by record with its `data` serialised by orjson and the fields
silver reads handed over typed beside it (`fields`, `codec.fields`: a struct column of the
source rows, not of bronze `records`); the range's own columns (cluster, source, snapshot,
offsets kept) are added to the Arrow table as a whole. `benchmarks/bench_decode.py` times
this step.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
from pyspark.sql import DataFrame
from pyspark.sql import types as T
from pyspark.sql.pandas.types import from_arrow_type

from ..codec import fields
from ..codec.columnar import decode_columns
from ..codec.damage import assess
from ..lake.schema import table_schema
from ..uris import basename, read_bytes
from .files import ReadRange

EXTRA = [("row_kind", "string"), ("byte_position", "long"), ("end_offset", "long"),
         ("problem_kind", "string"), ("state_unknown", "boolean"), ("batch_crc", "long")]


def source_arrow_schema() -> pa.Schema:
    base = table_schema("records").arrow
    types = {"string": pa.string(), "long": pa.int64(), "boolean": pa.bool_()}
    return pa.schema([pa.field(f.name, f.type, nullable=True) for f in base]
                     + [pa.field(n, types[t]) for n, t in EXTRA]
                     + [pa.field(fields.COLUMN, fields.TYPE)])


def source_spark_schema() -> T.StructType:
    base = table_schema("records").spark
    extra = {"string": T.StringType(), "long": T.LongType(), "boolean": T.BooleanType()}
    return T.StructType(list(base.fields) + [T.StructField(n, extra[t], True)
                                             for n, t in EXTRA]
                        + [T.StructField(fields.COLUMN, from_arrow_type(fields.TYPE), True)])


def with_fields(records: DataFrame) -> DataFrame:
    """Bronze `records` rows read back (a metadata transaction left open across increments)
    with the `fields` struct the decoder gave them as source rows: bronze keeps the JSON
    `data` only, which the decoder's own Python parses again here (`codec.fields`), in a
    Python task, so silver reads every record's fields one way."""
    schema = T.StructType([*records.schema.fields,
                           T.StructField(fields.COLUMN, from_arrow_type(fields.TYPE), True)])
    return records.mapInArrow(fields.with_fields, schema)


class _Rows:
    def __init__(self) -> None:
        self.cols: dict[str, list] = {f.name: [] for f in source_arrow_schema()}

    def add(self, **kw: Any) -> None:
        for name, col in self.cols.items():
            col.append(kw.get(name))

    def __len__(self) -> int:
        return len(self.cols["row_kind"])

    def batch(self) -> pa.RecordBatch:
        schema = source_arrow_schema()
        return pa.RecordBatch.from_arrays(
            [pa.array(self.cols[f.name], type=f.type) for f in schema], schema=schema)


def read_range(r: ReadRange, max_rows: int = 50_000) -> Iterator[pa.RecordBatch]:
    """Yield Arrow batches of source rows for one planned range."""
    rows = _Rows()
    name = basename(r.path) if r.path else ""
    if r.kind in ("gap", "diverged"):
        # a gap's offsets may have held any change: the state across them is unknown
        rows.add(cluster_id=r.cluster_id, row_kind=r.kind, offset=r.lo, end_offset=r.hi,
                 position=-1, byte_position=-1, source="log", source_file=name,
                 problem_kind=r.kind, error=r.note, state_unknown=r.kind == "gap")
        yield rows.batch()
        return
    try:
        buf = read_bytes(r.path, r.start, r.end)
    except FileNotFoundError:
        rows.add(cluster_id=r.cluster_id, row_kind="gap", offset=r.lo, end_offset=r.hi,
                 position=-1, byte_position=-1, source="log", source_file=name,
                 problem_kind="gap", error=f"{name} was deleted before it could be read")
        yield rows.batch()
        return
    snapshot = r.kind == "snapshot"
    source = "snapshot" if snapshot else "log"
    cols = decode_columns(buf, name)
    for item in cols.problems:
        if item.kind == "truncated" and r.end < 0 and not snapshot and r.note != "rolled":
            continue  # the active segment's last batch is still being written
        damage = assess(item.raw)
        rows.add(cluster_id=r.cluster_id, row_kind="problem", source=source,
                 source_file=name, byte_position=r.start + item.position,
                 offset=item.base_offset, end_offset=damage.next_offset, position=-1,
                 timestamp=None if damage.timestamp_ms is None else damage.timestamp_ms * 1000,
                 problem_kind=item.kind, error=item.message, value=item.raw,
                 state_unknown=damage.state_unknown)
    if len(rows):
        yield rows.batch()
    table = cols.table
    if not snapshot:
        offsets = table.column("offset")
        keep = pc.and_(pc.greater_equal(offsets, r.lo), pc.less(offsets, r.hi))
        # most ranges hold every record they decode; filtering copies each child of the
        # `fields` struct of every chunk (a NoOp run is a chunk), so only when it drops any
        if pc.sum(keep).as_py() != table.num_rows:
            table = table.filter(keep)
    if table.num_rows:
        yield from _source_rows(table, r, name, snapshot).to_batches(max_rows)


def _source_rows(table: pa.Table, r: ReadRange, name: str, snapshot: bool) -> pa.Table:
    """Decoded columns -> source-schema rows of range `r` (whole-column operations only).

    Snapshot records carry the snapshot's last contained log offset (end - 1) as `offset`
    and their in-file offset as `position`; timestamps become microseconds.
    """
    n = table.num_rows
    schema = source_arrow_schema()

    def const(field: str, value: object) -> pa.Array:
        return pa.repeat(pa.scalar(value, schema.field(field).type), n)

    offsets = table.column("offset")
    cols = {
        "cluster_id": const("cluster_id", r.cluster_id),
        "source": const("source", "snapshot" if snapshot else "log"),
        "snapshot_end_offset": const("snapshot_end_offset", r.snapshot_end if snapshot else None),
        "snapshot_role": const("snapshot_role", r.snapshot_role if snapshot else None),
        "offset": const("offset", r.snapshot_end - 1) if snapshot else offsets,
        "position": offsets,
        "timestamp": pc.multiply(table.column("timestamp"), 1000).cast(
            schema.field("timestamp").type),
        "source_file": const("source_file", name),
        "row_kind": const("row_kind", "record"),
        "byte_position": pc.add(table.column("byte_position"), r.start),
        "end_offset": const("end_offset", None),
        "problem_kind": const("problem_kind", None),
        "state_unknown": const("state_unknown", None),
    }
    return pa.table([cols[f.name] if f.name in cols else _as(table.column(f.name), f.type)
                     for f in schema], schema=schema)


def _as(col: pa.ChunkedArray, to: pa.DataType) -> pa.ChunkedArray:
    """`col` as type `to`; not cast when it is of that type (a cast of the `fields` struct
    goes through each of its children in each chunk)."""
    return col if col.type == to else col.cast(to)
