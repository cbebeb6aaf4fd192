"""RecordBatch v2: the framing of segment files, snapshots and bootstrap.checkpoint.

`scan_batches` walks a buffer and yields every batch it can trust and a `Problem` for every
region it cannot (bad CRC, bad magic, impossible length, records that do not parse, a partly
written last batch). Damaged regions are skipped, not fatal: when a batch's length is
plausible the scan resumes right after it, otherwise it searches forward for the next
position that holds a batch with a valid CRC. The raw bytes of every skipped region travel
with its Problem so callers can quarantine them.
"""

from __future__ import annotations

import struct
from collections.abc import Iterator
from dataclasses import dataclass, field

from crc32c import crc32c

from . import compression
from .errors import CorruptBatchError
from .wire import read_varint, write_varint

HEADER = struct.Struct(">qiibIhiqqqhii")  # 61 bytes, DefaultRecordBatch v2
LOG_OVERHEAD = 12  # baseOffset + batchLength
HEADER_SIZE = HEADER.size
CRC_START = 21  # the CRC covers attributes .. end of batch
MIN_BATCH_LENGTH = HEADER_SIZE - LOG_OVERHEAD  # 49
MAX_BATCH_LENGTH = 64 * 1024 * 1024  # KRaft caps batches at 8 MiB; beyond 64 MiB is garbage

ATTR_COMPRESSION = 0x07
ATTR_TIMESTAMP_TYPE = 0x08
ATTR_TRANSACTIONAL = 0x10
ATTR_CONTROL = 0x20
ATTR_DELETE_HORIZON = 0x40

NO_PRODUCER_ID = -1


@dataclass(slots=True)
class RawRecord:
    """One record of a batch, as framed on disk (value still undecoded)."""

    offset_delta: int
    value: bytes | None
    key: bytes | None = None
    timestamp_delta: int = 0
    attributes: int = 0
    headers: list[tuple[str, bytes | None]] = field(default_factory=list)


@dataclass(slots=True)
class Batch:
    base_offset: int
    partition_leader_epoch: int
    attributes: int
    last_offset_delta: int
    base_timestamp: int
    max_timestamp: int
    records: list[RawRecord]
    producer_id: int = NO_PRODUCER_ID
    producer_epoch: int = -1
    base_sequence: int = -1
    magic: int = 2
    crc: int = 0
    position: int = 0  # byte position of the batch in its file
    size: int = 0  # bytes on disk, including the 12-byte log overhead

    @property
    def compression(self) -> int:
        return self.attributes & ATTR_COMPRESSION

    @property
    def is_control(self) -> bool:
        return bool(self.attributes & ATTR_CONTROL)

    @property
    def is_transactional(self) -> bool:
        return bool(self.attributes & ATTR_TRANSACTIONAL)

    @property
    def last_offset(self) -> int:
        return self.base_offset + self.last_offset_delta

    @property
    def next_offset(self) -> int:
        return self.last_offset + 1


@dataclass(frozen=True, slots=True)
class Problem:
    """A region of a file that could not be read as batches, and why."""

    source: str
    position: int
    kind: str  # crc | magic | length | records | compression | truncated
    message: str
    base_offset: int | None = None
    raw: bytes = b""

    def __str__(self) -> str:
        where = f"{self.source or '<bytes>'} at byte {self.position}"
        off = f" (batch base offset {self.base_offset})" if self.base_offset is not None else ""
        return f"{where}{off}: {self.message}"


def waiting_note(where: str, offset: int | None, size: int) -> str:
    """What is said of a log whose last segment ends inside a batch: normal for a live log
    (Kafka is writing that batch) and for a copy taken meanwhile, so no error, but the
    user must know that those bytes are not read yet (a later run reads them complete)."""
    at = "" if offset is None else f"from offset {offset} "
    return (f"{where}: {size} byte(s) {at}wait for the rest of their batch (the last "
            f"segment ends inside it); a later run reads it once it is complete")


# ---------------------------------------------------------------- reading


def _varint(data: bytes, pos: int) -> tuple[int, int]:
    """Zigzag varint with the one-byte case inline (record framing is nearly all one-byte)."""
    b = data[pos]
    if b < 0x80:
        return (b >> 1) ^ -(b & 1), pos + 1
    return read_varint(data, pos)


def _parse_records(data: bytes, count: int) -> list[RawRecord]:
    """Parse `count` records from an (uncompressed) records section; it must fit exactly."""
    records: list[RawRecord] = []
    pos = 0
    end_all = len(data)
    try:
        for _ in range(count):
            length, pos = _varint(data, pos)
            if length < 0 or pos + length > end_all:
                raise CorruptBatchError(f"record length {length} runs past the batch")
            end = pos + length
            attributes = data[pos]
            ts_delta, pos = _varint(data, pos + 1)
            off_delta, pos = _varint(data, pos)
            klen, pos = _varint(data, pos)
            key = None
            if klen >= 0:
                key = data[pos:pos + klen]
                pos += klen
            vlen, pos = _varint(data, pos)
            value = None
            if vlen >= 0:
                value = data[pos:pos + vlen]
                pos += vlen
            nh, pos = _varint(data, pos)
            headers: list[tuple[str, bytes | None]] = []
            if nh:
                if nh < 0:
                    raise CorruptBatchError(f"negative header count {nh}")
                for _h in range(nh):
                    hk, pos = _varint(data, pos)
                    if hk < 0:
                        raise CorruptBatchError("null header key")
                    hkey = data[pos:pos + hk].decode("utf-8", "replace")
                    pos += hk
                    hv, pos = _varint(data, pos)
                    hval = None
                    if hv >= 0:
                        hval = data[pos:pos + hv]
                        pos += hv
                    headers.append((hkey, hval))
            if pos != end:
                raise CorruptBatchError(
                    f"record declares {length} bytes but its fields span {length + pos - end}")
            records.append(RawRecord(off_delta, value, key, ts_delta, attributes, headers))
    except IndexError:
        raise CorruptBatchError("records section ends inside a record") from None
    if pos != end_all:
        raise CorruptBatchError(f"{end_all - pos} bytes left after the last declared record")
    return records


def _looks_like_batch_at(buf: bytes, pos: int) -> bool:
    """True if a complete batch with a valid CRC starts at `pos` (used to resynchronise)."""
    if pos < 0 or pos + HEADER_SIZE > len(buf) or buf[pos + 16] != 2:
        return False
    length: int = struct.unpack_from(">i", buf, pos + 8)[0]
    end = pos + LOG_OVERHEAD + length
    if length < MIN_BATCH_LENGTH or end > len(buf):
        return False
    crc: int = struct.unpack_from(">I", buf, pos + 17)[0]
    return crc32c(buf[pos + CRC_START:end]) == crc


def _resync(buf: bytes, start: int) -> int:
    """Next position >= start where a valid batch begins, or len(buf) if there is none."""
    pos = start
    while True:
        idx = buf.find(b"\x02", pos + 16)
        if idx < 0:
            return len(buf)
        cand = idx - 16
        if _looks_like_batch_at(buf, cand):
            return cand
        pos = cand + 1


def plausible_batch_start(buf: bytes) -> bool:
    """Could `buf` be the beginning of a record batch (even one cut short)?"""
    if len(buf) < 17 or buf[16] != 2:
        return False
    length: int = struct.unpack_from(">i", buf, 8)[0]
    return MIN_BATCH_LENGTH <= length <= MAX_BATCH_LENGTH


def _is_zero(buf: bytes, start: int) -> bool:
    return buf.count(0, start) == len(buf) - start


def scan_batches(buf: bytes, source: str = "") -> Iterator[Batch | Problem]:
    """Yield the batches of a file's bytes in order, and a Problem for each damaged region.

    A file that ends inside a batch (the active segment being written) ends with a Problem
    of kind "truncated" that says where the last complete batch ends. A zero-filled tail
    (preallocated segment) ends the scan silently.
    """
    pos = 0
    while True:
        item, pos = next_item(buf, pos, source)
        if item is None:
            return
        yield item


def next_item(buf: bytes, pos: int, source: str = "") -> tuple[Batch | Problem | None, int]:
    """The batch or damaged region at `pos` and where the next one starts; None at the end."""
    n = len(buf)
    remaining = n - pos
    if remaining <= 0:
        return None, n
    if remaining < HEADER_SIZE:
        if _is_zero(buf, pos):
            return None, n
        base = struct.unpack_from(">q", buf, pos)[0] if remaining >= 8 else None
        return Problem(source, pos, "truncated",
                       f"file ends inside a batch header ({remaining} of {HEADER_SIZE} "
                       f"bytes); last complete batch ends at byte {pos}",
                       base, bytes(buf[pos:])), n
    (base_offset, length, epoch, magic, crc, attributes, last_delta, base_ts, max_ts,
     pid, pepoch, bseq, count) = HEADER.unpack_from(buf, pos)
    if length == 0 and _is_zero(buf, pos):
        return None, n  # zero-filled (preallocated) tail
    end = pos + LOG_OVERHEAD + length
    if length < MIN_BATCH_LENGTH or length > MAX_BATCH_LENGTH:
        nxt = _resync(buf, pos + 1)
        return Problem(source, pos, "length", f"impossible batch length {length}",
                       base_offset, bytes(buf[pos:nxt])), nxt
    if end > n:
        nxt = _resync(buf, pos + 1)
        if nxt < n:  # a valid batch follows: the length field itself is damaged
            return Problem(source, pos, "length",
                           f"batch length {length} runs past the end of the file",
                           base_offset, bytes(buf[pos:nxt])), nxt
        return Problem(source, pos, "truncated",
                       f"file ends inside the batch at base offset {base_offset} "
                       f"({n - pos} of {LOG_OVERHEAD + length} bytes); last complete batch "
                       f"ends at byte {pos}", base_offset, bytes(buf[pos:])), n
    if magic != 2:
        return Problem(source, pos, "magic", f"magic byte {magic}, expected 2",
                       base_offset, bytes(buf[pos:end])), end
    computed = crc32c(buf[pos + CRC_START:end])
    if computed != crc:
        return Problem(source, pos, "crc",
                       f"CRC-32C mismatch (stored {crc:#010x}, computed {computed:#010x})",
                       base_offset, bytes(buf[pos:end])), end
    data = buf[pos + HEADER_SIZE:end]
    codec = attributes & ATTR_COMPRESSION
    cached = _small_sections.get(data) if not codec and count == 1 else None
    if cached is not None:
        records = [cached]
    else:
        try:
            if count < 0 or last_delta < 0:
                raise CorruptBatchError(
                    f"negative record count {count} or last offset delta {last_delta}")
            if codec:
                data = compression.decompress(codec, data)
            records = _parse_records(data, count)
        except CorruptBatchError as exc:
            return Problem(source, pos, "records", str(exc), base_offset,
                           bytes(buf[pos:end])), end
        if not codec and count == 1 and len(data) <= _SMALL_SECTION:
            _small_sections[data] = records[0]
    return Batch(base_offset, epoch, attributes, last_delta, base_ts, max_ts, records,
                 pid, pepoch, bseq, magic, crc, pos, end - pos), end


# One-record batches whose records section is a few bytes long (the controller's NoOp
# heartbeat, above all) are byte-identical by the thousand: parse each distinct one once.
# RawRecord objects are shared between batches and must be treated as read-only.
_SMALL_SECTION = 24
_small_sections: dict[bytes, RawRecord] = {}


# ---------------------------------------------------------------- writing


def _encode_records(records: list[RawRecord]) -> bytes:
    if len(records) == 1:  # the controller's heartbeat batches: encode each distinct one once
        r = records[0]
        if (r.key is None and not r.headers and r.value is not None
                and len(r.value) <= _SMALL_SECTION):
            k = (r.value, r.offset_delta, r.timestamp_delta, r.attributes)
            hit = _encoded_sections.get(k)
            if hit is None:
                hit = _encoded_sections[k] = _encode_records_uncached(records)
            return hit
    return _encode_records_uncached(records)


_encoded_sections: dict[tuple[bytes, int, int, int], bytes] = {}


def _encode_records_uncached(records: list[RawRecord]) -> bytes:
    out = bytearray()
    for r in records:
        body = bytearray()
        body.append(r.attributes)
        write_varint(body, r.timestamp_delta)
        write_varint(body, r.offset_delta)
        if r.key is None:
            write_varint(body, -1)
        else:
            write_varint(body, len(r.key))
            body += r.key
        if r.value is None:
            write_varint(body, -1)
        else:
            write_varint(body, len(r.value))
            body += r.value
        write_varint(body, len(r.headers))
        for hk, hv in r.headers:
            raw = hk.encode("utf-8")
            write_varint(body, len(raw))
            body += raw
            if hv is None:
                write_varint(body, -1)
            else:
                write_varint(body, len(hv))
                body += hv
        write_varint(out, len(body))
        out += body
    return bytes(out)


def encode_batch(batch: Batch) -> bytes:
    """Serialise a batch with a freshly computed CRC (compressing if its attributes say so)."""
    data = _encode_records(batch.records)
    if batch.compression:
        data = compression.compress(batch.compression, data)
    body = struct.pack(">hiqqqhii", batch.attributes, batch.last_offset_delta,
                       batch.base_timestamp, batch.max_timestamp, batch.producer_id,
                       batch.producer_epoch, batch.base_sequence, len(batch.records)) + data
    crc = crc32c(body)
    length = len(body) + 9  # epoch (4) + magic (1) + crc (4)
    return struct.pack(">qiibI", batch.base_offset, length, batch.partition_leader_epoch,
                       batch.magic, crc) + body


def build_batch(base_offset: int, epoch: int, timestamp: int, values: list[bytes],
                *, control_keys: list[bytes] | None = None, codec: int = 0) -> Batch:
    """A batch as KRaft writes it: create time, no producer, one record per value.

    Data batches have null keys; control batches carry each record's control key.
    """
    attrs = codec | (ATTR_CONTROL if control_keys is not None else 0)
    keys = control_keys if control_keys is not None else [None] * len(values)
    records = [RawRecord(i, v, k) for i, (k, v) in enumerate(zip(keys, values, strict=True))]
    return Batch(base_offset, epoch, attrs, len(values) - 1, timestamp, timestamp, records)
