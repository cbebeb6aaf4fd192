"""Decode a whole file's bytes straight into Arrow columns (the bronze layer's shape).

The object path (`logfiles.iter_file`) builds a Python object per record, which is the
right tool for tests, the CLI and the replay. Ingest needs columns, and a quiet cluster's
log is ~98% NoOpRecord heartbeats in identical 72-byte batches. Runs of those are recognised
with numpy and turned into columns without a Python object per record; only their CRCs are
checked one by one (with the C crc32c). Every other batch goes through the normal decoder,
so the two paths yield the same values (tests compare them on every real file).

Beside each record's JSON `data` the decoder hands over the fields the silver layer reads as
the typed struct `fields` (`codec.fields`), made from the same decoded values, so silver
never parses the JSON again; a NoOp run's is null, as is every record silver does not read.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pyarrow as pa
from crc32c import crc32c

from ..kraft.records import NO_OP_RECORD
from . import fields
from .batch import CRC_START, Batch, Problem, next_item
from .logfiles import records_of_batch
from .records import to_json

# A KRaft NoOp batch: 61-byte header + one 11-byte record whose value is
# 01 14 00 00 (frame 1, apiKey 20, version 0, no tagged fields).
_NOOP_RECORD = bytes.fromhex("1400000001080114000000")
_NOOP_VALUE = bytes.fromhex("01140000")
_NOOP_BATCH = np.dtype([
    ("base", ">i8"), ("length", ">i4"), ("epoch", ">i4"), ("magic", "i1"), ("crc", ">u4"),
    ("attributes", ">i2"), ("last_delta", ">i4"), ("base_ts", ">i8"), ("max_ts", ">i8"),
    ("pid", ">i8"), ("pepoch", ">i2"), ("bseq", ">i4"), ("count", ">i4"),
    ("record", f"V{len(_NOOP_RECORD)}"),
])
_NOOP_SIZE = _NOOP_BATCH.itemsize  # 72
_NOOP_LENGTH = (_NOOP_SIZE - 12).to_bytes(4, "big")
_CHUNK = 8192

SCHEMA = pa.schema([
    ("offset", pa.int64()), ("timestamp", pa.int64()), ("epoch", pa.int32()),
    ("control", pa.bool_()), ("record_type", pa.string()), ("api_key", pa.int32()),
    ("version", pa.int32()), ("data", pa.string()), ("value", pa.binary()),
    ("error", pa.string()), ("batch_base_offset", pa.int64()), ("byte_position", pa.int64()),
    ("batch_crc", pa.int64()), (fields.COLUMN, fields.TYPE),
])


@dataclass(slots=True)
class Columns:
    """Decoded records as Arrow record batches, plus the damaged regions met on the way."""

    batches: list[pa.RecordBatch] = field(default_factory=list)
    problems: list[Problem] = field(default_factory=list)
    _rows: dict[str, list[object]] = field(default_factory=lambda: {n: [] for n in SCHEMA.names})

    @property
    def table(self) -> pa.Table:
        self._flush()
        return pa.Table.from_batches(self.batches, schema=SCHEMA)

    def _flush(self) -> None:
        if self._rows["offset"]:
            self.batches.append(pa.RecordBatch.from_arrays(
                [pa.array(self._rows[f.name], f.type) for f in SCHEMA], schema=SCHEMA))
            for col in self._rows.values():
                col.clear()

    def add_batch(self, batch: Batch, *, redact: bool) -> None:
        """A batch that is no NoOp run: its records decoded by the object path
        (`logfiles.records_of_batch`) and held as rows, made a record batch (`_flush`) once `_CHUNK`
        rows are held, so few decoded bodies are alive at once."""
        c = self._rows
        for r in records_of_batch(batch, redact=redact):
            c["offset"].append(r.offset)
            c["timestamp"].append(r.timestamp)
            c["epoch"].append(r.epoch)
            c["control"].append(r.control)
            c["record_type"].append(r.type)
            c["api_key"].append(r.api_key)
            c["version"].append(r.version)
            c["data"].append(None if r.data is None else to_json(r.data))
            c["value"].append(r.value)
            c["error"].append(r.error)
            c["batch_base_offset"].append(batch.base_offset)
            c["byte_position"].append(batch.position)
            c["batch_crc"].append(batch.crc)
            c[fields.COLUMN].append(fields.typed(r.type, r.data))
        if len(c["offset"]) >= _CHUNK:  # few decoded bodies alive at once (`fields` holds them)
            self._flush()

    def add_noop_run(self, run: np.ndarray, first_position: int) -> None:
        """A run of intact NoOp batches (`_noop_run`) as one record batch, its columns made from the
        run's arrays and constants, with no Python object per record. The rows held are flushed
        first, so the record batches stay in log order."""
        self._flush()
        k = len(run)
        base = pa.array(run["base"].astype(np.int64))
        const = {"control": False, "record_type": NO_OP_RECORD, "api_key": 20, "version": 0,
                 "data": "{}", "value": _NOOP_VALUE, "error": None}
        arrays = {
            "offset": base, "batch_base_offset": base,
            "batch_crc": pa.array(run["crc"].astype(np.int64)),
            "timestamp": pa.array(run["max_ts"].astype(np.int64)),
            "epoch": pa.array(run["epoch"].astype(np.int32)),
            "byte_position": pa.array(np.arange(first_position, first_position
                                                + k * _NOOP_SIZE, _NOOP_SIZE, dtype=np.int64)),
            # no field silver reads; a null struct repeated from a scalar took 20x as long
            fields.COLUMN: pa.nulls(k, fields.TYPE),
        }
        self.batches.append(pa.RecordBatch.from_arrays(
            [arrays[f.name] if f.name in arrays else pa.repeat(pa.scalar(const[f.name], f.type),
                                                                 k) for f in SCHEMA],
            schema=SCHEMA))


def _noop_run(buf: bytes, pos: int) -> np.ndarray | None:
    """The longest run of intact NoOp batches starting at `pos`, or None if there is none."""
    if (buf[pos + 8:pos + 12] != _NOOP_LENGTH
            or buf[pos + 61:pos + _NOOP_SIZE] != _NOOP_RECORD):
        return None
    runs = []
    while True:
        count = min(_CHUNK, (len(buf) - pos) // _NOOP_SIZE)
        if count == 0:
            break
        arr = np.frombuffer(buf, _NOOP_BATCH, count=count, offset=pos)
        ok = ((arr["length"] == _NOOP_SIZE - 12) & (arr["magic"] == 2)
              & (arr["attributes"] == 0) & (arr["last_delta"] == 0) & (arr["count"] == 1)
              & (arr["record"] == np.void(_NOOP_RECORD)))
        k = count if ok.all() else int(np.argmin(ok))
        crcs = arr["crc"][:k].tolist()
        for i in range(k):  # the CRC is the one check numpy cannot do for us
            p = pos + i * _NOOP_SIZE
            if crc32c(buf[p + CRC_START:p + _NOOP_SIZE]) != crcs[i]:
                k = i
                break
        runs.append(arr[:k])
        pos += k * _NOOP_SIZE
        if k < count:
            break
    run = np.concatenate(runs) if len(runs) > 1 else runs[0] if runs else None
    return run if run is not None and len(run) else None


def decode_columns(buf: bytes, source: str = "", *, redact: bool = True) -> Columns:
    """Every record of a file's bytes as columns, in log order; damage goes to `problems`."""
    out = Columns()
    pos = 0
    n = len(buf)
    while pos < n:
        if n - pos >= _NOOP_SIZE:
            run = _noop_run(buf, pos)
            if run is not None:
                out.add_noop_run(run, pos)
                pos += len(run) * _NOOP_SIZE
                continue
        item, pos = next_item(buf, pos, source)
        if item is None:
            break
        if isinstance(item, Problem):
            out.problems.append(item)
        else:
            out.add_batch(item, redact=redact)
    return out
