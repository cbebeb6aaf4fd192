"""Decode one ReadRange (bytes of a segment or snapshot) into rows of the source schema.

This is the only per-record Python of the pipeline, and it runs inside Spark tasks. Rows
are bronze `records` columns plus a `row_kind`: `record`, `problem` (a damaged byte region,
kept raw for the quarantine), `gap` (offsets lost to retention) or `diverged` (bytes at an
ingested offset changed).
"""

from __future__ import annotations

import base64
import json
from collections.abc import Iterator
from typing import Any

import pyarrow as pa
from pyspark.sql import types as T

from ..codec.batch import Problem, scan_batches
from ..codec.logfiles import records_of_batch
from ..lake.schema import table_schema
from ..uris import basename, read_bytes
from .files import ReadRange

EXTRA = [("row_kind", "string"), ("byte_position", "long"), ("end_offset", "long"),
         ("problem_kind", "string")]


def source_arrow_schema() -> pa.Schema:
    base = table_schema("records").arrow
    fields = [pa.field(f.name, f.type, nullable=True) for f in base]
    fields += [pa.field("row_kind", pa.string()), pa.field("byte_position", pa.int64()),
               pa.field("end_offset", pa.int64()), pa.field("problem_kind", pa.string())]
    return pa.schema(fields)


def source_spark_schema() -> T.StructType:
    base = table_schema("records").spark
    extra = {"string": T.StringType(), "long": T.LongType()}
    return T.StructType(list(base.fields) + [T.StructField(n, extra[t], True)
                                             for n, t in EXTRA])


def _json_default(o: Any) -> Any:
    if isinstance(o, (bytes, bytearray, memoryview)):
        return base64.b64encode(bytes(o)).decode()
    raise TypeError(type(o).__name__)


def _dumps(data: dict | None) -> str | None:
    return None if data is None else json.dumps(data, default=_json_default, separators=(",", ":"))


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
        rows.add(cluster_id=r.cluster_id, row_kind=r.kind, offset=r.lo, end_offset=r.hi,
                 position=-1, byte_position=-1, source="log", source_file=name,
                 problem_kind=r.kind, error=r.note)
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
    for item in scan_batches(buf, name):
        if isinstance(item, Problem):
            if item.kind == "truncated" and r.end < 0 and not snapshot and r.note != "rolled":
                continue  # the active segment's last batch is still being written
            rows.add(cluster_id=r.cluster_id, row_kind="problem", source="snapshot" if snapshot
                     else "log", source_file=name, byte_position=r.start + item.position,
                     offset=item.base_offset, position=-1, problem_kind=item.kind,
                     error=item.message, value=item.raw)
            continue
        if not snapshot and (item.last_offset < r.lo or item.base_offset >= r.hi):
            continue
        for rec in records_of_batch(item):
            if snapshot:
                offset, position = r.snapshot_end - 1, rec.offset
            else:
                if not (r.lo <= rec.offset < r.hi):
                    continue
                offset = position = rec.offset
            rows.add(cluster_id=r.cluster_id, source="snapshot" if snapshot else "log",
                     snapshot_end_offset=r.snapshot_end if snapshot else None,
                     snapshot_role=r.snapshot_role if snapshot else None,
                     offset=offset, position=position, batch_base_offset=item.base_offset,
                     epoch=item.partition_leader_epoch, timestamp=rec.timestamp * 1000,
                     control=rec.control, record_type=rec.type, api_key=rec.api_key,
                     version=rec.version, data=_dumps(rec.data), value=rec.value,
                     error=rec.error, source_file=name, row_kind="record",
                     byte_position=r.start + item.position)
            if len(rows) >= max_rows:
                yield rows.batch()
                rows = _Rows()
    if len(rows):
        yield rows.batch()
