"""Decode -> encode gives back the exact bytes of every real segment, snapshot and bootstrap."""

from __future__ import annotations

from pathlib import Path

import pytest

from kraftlake.codec import compression
from kraftlake.codec.batch import Batch, Problem, encode_batch, scan_batches
from kraftlake.codec.logfiles import records_of_batch
from tests.codec.helpers import reencode_file
from tests.conftest import ROOTS, inventory, real, real_files, rel

ALL_REAL = real_files("segment") + real_files("snapshot") + real_files("bootstrap")


def test_every_kind_of_real_file_is_present() -> None:
    """The files found of each kind are those the INVENTORY.md of the corpus (and of the
    extension, when present) lists: none missed, none unlisted."""
    for kind in ("segment", "snapshot", "bootstrap"):
        listed = {cells[0] for root in ROOTS for cells in inventory(root) if cells[1] == kind}
        assert listed
        assert {rel(p) for p in real_files(kind)} == listed, kind


@pytest.mark.parametrize("path", ALL_REAL, ids=rel)
def test_real_file_round_trips_byte_for_byte(path: Path) -> None:
    buf = path.read_bytes()
    out, end, problems = reencode_file(buf)
    assert problems == []
    assert end == len(buf)
    assert out == buf


def test_round_trip_of_a_file_cut_mid_batch_is_identical_up_to_the_last_complete_batch() -> None:
    path = real("ogs59__docker-compose-kafka4.10/data/kafka-1/__cluster_metadata-0"
                "/00000000000000000000.log")
    buf = path.read_bytes()
    batches = [b for b in scan_batches(buf) if isinstance(b, Batch)]
    cut = batches[500].position + 30  # inside the 501st batch's header
    out, end, problems = reencode_file(buf[:cut])
    assert end == batches[500].position
    assert out == buf[:end]
    assert [p.kind for p in problems] == ["truncated"]


@pytest.mark.parametrize("codec", [compression.GZIP, compression.SNAPPY, compression.LZ4,
                                   compression.ZSTD])
def test_every_compression_codec_decodes_to_the_same_records(codec: int) -> None:
    """Kafka never compresses the metadata log, but its reader accepts every codec: so do we."""
    path = real("nomanazeem__Kafka-java/kafka-logs/__cluster_metadata-0/00000000000000000000.log")
    plain = [b for b in scan_batches(path.read_bytes()) if isinstance(b, Batch)]
    squeezed = bytearray()
    for b in plain:
        b.attributes |= codec
        squeezed += encode_batch(b)
        b.attributes &= ~codec
    again = list(scan_batches(bytes(squeezed)))
    assert not [p for p in again if isinstance(p, Problem)]
    assert len(again) == len(plain)
    for a, b in zip(plain, again, strict=True):
        assert isinstance(b, Batch) and b.compression == codec
        assert [r.as_json() for r in records_of_batch(a)] == \
            [r.as_json() for r in records_of_batch(b)]


def test_snappy_uses_kafkas_xerial_framing() -> None:
    framed = compression.compress(compression.SNAPPY, b"kraft" * 20_000)
    assert framed.startswith(b"\x82SNAPPY\x00\x00\x00\x00\x01\x00\x00\x00\x01")
    assert compression.decompress(compression.SNAPPY, framed) == b"kraft" * 20_000
