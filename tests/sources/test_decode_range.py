"""The ingest's decode step (`sources.decode.read_range`, columnar) == the object decoder.

Rows of a range are compared field by field with `codec.logfiles.records_of_batch` on real
segments and snapshots, with an offset window, and on a damaged segment: the fast path
(NoOp runs as numpy columns, orjson) must not change a single value the tasks produce.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kraftlake.codec.batch import Batch, scan_batches
from kraftlake.codec.logfiles import classify, records_of_batch
from kraftlake.sources.decode import read_range
from kraftlake.sources.files import ReadRange
from tests.conftest import real_files, rel

SEGMENTS = sorted(real_files("segment"), key=lambda p: p.stat().st_size)[-4:]
SNAPSHOTS = real_files("snapshot")[:6]


def _rows(r: ReadRange) -> list[dict]:
    return [row for b in read_range(r) for row in b.to_pylist()]


def _expected(path: Path, *, lo: int = 0, hi: int = 2**63 - 1, snapshot_end: int = -1
              ) -> list[tuple]:
    out = []
    for b in scan_batches(path.read_bytes(), path.name):
        if not isinstance(b, Batch):
            continue
        for rec in records_of_batch(b):
            if snapshot_end < 0 and not lo <= rec.offset < hi:
                continue
            out.append((snapshot_end - 1 if snapshot_end >= 0 else rec.offset, rec.offset,
                        b.base_offset, b.partition_leader_epoch, rec.timestamp, rec.control,
                        rec.type, rec.api_key, rec.version, rec.data, rec.value, rec.error,
                        b.position))
    return out


def _got(rows: list[dict]) -> list[tuple]:
    return [(x["offset"], x["position"], x["batch_base_offset"], x["epoch"],
             int(x["timestamp"].timestamp() * 1000), x["control"], x["record_type"],
             x["api_key"], x["version"], None if x["data"] is None else json.loads(x["data"]),
             x["value"], x["error"], x["byte_position"]) for x in rows]


@pytest.mark.parametrize("path", SEGMENTS, ids=rel)
def test_segment_rows_equal_objects(path: Path) -> None:
    rows = _rows(ReadRange("c", str(path), "segment", note="rolled"))
    assert {x["row_kind"] for x in rows} == {"record"}
    assert {(x["cluster_id"], x["source"], x["source_file"]) for x in rows} == {
        ("c", "log", path.name)}
    assert _got(rows) == _expected(path)


def test_offset_window_keeps_only_its_records() -> None:
    path = SEGMENTS[-1]
    first = classify(path).offset  # type: ignore[union-attr]
    lo, hi = first + 1000, first + 1500
    rows = _rows(ReadRange("c", str(path), "segment", lo=lo, hi=hi, note="rolled"))
    assert [x["offset"] for x in rows] == list(range(lo, hi))
    assert _got(rows) == _expected(path, lo=lo, hi=hi)


@pytest.mark.parametrize("path", SNAPSHOTS, ids=rel)
def test_snapshot_rows_carry_the_last_contained_offset(path: Path) -> None:
    end = classify(path).offset  # type: ignore[union-attr]
    rows = _rows(ReadRange("c", str(path), "snapshot", snapshot_end=end,
                           snapshot_role="check"))
    assert {(x["source"], x["snapshot_end_offset"], x["snapshot_role"]) for x in rows} == {
        ("snapshot", end, "check")}
    assert _got(rows) == _expected(path, snapshot_end=end)


def test_damage_becomes_a_problem_row_and_reading_goes_on(tmp_path: Path) -> None:
    src = SEGMENTS[-1]
    buf = bytearray(src.read_bytes())
    batches = [b for b in scan_batches(bytes(buf)) if isinstance(b, Batch)]
    victim = batches[len(batches) // 2]
    buf[victim.position + 40] ^= 0x10  # only the CRC notices
    path = tmp_path / src.name
    path.write_bytes(bytes(buf))
    rows = _rows(ReadRange("c", str(path), "segment", start=0, note="rolled"))
    problems = [x for x in rows if x["row_kind"] == "problem"]
    assert [(x["problem_kind"], x["byte_position"]) for x in problems] == [
        ("crc", victim.position)]
    records = [x for x in rows if x["row_kind"] == "record"]
    want = sum(len(records_of_batch(b)) for b in batches if b is not victim)
    assert len(records) == want
