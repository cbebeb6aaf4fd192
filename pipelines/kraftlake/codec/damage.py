"""What a damaged region of a log could have held, read from its bytes without trusting them.

A region `scan_batches` could not read (a `Problem`) is quarantined either way; what matters
downstream is whether state was lost with it. A controller's log is mostly NoOp heartbeats:
losing one changes nothing. Losing a batch of partition changes leaves every later state
of the cluster's partitions unknown until something re-anchors them (a PartitionRecord or
a snapshot), and the fold must say so instead of carrying the last known state across.

So a region is *harmless* only when it is one whole batch whose framing still parses and
every record of it is a NoOp, or when it is a control batch (Raft's own markers: leader
changes, snapshot header and footer, voters; no partition, broker, topic or config state).
Anything else (a header that cannot be read, records that do not parse, a region spanning
several batches, any other record type) may have held state, which is the safe answer.
The header's offsets and time are used as hints even though the CRC failed: they say which
offsets are unknown and when.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..kraft.records import NO_OP_RECORD
from . import compression
from .batch import (
    ATTR_COMPRESSION,
    ATTR_CONTROL,
    HEADER,
    HEADER_SIZE,
    LOG_OVERHEAD,
    MIN_BATCH_LENGTH,
    _parse_records,
)
from .errors import KraftCodecError
from .records import decode_metadata_value


@dataclass(frozen=True, slots=True)
class Damage:
    """What a damaged region's header says, and whether state may have been lost with it."""

    state_unknown: bool  # the region may have held records that change state
    next_offset: int | None  # one past the last offset the header claims (None: unreadable)
    timestamp_ms: int | None  # the header's max timestamp (None: unreadable)


def assess(raw: bytes) -> Damage:
    """`Damage` of the bytes of one quarantined region (a `Problem`'s `raw`)."""
    if len(raw) < HEADER_SIZE:
        return Damage(True, None, None)
    (base, length, _epoch, magic, _crc, attributes, last_delta, _base_ts, max_ts, _pid,
     _pepoch, _bseq, count) = HEADER.unpack_from(raw, 0)
    if magic != 2 or length < MIN_BATCH_LENGTH or LOG_OVERHEAD + length != len(raw) \
            or last_delta < 0 or count < 0:
        return Damage(True, None, None)  # not one batch whose header can be believed
    nxt, ts = base + last_delta + 1, max_ts
    if attributes & ATTR_CONTROL:
        return Damage(False, nxt, ts)
    return Damage(not _only_noops(raw[HEADER_SIZE:], attributes, count), nxt, ts)


def _only_noops(section: bytes, attributes: int, count: int) -> bool:
    """Every record of a batch's records section decodes as a NoOpRecord."""
    try:
        codec = attributes & ATTR_COMPRESSION
        records = _parse_records(
            compression.decompress(codec, section) if codec else section, count)
    except KraftCodecError:
        return False
    return bool(records) and all(decode_metadata_value(r.value).type == NO_OP_RECORD
                                 for r in records)
