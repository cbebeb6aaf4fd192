"""A damaged batch of partition changes is a fact in the lake, not a silent rewrite of history.

A real 3-broker Kafka 3.9 log (the corpus's ogs59 cluster: 32,006 records and Kafka's own
snapshot at offset 20475) with one bit flipped inside its first batch of 16
PartitionChangeRecords (offsets 13737-13752), ingested by `kraftlake ingest` as a user
would, against the same log undamaged. The truths come from outside the fold: which offsets
the batch held (its header, read from the undamaged file), and Kafka's snapshot, which the
undamaged lake matches exactly (no reconciliation row) and which re-anchors the damaged one.
A flipped bit in a NoOp heartbeat batch of the same log loses nothing and says so.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

from kraftlake.cli import main
from kraftlake.codec.batch import Batch, scan_batches
from kraftlake.codec.logfiles import records_of_batch
from kraftlake.lake.delta import Lake
from tests.conftest import real

LOG = real("ogs59__docker-compose-kafka4.10/data/kafka-1")
SNAPSHOT_END = 20475  # Kafka's snapshot in that log dir: the state after offset 20474
STATE = ["leader", "leader_epoch", "partition_epoch", "isr", "eligible_leader_replicas",
         "last_known_elr", "replicas", "leader_recovery_state"]
PKEY = ["topic_id", "partition_id"]


def _batches() -> list[Batch]:
    seg = LOG / "__cluster_metadata-0" / "00000000000000000000.log"
    return [b for b in scan_batches(seg.read_bytes()) if isinstance(b, Batch)]


def _damaged_copy(dest: Path, at: int) -> Path:
    """A copy of the log with one bit flipped at byte `at` (only the CRC can tell)."""
    shutil.copytree(LOG, dest)
    seg = dest / "__cluster_metadata-0" / "00000000000000000000.log"
    seg.chmod(0o644)
    buf = bytearray(seg.read_bytes())
    buf[at] ^= 0x10
    seg.write_bytes(bytes(buf))
    return dest / "__cluster_metadata-0"


def _ingest(spark, log: Path, lake: Path) -> tuple[int, str]:
    out = CliRunner().invoke(main, ["ingest", str(log), "--lake", str(lake)])
    return out.exit_code, out.output


def _rows(spark, lake: Path, table: str) -> list[dict]:
    return [r.asDict() for r in Lake(lake).read(spark, table).collect()]


def _state(row: dict) -> tuple:
    return tuple(tuple(v) if isinstance(v, list) else v for v in (row[c] for c in STATE))


@pytest.fixture(scope="module")
def lakes(spark, tmp_path_factory):
    """(clean lake, damaged lake, the damaged batch, the damaged ingest's exit and output)."""
    base = tmp_path_factory.mktemp("damaged")
    batches = _batches()
    victim = next(b for b in batches if b.base_offset < SNAPSHOT_END and sum(
        r.type == "PartitionChangeRecord" for r in records_of_batch(b)) >= 10)
    clean_code, _ = _ingest(spark, LOG / "__cluster_metadata-0", base / "clean")
    assert clean_code == 0
    # inside the last record's value: the records still parse, the CRC fails
    at = victim.position + victim.size - 20
    code, output = _ingest(spark, _damaged_copy(base / "bad-log", at), base / "bad")
    return base / "clean", base / "bad", victim, code, output


def test_the_ingest_exits_1_and_says_how_many_offsets_are_unknown(lakes) -> None:
    _clean, _bad, victim, code, output = lakes
    n = victim.last_offset - victim.base_offset + 1
    assert code == 1
    assert (f"{n} offset(s) unknown: offsets "
            f"[{victim.base_offset}, {victim.next_offset}) (damaged, missing from the input, or "
            f"failing a record-level check) "
            f"may have held partition changes"
            in " ".join(output.split()))


def test_quarantine_keeps_the_batch_and_marks_its_state_lost(spark, lakes) -> None:
    _clean, bad, victim, _code, _out = lakes
    [q] = _rows(spark, bad, "quarantine")
    assert (q["offset"], q["end_offset"], q["kind"], q["state_unknown"]) == (
        victim.base_offset, victim.next_offset, "crc", True)


def test_states_across_the_gap_are_uncertain_until_kafkas_snapshot(spark, lakes) -> None:
    clean, bad, victim, _code, _out = lakes
    lo = victim.base_offset
    tl = _rows(spark, bad, "partition_timeline")
    clean_tl = _rows(spark, clean, "partition_timeline")
    # before the damage, the two histories are the same rows
    key = lambda r: (r["topic_id"], r["partition_id"], r["valid_from_offset"], r["seq"])  # noqa: E731
    before = {key(r): _state(r) for r in tl if r["valid_from_offset"] < lo}
    assert before == {key(r): _state(r) for r in clean_tl if r["valid_from_offset"] < lo}
    # every partition that existed at the damage is carried across it, by a row saying so
    alive = {(r["topic_id"], r["partition_id"]) for r in clean_tl
             if r["valid_from_offset"] < lo and (r["valid_to_offset"] is None
                                                  or r["valid_to_offset"] >= lo)}
    gap_rows = [r for r in tl if r["source"] == "gap"]
    assert {(r["topic_id"], r["partition_id"]) for r in gap_rows} == alive
    assert {(r["valid_from_offset"], r["record_type"], r["uncertain_since"])
            for r in gap_rows} == {(lo, "Unknown", lo)}
    # every state of those from the damage to Kafka's snapshot is uncertain; none after it
    # is, nor any of a partition created after the damage (its PartitionRecord is whole)
    for r in tl:
        if (r["topic_id"], r["partition_id"]) in alive and r["valid_from_offset"] >= lo \
                and (r["valid_from_offset"], r["seq"]) < (SNAPSHOT_END - 1, 1):
            assert r["uncertain_since"] == lo, key(r)
        else:
            assert r["uncertain_since"] is None, key(r)
    # the snapshot re-anchors exactly the uncertain partitions, and from there on the
    # damaged lake's history is the clean one's
    anchors = [r for r in tl if r["source"] == "snapshot" and r["seq"] == 1]
    assert {(r["topic_id"], r["partition_id"]) for r in anchors} == alive
    after = {key(r): _state(r) for r in tl
             if r["valid_from_offset"] >= SNAPSHOT_END and r["source"] == "log"}
    assert after == {key(r): _state(r) for r in clean_tl if r["valid_from_offset"] >= SNAPSHOT_END}
    cur = {(r["topic_id"], r["partition_id"]): (_state(r), r["uncertain_since"])
           for r in _rows(spark, bad, "partition_current")}
    assert cur == {(r["topic_id"], r["partition_id"]): (_state(r), None)
                   for r in _rows(spark, clean, "partition_current")}


def test_reconciliation_shows_what_the_snapshot_corrected(spark, lakes) -> None:
    clean, bad, victim, _code, _out = lakes
    assert _rows(spark, clean, "snapshot_reconciliation") == []  # the fold agrees with Kafka
    fixed = _rows(spark, bad, "snapshot_reconciliation")
    assert fixed and {r["snapshot_end_offset"] for r in fixed} == {SNAPSHOT_END}
    # each correction is the uncertain state the fold had reached against the snapshot's
    tl = _rows(spark, bad, "partition_timeline")
    for m in fixed:
        states = sorted((r for r in tl if (r["topic_id"], r["partition_id"]) == (
            m["topic_id"], m["partition_id"])), key=lambda r: (r["valid_from_offset"], r["seq"]))
        anchor = next(i for i, r in enumerate(states) if r["source"] == "snapshot")
        held, snap = states[anchor - 1], states[anchor]
        assert held["uncertain_since"] == victim.base_offset
        assert m["folded_value"] != m["snapshot_value"]
        assert m["snapshot_value"].replace(" ", "") == f'{{"v":{_json(snap[m["field"]])}}}', m


def _json(v) -> str:
    return "[" + ",".join(map(str, sorted(v))) + "]" if isinstance(v, list) else str(v)


def test_events_and_incidents_say_they_cross_unknown_offsets(spark, lakes) -> None:
    clean, bad, victim, _code, _out = lakes
    lo, hi = victim.base_offset, victim.next_offset
    ev = _rows(spark, bad, "partition_events")
    clean_ev = _rows(spark, clean, "partition_events")
    assert not [e for e in ev if lo <= e["offset"] < hi]  # what the batch held is unknown
    assert [e for e in clean_ev if lo <= e["offset"] < hi]  # and it held events
    doubtful = [e for e in ev if e["uncertain_since"] is not None]
    assert doubtful and all(lo <= e["offset"] < SNAPSHOT_END for e in doubtful)
    assert {e["uncertain_since"] for e in doubtful} == {lo}
    inc = _rows(spark, bad, "incidents")
    spans = [i for i in inc if i["start_offset"] < hi
             and (i["end_offset"] is None or i["end_offset"] >= lo)]
    assert spans and all(i["unknown_offsets"] == hi - lo for i in spans)
    assert all(i["unknown_offsets"] == 0 for i in inc if i not in spans)


def test_a_damaged_heartbeat_loses_nothing(spark, lakes, tmp_path: Path) -> None:
    clean = lakes[0]
    noop = next(b for b in _batches() if b.base_offset > 100 and [
        r.type for r in records_of_batch(b)] == ["NoOpRecord"])
    # in the header's base sequence, which the CRC covers: the NoOp record still reads
    at = noop.position + 54
    code, output = _ingest(spark, _damaged_copy(tmp_path / "log", at), tmp_path / "lake")
    assert code == 0, output
    assert "unknown" not in output
    [q] = _rows(spark, tmp_path / "lake", "quarantine")
    assert (q["offset"], q["state_unknown"]) == (noop.base_offset, False)
    for table in ("partition_timeline", "partition_events", "partition_current"):
        assert sorted(map(str, _rows(spark, tmp_path / "lake", table))) == sorted(
            map(str, _rows(spark, clean, table))), table


def test_the_report_draws_the_unknown_offsets(lakes, tmp_path: Path) -> None:
    _clean, bad, victim, _code, _out = lakes
    page = tmp_path / "report.html"
    out = CliRunner().invoke(main, ["report", "--lake", str(bad), "--out", str(page),
                                    "--partition", "__consumer_offsets:0"])
    assert out.exit_code == 0, out.output
    html = page.read_text()
    lo, last = victim.base_offset, victim.last_offset
    assert f"{last - lo + 1} offset(s) of this cluster's log are unknown" in html
    assert f"{lo}..{last} (" in html  # the paragraph, with the damage's time
    assert f"offsets {lo}..{last} unknown" in html  # the chart's mark
    assert "0/0?" in html  # a state carried across it, in the partition's table


def test_each_check_snapshot_removes_what_it_lacks(spark, tmp_path: Path) -> None:
    """A real log (IndusWargods: test-topic deleted and created again twice, six snapshots)
    whose batch deleting the second incarnation is damaged: its partition is carried
    across uncertain, and the first snapshot after the damage (Kafka's, at offset 10744)
    has it no more, so it ends there, not at a later snapshot read in the same increment."""
    from tests.pipeline.test_ingest import INDUS

    seg = INDUS / "00000000000000000000.log"
    batches = [b for b in scan_batches(seg.read_bytes()) if isinstance(b, Batch)]
    victim = next(b for b in batches if any(
        r.type == "RemoveTopicRecord" for r in records_of_batch(b)) and b.base_offset > 2000)
    gone = next(r.data["topic_id"] for r in records_of_batch(victim)
                if r.type == "RemoveTopicRecord")
    log = tmp_path / "log" / "__cluster_metadata-0"
    shutil.copytree(INDUS.parent, tmp_path / "log")
    bad = log / seg.name
    bad.chmod(0o644)
    buf = bytearray(bad.read_bytes())
    buf[victim.position + victim.size - 5] ^= 0x10  # in the record's value: the CRC fails
    bad.write_bytes(bytes(buf))
    code, output = _ingest(spark, log, tmp_path / "lake")
    assert code == 1, output
    states = [r for r in _rows(spark, tmp_path / "lake", "partition_timeline")
              if r["topic_id"] == gone]
    assert states and max(r["valid_to_offset"] for r in states) == 10744 - 1
