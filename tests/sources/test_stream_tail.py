"""The streaming source on a log that is being written: real segment bytes, appended in
whole batches (and half batches) while a `kraft-metadata` stream runs, then compared with a
plain batch ingest of the final directory.

Batches are copied from real Kafka segments (`scan_batches` gives their byte ranges), so
every byte the stream reads is one a controller wrote. Each scenario is a few micro-batches:
an increment costs tens of seconds on two shared cores.
"""

from __future__ import annotations

import shutil
import time
from collections.abc import Callable

import pytest

from kraftlake.codec.batch import Batch, encode_batch, scan_batches
from kraftlake.codec.logfiles import records_of_batch
from kraftlake.jobs.batch import ingest
from kraftlake.jobs.increment import cluster_progress
from kraftlake.jobs.stream import processing_time
from kraftlake.lake.delta import Lake
from kraftlake.lake.schema import table_names
from tests.lake_rows import table_dicts, table_rows
from tests.lakes import TABLES, batch_lake, progress_end, spark_progress_end
from tests.logs import INDUS, NOMAN, OGS, TINY, GrowingLog
from tests.polling import wait_until


def wait_for(cond: Callable[[], bool], q, what: str, timeout: float = 300) -> None:
    """`wait_until` `cond()`, asked every half second (`progress_end` says why that is
    cheap); a stream that fails meanwhile ends the wait with its exception."""
    wait_until(what, cond, timeout, interval=0.5,
               failed=lambda: None if q.exception() is None
               else f"the stream failed: {q.exception()}")


def test_tail_append_partial_batch_and_roll(spark, tmp_path, cfg_factory):
    """A batch appended to the active segment is picked up by the next trigger; a half
    written batch is waited for (never quarantined, never read early); a rolled segment is
    followed. The stream's tables equal a batch ingest of the final directory."""
    from kraftlake.jobs.stream import start_stream

    cid = "tail-test"
    log = GrowingLog(tmp_path / "kafka", NOMAN / "00000000000000000000.log", cid)
    end1 = log.write(0, 300)
    cfg = cfg_factory(tmp_path / "stream")
    slake = Lake(cfg.lake)
    q = start_stream(spark, cfg, log.dir, trigger="1s")  # the README's spelling
    try:
        wait_for(lambda: progress_end(slake, cid) == end1, q, "the first batches")
        end2 = log.write(300, 600, half_of_next=True)  # appended + a half-written batch
        wait_for(lambda: progress_end(slake, cid) == end2, q, "the appended batches")
        assert progress_end(slake, cid) == end2  # not past the half-written batch
        assert slake.read(spark, "quarantine").count() == 0
        log.write(600, 700)  # finish it, then Kafka rolls the segment
        log.roll(700)
        end3 = log.write(700, 900)
        wait_for(lambda: progress_end(slake, cid) == end3, q, "the rolled segment")
    finally:
        q.stop()
    assert spark_progress_end(slake, cid) == end3
    assert len(list(log.dir.glob("*.log"))) == 2
    blake = batch_lake(spark, cfg_factory, tmp_path / "batch", log.dir)
    for name in TABLES:
        assert table_rows(slake, name) == table_rows(blake, name), name


def test_retention_gap_then_snapshot(spark, tmp_path, cfg_factory):
    """The stream falls behind retention: the segments it had not read yet are deleted and
    the log now starts just below a snapshot. It records the gap [from, snapshot) and goes
    on from the snapshot; from there on its state equals a batch ingest of the final dir."""
    from kraftlake.jobs.stream import start_stream

    cid = "retention-test"
    log = GrowingLog(tmp_path / "kafka", OGS / "00000000000000000000.log", cid)
    end1 = log.write(0, 60)
    cfg = cfg_factory(tmp_path / "stream")
    slake = Lake(cfg.lake)
    q = start_stream(spark, cfg, log.dir, trigger="1 second")
    try:
        wait_for(lambda: progress_end(slake, cid) == end1, q, "the first batches")
        snap = OGS / "00000000000000020475-0000000026.checkpoint"
        first = max(i for i, b in enumerate(log.batches) if b.base_offset <= 20475 - 10)
        # Kafka writes a snapshot whole (a `.part` file renamed) before retention deletes
        # the segments below it. In place at once here too: a trigger that saw the new
        # segment before the snapshot (copied in place, under load) found the gap ending at
        # the segment's base offset
        staged = tmp_path / snap.name
        shutil.copy(snap, staged)
        (log.dir / "00000000000000000000.log").unlink()  # retention deleted it
        staged.replace(log.dir / snap.name)
        log.roll(first)
        end2 = log.write(first, first + 120)
        wait_for(lambda: progress_end(slake, cid) == end2, q, "the snapshot and the new log")
    finally:
        q.stop()
    assert spark_progress_end(slake, cid) == end2
    gaps = slake.read(spark, "quarantine").filter("kind = 'gap'").collect()
    # the offsets retention took are unknown; Kafka's snapshot re-anchors every state at once
    assert [(g.offset, g.end_offset, g.state_unknown) for g in gaps] == [(end1, 20475, True)]
    blake = batch_lake(spark, cfg_factory, tmp_path / "batch", log.dir)
    assert table_rows(slake, "partition_current") == table_rows(blake, "partition_current")
    assert slake.read(spark, "snapshot_reconciliation").count() == 0
    s_recs = slake.read(spark, "records").filter("offset >= 20474")
    b_recs = blake.read(spark, "records")
    key = lambda df: sorted(map(str, df.drop("snapshot_role").collect()))  # noqa: E731
    assert key(s_recs) == key(b_recs)


def test_a_snapshot_written_behind_the_stream_is_ingested_and_reconciled(
        spark, tmp_path, cfg_factory):
    """Kafka writes a snapshot after the fact: when it lands, the stream has already read
    past its end offset. The stream ingests it all the same (its records, as a check) and
    reconciles its states, so the streamed lake equals a batch ingest of the final directory
    in every table, `records` included (the snapshot's rows were dropped before, as offsets
    the lake held)."""
    from kraftlake.jobs.stream import start_stream

    cid = "late-snapshot"
    log = GrowingLog(tmp_path / "kafka", OGS / "00000000000000000000.log", cid)
    last = max(i for i, b in enumerate(log.batches) if b.base_offset < 22_000)
    end = log.write(0, last + 1)
    cfg = cfg_factory(tmp_path / "stream")
    slake = Lake(cfg.lake)
    snap = OGS / "00000000000000020475-0000000026.checkpoint"

    def snapshot_high() -> int | None:
        rows = table_dicts(slake.path("ingest_progress"), filters=[("cluster_id", "=", cid)])
        return max((r["snapshot_high"] or -1 for r in rows), default=None)

    q = start_stream(spark, cfg, log.dir, trigger="1 second")
    try:
        wait_for(lambda: progress_end(slake, cid) == end, q, "the log up to offset 22000")
        shutil.copy(snap, log.dir / snap.name)  # behind the stream's position
        wait_for(lambda: snapshot_high() == 20475, q, "the snapshot behind the position")
    finally:
        q.stop()
    blake = batch_lake(spark, cfg_factory, tmp_path / "batch", log.dir)
    assert sum(r["source"] == "snapshot" for r in table_dicts(slake.path("records"))) > 0
    for name in [*TABLES, "snapshot_reconciliation", "partition_intervals", "incidents"]:
        assert table_rows(slake, name) == table_rows(blake, name), name


def _rewritten(log: GrowingLog, i: int) -> bytes:
    """Batch i as a new Raft leader would rewrite it after truncation: same offsets,
    higher epoch, later timestamp, hence other bytes and CRC."""
    b = log.batches[i]
    nb = Batch(b.base_offset, b.partition_leader_epoch + 1, b.attributes, b.last_offset_delta,
               b.base_timestamp + 1000, b.max_timestamp + 1000, b.records, b.producer_id,
               b.producer_epoch, b.base_sequence)
    return encode_batch(nb)


def test_an_increment_of_noops_commits_its_records_and_its_progress_alone(
        spark, tmp_path, cfg_factory):
    """An idle controller's log grows by NoOpRecords only (what a stream sees for hours on
    a quiet cluster): that increment commits its records and its `ingest_progress` row,
    and no other table changes by a row or a commit (not even `partition_current`'s
    marker: the increment has no gold)."""
    log = GrowingLog(tmp_path / "kafka", NOMAN / "00000000000000000000.log", "quiet-test")
    quiet = log.batches[400:440]
    assert {r.type for b in quiet for r in records_of_batch(b)} == {"NoOpRecord"}
    lake = Lake(tmp_path / "lake")
    cfg = cfg_factory(lake.root)
    start = log.write(0, 400)
    ingest(spark, cfg, [log.dir])
    versions = {n: lake.version(n) for n in table_names()}
    rows = {n: table_rows(lake, n) for n in table_names()}
    end = log.write(400, 440)
    (res,) = ingest(spark, cfg, [log.dir])
    assert (res.start_offset, res.end_offset, res.records) == (start, end, end - start)
    assert (res.changes, res.events, res.timeline, res.pending_txn_from) == (0, 0, 0, None)
    changed = {n for n in table_names() if lake.version(n) != versions[n]}
    assert changed == {"records", "ingest_progress"}
    assert len(table_rows(lake, "records")) == len(rows["records"]) + end - start
    assert len(table_rows(lake, "ingest_progress")) == len(rows["ingest_progress"]) + 1
    for name in table_names():
        if name not in ("records", "ingest_progress"):
            assert table_rows(lake, name) == rows[name], name
    assert cluster_progress(lake, "quiet-test")["end_offset"] == end


def test_a_tail_of_noops_waits_for_the_next_record_that_is_not_one(
        spark, tmp_path, cfg_factory):
    """A stream holds a tail of NoOpRecords (an idle controller's heartbeats) for
    `stream.noop_every` seconds instead of committing it at every trigger; the first record
    of another kind is read at the next trigger, with the NoOps before it, as one increment.
    A stream catching up is never held: the log read at its start goes in at once."""
    from kraftlake.jobs.stream import start_stream

    cid = "noop-tail"
    log = GrowingLog(tmp_path / "kafka", NOMAN / "00000000000000000000.log", cid)
    assert {r.type for b in log.batches[300:960] for r in records_of_batch(b)} == \
        {"NoOpRecord"}
    assert "PartitionRecord" in {r.type for r in records_of_batch(log.batches[961])}
    end1 = log.write(0, 300)
    lake = Lake(tmp_path / "stream")
    q = start_stream(spark, cfg_factory(lake.root, noop_every=600.0), log.dir, trigger="1s")
    try:
        wait_for(lambda: progress_end(lake, cid) == end1, q, "the log read at the start")
        log.write(300, 320)  # NoOps alone: held
        time.sleep(5)  # five triggers
        assert progress_end(lake, cid) == end1
        end3 = log.write(320, 963)  # more NoOps, then the topic's partitions
        wait_for(lambda: progress_end(lake, cid) == end3, q, "the partition records")
    finally:
        q.stop()
    rows = table_dicts(lake.path("ingest_progress"), ["start_offset", "end_offset"])
    assert {"start_offset": end1, "end_offset": end3} in rows, rows
    offsets = {r["offset"] for r in table_dicts(lake.path("records"), ["offset"])}
    assert set(range(end1, end3)) <= offsets


def test_diverged_tail_is_reported_not_ingested_twice(spark, tmp_path, cfg_factory):
    """The last ingested batches are rewritten with other bytes: the stream reports one
    `diverged` quarantine row and does not ingest those offsets again. Then the
    shared-cluster-id bug: a batch ingest of another log with the same cluster id into that
    lake is refused, its divergence (with the input's bytes) is kept in `quarantine` once,
    no other table changes, and the other input of the same run is ingested."""
    from click.testing import CliRunner

    from kraftlake.cli import main
    from kraftlake.jobs.stream import start_stream

    cid = "5L6g3nShT-eMCtK--X86sw"  # the apache/kafka image default, as in both fixtures
    log = GrowingLog(tmp_path / "kafka", NOMAN / "00000000000000000000.log", cid)
    end1 = log.write(0, 300)
    cfg = cfg_factory(tmp_path / "stream")
    slake = Lake(cfg.lake)
    q = start_stream(spark, cfg, log.dir, trigger="1 second")
    try:
        wait_for(lambda: progress_end(slake, cid) == end1, q, "the first batches")
        keep = log.batches[295].position
        with open(log.active, "r+b") as fh:  # truncate 5 batches, write them anew
            fh.truncate(keep)
            fh.seek(keep)
            fh.write(b"".join(_rewritten(log, i) for i in range(295, 300)))
        end2 = log.write(300, 340)
        wait_for(lambda: progress_end(slake, cid) == end2, q, "the batches after the rewrite")
    finally:
        q.stop()
    assert spark_progress_end(slake, cid) == end2
    div = slake.read(spark, "quarantine").filter("kind = 'diverged'").collect()
    assert [(d.offset, d.end_offset) for d in div] == [(end1, end1)]
    recs = slake.read(spark, "records").filter("source = 'log'")
    assert recs.count() == recs.select("offset").distinct().count() == end2
    before = {n: slake.read(spark, n).filter(f"cluster_id = '{cid}'").count() for n in TABLES}
    before["quarantine"] += 1  # the refusal

    results = ingest(spark, cfg, [INDUS, TINY])  # TINY: another cluster, in the same run
    assert [r.cluster_id for r in results] == [cid, "NfneYjE3SpS3Orx0jFuqGA"]
    assert "same cluster id" in results[0].refused and results[0].records == 0
    assert results[1].refused is None and results[1].records > 0
    for name in TABLES:  # nothing of the refused log reached any table but quarantine
        rows = slake.read(spark, name).filter(f"cluster_id = '{cid}'")
        assert rows.count() == before[name], name

    def refusals():
        return slake.read(spark, "quarantine").filter(
            f"kind = 'diverged' AND cluster_id = '{cid}' AND source_file LIKE '%IndusWargods%'"
        ).collect()

    (ref,) = refusals()
    with open(ref.source_file, "rb") as fh:  # the input's batch at the differing offset
        fh.seek(ref.byte_position)
        assert ref.raw == fh.read(len(ref.raw)) and len(ref.raw) > 61
    assert "same cluster id" in ref.reason and 0 <= ref.offset < end2

    out = CliRunner().invoke(main, ["ingest", str(INDUS), "--lake", str(cfg.lake)])
    assert out.exit_code == 1 and "refused" in out.output
    assert len(refusals()) == 1  # the re-run merged onto the same row


@pytest.mark.parametrize(("given", "spark_form"), [
    ("1s", "1 seconds"), ("500ms", "500 milliseconds"), ("5m", "5 minutes"), ("1h", "1 hours"),
    ("2 seconds", "2 seconds"), ("1 second", "1 second"), ("0.5s", "0.5 seconds")])
def test_trigger_short_forms_become_spark_intervals(given, spark_form):
    assert processing_time(given) == spark_form


@pytest.mark.parametrize("bad", ["", "1", "s", "fast", "1 fortnight", "-1s"])
def test_a_bad_trigger_is_refused_before_the_stream_starts(bad):
    with pytest.raises(ValueError, match="expected a number and a unit"):
        processing_time(bad)


def test_the_tail_check_trusts_the_kept_batch_header_only_with_its_epoch(
        spark, tmp_path, cfg_factory):
    """The progress row keeps the CRC and leader epoch of the last batch it read, as Kafka
    wrote them in the segment's header; the next run accepts the same log by that header
    alone. The same batch with only its leader epoch changed keeps its CRC (Kafka's CRC
    starts after the epoch), so the header check must not accept it: the records are
    compared and the log refused."""
    from kraftlake.jobs.batch import DivergedLogError, refuse_if_diverged
    from kraftlake.sources.files import LogDirIndex

    src = NOMAN.parent
    log = tmp_path / "kafka"
    shutil.copytree(src, log)
    seg = log / NOMAN.name / "00000000000000000000.log"
    cfg = cfg_factory(tmp_path / "lake")
    (res,) = ingest(spark, cfg, [log])
    lake = Lake(cfg.lake, spark)
    prev = cluster_progress(lake, res.cluster_id)
    last = [b for b in scan_batches(seg.read_bytes()) if isinstance(b, Batch)][-1]
    assert prev["end_offset"] == last.base_offset + last.last_offset_delta + 1
    assert (prev["end_batch_crc"], prev["end_batch_epoch"]) == (last.crc,
                                                               last.partition_leader_epoch)
    refuse_if_diverged(lake, str(log / NOMAN.name), prev)  # the same log: accepted

    data = bytearray(seg.read_bytes())
    epoch_at = last.position + 12  # baseOffset (8) and batchLength (4) come first
    data[epoch_at:epoch_at + 4] = (last.partition_leader_epoch + 1).to_bytes(4, "big")
    seg.write_bytes(bytes(data))
    moved = LogDirIndex(str(log / NOMAN.name)).refresh().batch_before(prev["end_offset"])
    assert moved is not None and moved.crc == last.crc  # the CRC does not see the epoch
    with pytest.raises(DivergedLogError, match="differs from what the lake ingested"):
        refuse_if_diverged(lake, str(log / NOMAN.name), prev)


def test_an_available_now_stream_says_it_stops_by_itself(tmp_path):
    """It ingests what is there and ends: "Ctrl-C to stop" would tell the user to stop it."""
    from click.testing import CliRunner

    from kraftlake.cli import main
    from tests.logs import BUSY

    out = CliRunner().invoke(main, ["stream", str(BUSY), "--lake", str(tmp_path / "lake"),
                                    "--available-now"])
    assert out.exit_code == 0, out.output
    said = " ".join(out.output.split())
    assert "(until it is read)" in said and "Ctrl-C" not in said
