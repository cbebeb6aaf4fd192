"""The columnar decoder (NoOp runs in numpy) yields exactly what the object decoder yields."""

from __future__ import annotations

from pathlib import Path

import pytest

from kraftlake.codec.batch import Batch, scan_batches
from kraftlake.codec.columnar import decode_columns
from kraftlake.codec.logfiles import records_of_batch
from kraftlake.codec.records import to_json
from tests.conftest import real, real_files, rel

FILES = real_files("segment") + real_files("snapshot") + real_files("bootstrap")


def _expected(buf: bytes) -> list[tuple]:
    rows = []
    for b in scan_batches(buf):
        if isinstance(b, Batch):
            for r in records_of_batch(b):
                rows.append((r.offset, r.timestamp, r.epoch, r.control, r.type, r.api_key,
                             r.version, None if r.data is None else to_json(r.data), r.value,
                             r.error, b.base_offset, b.position, b.crc))
    return rows


@pytest.mark.parametrize("path", FILES, ids=rel)
def test_columns_equal_objects_on_real_files(path: Path) -> None:
    buf = path.read_bytes()
    got = decode_columns(buf, str(path))
    table = got.table
    assert got.problems == []
    # `fields`, made from the same decoded values, is held to `data` by test_fields
    assert [tuple(row.values()) for row in table.drop_columns(["fields"]).to_pylist()] == \
        _expected(buf)


def test_a_damaged_noop_inside_a_run_is_reported_and_the_run_goes_on() -> None:
    path = real("IndusWargods__local-test-rig/kafka-data/__cluster_metadata-0"
                "/00000000000000000000.log")  # 51,264 records, 51,223 of them NoOps
    buf = bytearray(path.read_bytes())
    noop_batches = [b for b in scan_batches(bytes(buf)) if isinstance(b, Batch)
                    and records_of_batch(b)[0].type == "NoOpRecord"]
    victim = noop_batches[20_000]
    buf[victim.position + 40] ^= 0x10  # inside its timestamp: only the CRC notices
    got = decode_columns(bytes(buf), "seg")
    assert [(p.kind, p.position) for p in got.problems] == [("crc", victim.position)]
    offsets = got.table.column("offset").to_pylist()
    assert victim.base_offset not in offsets
    assert len(offsets) == 51264 - 1
    assert offsets == sorted(offsets)


def test_truncated_tail_after_a_noop_run() -> None:
    path = real("ogs59__docker-compose-kafka4.10/data/kafka-1/__cluster_metadata-0"
                "/00000000000000000000.log")  # ends with a run of NoOp batches
    buf = path.read_bytes()
    got = decode_columns(buf[:-30], "seg")
    assert [p.kind for p in got.problems] == ["truncated"]
    assert got.table.num_rows == 31933 - 1
