"""Offsets the input lacks are facts in the lake, as a damaged batch is.

A real 3-broker log (`BUSY`: 188 records in 13 batches, 54 partitions created by offset 67)
copied as Kafka would have rolled it into three segments, the middle one (offsets 68..70,
one PartitionChangeRecord) then lost, as a copy that missed a file; and the same log with
its head gone and no snapshot covering it. Each is ingested by `kraftlake ingest` as a user
would. The truths come from the log's own batch headers.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

from kraftlake.cli import main
from kraftlake.codec.batch import Batch, scan_batches
from kraftlake.lake.delta import Lake
from tests.logs import BUSY

LOST = (8, 11)  # the batches of the missing segment: offsets 68..70


def _batches() -> tuple[bytes, list[Batch]]:
    full = (BUSY / "__cluster_metadata-0" / "00000000000000000000.log").read_bytes()
    return full, [b for b in scan_batches(full) if isinstance(b, Batch)]


def _segmented(dest: Path, keep: list[tuple[int, int]]) -> Path:
    """A copy of `BUSY` whose log is the segments made of batches [i, j) for each (i, j) of
    `keep`, each named by its first offset as Kafka names a segment."""
    shutil.copytree(BUSY, dest)
    log = dest / "__cluster_metadata-0"
    (log / "00000000000000000000.log").unlink()
    full, batches = _batches()
    ends = [b.position for b in batches] + [len(full)]
    for i, j in keep:
        seg = log / f"{batches[i].base_offset:020d}.log"
        seg.write_bytes(full[ends[i]:ends[j]])
    return log


def _ingest(log: Path, lake: Path) -> tuple[int, str]:
    out = CliRunner().invoke(main, ["ingest", str(log), "--lake", str(lake)])
    return out.exit_code, " ".join(out.output.split())


def _rows(spark, lake: Path, table: str) -> list[dict]:
    return [r.asDict() for r in Lake(lake).read(spark, table).collect()]


@pytest.fixture(scope="module")
def missing_segment(spark, tmp_path_factory):
    """(lake, exit status, output, [lo, hi) of the missing segment) of the log without its
    middle segment."""
    base = tmp_path_factory.mktemp("hole")
    _full, batches = _batches()
    log = _segmented(base / "log", [(0, LOST[0]), (LOST[1], len(batches))])
    lo, hi = batches[LOST[0]].base_offset, batches[LOST[1]].base_offset
    code, output = _ingest(log, base / "lake")
    return base / "lake", code, output, (lo, hi)


def test_a_missing_segment_exits_1_naming_the_cluster_and_offsets(spark, missing_segment):
    lake, code, output, (lo, hi) = missing_segment
    [cid] = {r["cluster_id"] for r in _rows(spark, lake, "ingest_progress")}
    assert code == 1
    assert f"Error: {cid}: {hi - lo} offset(s) unknown: offsets [{lo}, {hi})" in output


def test_a_missing_segment_is_a_gap_row_whose_state_is_unknown(spark, missing_segment):
    lake, _code, _out, (lo, hi) = missing_segment
    [q] = _rows(spark, lake, "quarantine")
    assert (q["kind"], q["offset"], q["end_offset"], q["state_unknown"]) == ("gap", lo, hi, True)
    assert "00000000000000000071.log starts at 71" in q["reason"]
    # the offsets around the hole are all in the lake, none inside it
    offsets = {r["offset"] for r in _rows(spark, lake, "records")}
    assert offsets == set(range(188)) - set(range(lo, hi))


def test_partitions_alive_at_the_hole_are_carried_across_it_uncertain(spark, missing_segment):
    lake, _code, _out, (lo, _hi) = missing_segment
    tl = _rows(spark, lake, "partition_timeline")
    alive = {(r["topic_id"], r["partition_id"]) for r in tl if r["valid_from_offset"] < lo}
    assert len(alive) == 54
    gap_rows = [r for r in tl if r["source"] == "gap"]
    assert {(r["topic_id"], r["partition_id"]) for r in gap_rows} == alive
    assert {(r["valid_from_offset"], r["uncertain_since"]) for r in gap_rows} == {(lo, lo)}
    # no snapshot re-anchors them: every state from the hole on stays uncertain
    assert {r["uncertain_since"] for r in tl if r["valid_from_offset"] >= lo} == {lo}
    assert {r["uncertain_since"] for r in _rows(spark, lake, "partition_current")} == {lo}


def test_a_head_lost_without_a_snapshot_is_an_unknown_gap(spark, tmp_path):
    _full, batches = _batches()
    first = 5  # the log starts at offset 7: brokers registered before it, no snapshot
    log = _segmented(tmp_path / "log", [(first, len(batches))])
    start = batches[first].base_offset
    code, output = _ingest(log, tmp_path / "lake")
    assert code == 1
    assert f"{start} offset(s) unknown: offsets [0, {start})" in output
    [q] = _rows(spark, tmp_path / "lake", "quarantine")
    assert (q["kind"], q["offset"], q["end_offset"], q["state_unknown"]) == (
        "gap", 0, start, True)


def _cut(dest: Path, end: int) -> Path:
    """A copy of `BUSY` whose one segment ends at byte `end` (a transfer that stopped)."""
    log = _segmented(dest, [])
    full = _batches()[0]
    (log / "00000000000000000000.log").write_bytes(full[:end])
    return log


def test_a_last_segment_ending_inside_a_batch_waits_for_it(spark, tmp_path):
    full, batches = _batches()
    last = batches[-1]  # offsets 131..187
    log = _cut(tmp_path / "log", last.position + 100)
    code, output = _ingest(log, tmp_path / "lake")
    assert code == 0, output
    assert (f"100 byte(s) from offset {last.base_offset} wait for the rest of their batch"
            in output)
    assert {r["offset"] for r in _rows(spark, tmp_path / "lake", "records")} == set(
        range(last.base_offset))
    (log / "00000000000000000000.log").write_bytes(full)  # the batch is complete now
    code, output = _ingest(log, tmp_path / "lake")
    assert code == 0, output
    assert "wait" not in output
    assert {r["offset"] for r in _rows(spark, tmp_path / "lake", "records")} == set(
        range(last.last_offset + 1))
    assert _rows(spark, tmp_path / "lake", "quarantine") == []


def test_decode_says_the_same_of_a_waiting_batch(tmp_path):
    _full, batches = _batches()
    last = batches[-1]
    log = _cut(tmp_path / "log", last.position + 100)
    out = CliRunner().invoke(main, ["decode", str(log), "--count"])
    assert out.exit_code == 0, out.output
    text = " ".join(out.output.split())
    assert (f"100 byte(s) from offset {last.base_offset} wait for the rest of their batch"
            in text)
    assert "warning" not in text


def test_a_record_failing_a_record_level_check_is_an_unknown_offset(spark, tmp_path):
    """A PartitionChangeRecord whose LeaderRecoveryState is 5 (crafted segment bytes): Kafka
    refuses it and so does silver; the fold never sees it, so its offset is unknown."""
    from tests.quality.crafted import write_log

    log = write_log(tmp_path / "log", "bad_lrs")
    code, output = _ingest(log, tmp_path / "lake")
    assert code == 1, output
    assert "1 offset(s) unknown: offsets [7, 8)" in output
    [q] = _rows(spark, tmp_path / "lake", "quarantine")
    assert (q["kind"], q["offset"], q["end_offset"], q["state_unknown"]) == (
        "invariant", 7, 8, True)


def test_a_directory_of_snapshots_alone_starts_from_the_latest(spark, tmp_path):
    """A real controller's log directory holding one snapshot and no segment (the corpus's
    ogs59 kafka-3): Kafka starts from its latest snapshot, and so does the ingest."""
    from kraftlake.codec.logfiles import iter_path
    from tests.conftest import real

    log = real("ogs59__docker-compose-kafka4.10/data/kafka-3/__cluster_metadata-0")
    (snapshot,) = log.glob("*.checkpoint")
    held = {(r.data["topic_id"], r.data["partition_id"])
            for r in iter_path(snapshot, []) if r.type == "PartitionRecord"}
    code, output = _ingest(log, tmp_path / "lake")
    assert code == 0, output
    cur = {(r["topic_id"], r["partition_id"])
           for r in _rows(spark, tmp_path / "lake", "partition_current")}
    assert held and cur == held
    records = len(_rows(spark, tmp_path / "lake", "records"))
    code, output = _ingest(log, tmp_path / "lake")  # read once, not again
    assert code == 0, output
    assert len(_rows(spark, tmp_path / "lake", "records")) == records
