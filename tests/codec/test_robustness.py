"""Damaged input: reported with file and byte position, reading goes on, nothing else raises."""

from __future__ import annotations

import struct
from functools import cache

from crc32c import crc32c
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kraftlake.codec.batch import Batch, Problem, encode_batch, scan_batches
from kraftlake.codec.logfiles import records_of_batch
from tests.conftest import real

SEGMENT = real("vasifvortex__azercell_docker_project2/data/kafka1/__cluster_metadata-0"
               "/00000000000000000000.log")  # 19 batches, 153 records, 3 brokers, PCR-heavy


@cache
def segment() -> bytes:
    return SEGMENT.read_bytes()


@cache
def good_batches() -> list[Batch]:
    return [b for b in scan_batches(segment()) if isinstance(b, Batch)]


def split(items: list[Batch | Problem]) -> tuple[list[Batch], list[Problem]]:
    return ([i for i in items if isinstance(i, Batch)],
            [i for i in items if isinstance(i, Problem)])


def test_partly_written_last_batch_stops_cleanly_and_says_where() -> None:
    buf = segment()
    last = good_batches()[-1]
    cut = last.position + last.size // 2
    batches, problems = split(list(scan_batches(buf[:cut], "seg.log")))
    assert len(batches) == len(good_batches()) - 1
    assert len(problems) == 1
    p = problems[0]
    assert (p.kind, p.position, p.base_offset) == ("truncated", last.position, last.base_offset)
    assert f"last complete batch ends at byte {last.position}" in p.message
    assert str(p).startswith("seg.log at byte ")
    assert p.raw == buf[last.position:cut]  # kept for quarantine


def test_a_file_that_ends_inside_the_first_batch_header_is_one_truncated_problem() -> None:
    batches, problems = split(list(scan_batches(segment()[:40], "seg.log")))
    assert batches == []
    assert [(p.kind, p.position, p.base_offset) for p in problems] == [("truncated", 0, 0)]
    assert "file ends inside a batch header (40 of 61 bytes)" in problems[0].message


def test_bad_crc_is_reported_and_the_next_batch_is_read() -> None:
    buf = bytearray(segment())
    victim = good_batches()[5]
    buf[victim.position + 70] ^= 0x01  # a bit inside its records
    batches, problems = split(list(scan_batches(bytes(buf), "seg.log")))
    assert [(p.kind, p.position, p.base_offset) for p in problems] == \
        [("crc", victim.position, victim.base_offset)]
    assert [b.base_offset for b in batches] == \
        [b.base_offset for b in good_batches() if b is not victim]


def test_bad_magic_is_reported_and_skipped() -> None:
    buf = bytearray(segment())
    victim = good_batches()[3]
    buf[victim.position + 16] = 1
    batches, problems = split(list(scan_batches(bytes(buf))))
    assert [(p.kind, p.position) for p in problems] == [("magic", victim.position)]
    assert len(batches) == len(good_batches()) - 1


def test_impossible_length_resynchronises_at_the_next_valid_batch() -> None:
    buf = bytearray(segment())
    victim, following = good_batches()[7], good_batches()[8]
    buf[victim.position + 8:victim.position + 12] = struct.pack(">i", 7)
    batches, problems = split(list(scan_batches(bytes(buf))))
    assert [(p.kind, p.position) for p in problems] == [("length", victim.position)]
    assert problems[0].raw == bytes(buf[victim.position:following.position])
    assert [b.base_offset for b in batches] == \
        [b.base_offset for b in good_batches() if b is not victim]


def test_length_running_past_the_end_mid_file_is_damage_not_a_tail() -> None:
    buf = bytearray(segment())
    victim = good_batches()[2]
    buf[victim.position + 8:victim.position + 12] = struct.pack(">i", 10_000_000)
    batches, problems = split(list(scan_batches(bytes(buf))))
    assert [(p.kind, p.position) for p in problems] == [("length", victim.position)]
    assert len(batches) == len(good_batches()) - 1


def test_zero_length_file_and_zero_filled_tail_are_quietly_empty() -> None:
    assert list(scan_batches(b"")) == []
    padded = segment() + bytes(4096)
    batches, problems = split(list(scan_batches(padded)))
    assert problems == [] and len(batches) == len(good_batches())
    assert list(scan_batches(bytes(5))) == []


def test_records_that_do_not_fit_their_batch_are_reported() -> None:
    b = good_batches()[0]
    b2 = Batch(b.base_offset, b.partition_leader_epoch, b.attributes, b.last_offset_delta,
               b.base_timestamp, b.max_timestamp, b.records)
    raw = bytearray(encode_batch(b2))
    raw[57:61] = struct.pack(">i", len(b.records) + 1)  # declare one record more
    raw[17:21] = struct.pack(">I", crc32c(bytes(raw[21:])))
    _, problems = split(list(scan_batches(bytes(raw))))
    assert [p.kind for p in problems] == ["records"]
    assert "ends inside a record" in problems[0].message


def _check_scan(buf: bytes) -> None:
    """The fuzzing oracle: only Batches and Problems come out, in order, and they are sane."""
    last_end = 0
    for item in scan_batches(buf, "fuzz"):
        assert isinstance(item, Batch | Problem)
        assert item.position >= last_end
        if isinstance(item, Batch):
            last_end = item.position + item.size
            for r in records_of_batch(item):
                assert r.data is not None or r.error
        else:
            assert item.message
            last_end = item.position + 1


FUZZ = settings(max_examples=150, deadline=2000, suppress_health_check=[HealthCheck.too_slow])


@FUZZ
@given(st.lists(st.tuples(st.integers(0, 10**9), st.integers(0, 7)), min_size=1, max_size=8))
def test_fuzz_bit_flips_in_a_real_segment(flips: list[tuple[int, int]]) -> None:
    buf = bytearray(segment())
    for pos, bit in flips:
        buf[pos % len(buf)] ^= 1 << bit
    _check_scan(bytes(buf))


@FUZZ
@given(st.integers(0, 10**9))
def test_fuzz_truncation_of_a_real_segment(cut: int) -> None:
    buf = segment()
    cut %= len(buf) + 1
    items = list(scan_batches(buf[:cut]))
    _check_scan(buf[:cut])
    batches, problems = split(items)
    assert all(b.position + b.size <= cut for b in batches)
    assert len(problems) <= 1 and all(p.kind == "truncated" for p in problems)


@FUZZ
@given(st.integers(0, 10**9), st.integers(0, 10**9), st.integers(0, 10**9),
       st.integers(1, 400))
def test_fuzz_splices_of_real_segments(a: int, b: int, c: int, n: int) -> None:
    """Paste a random slice of the segment at a random place (a torn or mis-copied write)."""
    buf = segment()
    a, b = a % len(buf), b % len(buf)
    piece = buf[b:b + n]
    spliced = buf[:a] + piece + buf[(a + c % 300) % len(buf):]
    _check_scan(spliced)


@FUZZ
@given(st.binary(max_size=2000))
def test_fuzz_random_bytes_never_raise_foreign_errors(blob: bytes) -> None:
    _check_scan(blob)
