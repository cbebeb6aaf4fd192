"""Test helpers for the codec: re-encoding whole files from their decoded records."""

from __future__ import annotations

from kraftlake.codec.batch import Batch, Problem, RawRecord, encode_batch, scan_batches
from kraftlake.codec.logfiles import records_of_batch
from kraftlake.codec.records import Record, encode_control_value, encode_metadata_value


def encode_record_value(record: Record) -> bytes:
    """The value bytes of a decoded record: the exact inverse of decoding it.

    Undecodable records have no data to encode from; their raw value is returned as kept.
    """
    if record.data is None:
        if record.value is None:
            raise ValueError(f"record at offset {record.offset} has neither data nor value")
        return record.value
    if record.control:
        return encode_control_value(record.type, record.data)
    return encode_metadata_value(record.type, record.version, record.data)


def reencode_batch(batch: Batch) -> bytes:
    """Decode every record of `batch` and encode the batch again from the decoded values."""
    records = records_of_batch(batch, redact=False)
    raws = [RawRecord(raw.offset_delta, encode_record_value(rec), raw.key, raw.timestamp_delta,
                      raw.attributes, raw.headers)
            for raw, rec in zip(batch.records, records, strict=True)]
    clone = Batch(batch.base_offset, batch.partition_leader_epoch, batch.attributes,
                  batch.last_offset_delta, batch.base_timestamp, batch.max_timestamp, raws,
                  batch.producer_id, batch.producer_epoch, batch.base_sequence)
    return encode_batch(clone)


def reencode_file(buf: bytes) -> tuple[bytes, int, list[Problem]]:
    """(re-encoded bytes of every good batch, byte where the last good batch ends, problems)."""
    out = bytearray()
    end = 0
    problems: list[Problem] = []
    for item in scan_batches(buf):
        if isinstance(item, Problem):
            problems.append(item)
            continue
        out += reencode_batch(item)
        end = item.position + item.size
    return bytes(out), end, problems
