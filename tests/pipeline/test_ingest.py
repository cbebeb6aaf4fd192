"""End to end on a real log: batch ingest, idempotent re-run, streaming == batch, SQL CLI."""

from __future__ import annotations

import json

import deltalake
import pytest
from click.testing import CliRunner

from kraftlake.jobs.batch import ingest
from kraftlake.lake.delta import Lake
from kraftlake.lake.schema import table_schema
from tests.conftest import real
from tests.lake_rows import table_dicts, table_rows
from tests.polling import wait_until

# micro-batches held against one batch, a real log's events: over two partitions, as on a
# real input
pytestmark = pytest.mark.usefixtures("several_partitions")

# Kafka 4.x, ELR on: topic deleted and recreated twice, then partition 0 goes leaderless
# (ELR [1], LastKnownElr [1]) and comes back by an unclean last-known-leader election
# (LeaderRecoveryState=1, offset 3602) that never recovers; six snapshots check the fold.
INDUS = real("IndusWargods__local-test-rig/kafka-data/__cluster_metadata-0")
GOLD = ["partition_timeline", "partition_events", "partition_current", "partition_changes",
        "topics", "configs", "brokers", "records", "quarantine"]


@pytest.fixture(scope="module")
def batch_lake(spark, tmp_path_factory, cfg_factory):
    path = tmp_path_factory.mktemp("batch") / "lake"
    cfg = cfg_factory(path)
    results = ingest(spark, cfg, [INDUS])
    return cfg, Lake(path), results


def test_batch_ingest_finds_the_unclean_election(batch_lake):
    # the rows read with delta-rs (tests/lake_rows.py): the five Spark queries this made
    # cost 2.7 CPU s on a small lake, three delta-rs reads 0.02
    _cfg, lake, (res,) = batch_lake
    assert res.records > 50_000 and res.quarantined == 0 and res.orphans == 0
    events = table_dicts(lake.path("partition_events"))
    ev = [e for e in events if e["event_type"] == "unclean_election"]
    assert [(e["offset"], e["detection"], e["new_leader"]) for e in ev] == [
        (3602, "leader_recovery_state", 1)]
    elr = sorted((e for e in events if e["event_type"] == "elr_change"),
                 key=lambda e: e["offset"])
    assert [(e["offset"], e["elr_added"], e["elr_removed"]) for e in elr] == [
        (3594, [1], []), (3599, [], [1]), (3602, [], [])]
    assert elr[2]["last_known_elr_removed"] == [1]
    cur = table_dicts(lake.path("partition_current"))
    assert len(cur) == 1  # two earlier incarnations of test-topic were deleted
    assert cur[0]["leader_recovery_state"] == 1 and cur[0]["recovering_since_offset"] == 3602
    assert (cur[0]["leader_epoch"], cur[0]["partition_epoch"]) == (2, 3)
    # six snapshots reconcile with the fold
    assert table_dicts(lake.path("snapshot_reconciliation")) == []
    deleted = sum(e["event_type"] == "partition_deleted" for e in events)
    assert deleted == 4


def test_bronze_records_keep_their_schema_without_the_typed_fields(batch_lake):
    """The decoder's `fields` struct is a column of the source rows only: bronze keeps the
    body once, as `data` (docs/decisions.md), so its schema needs no upgrade."""
    _cfg, lake, _ = batch_lake
    names = [f.name for f in deltalake.DeltaTable(lake.path("records")).schema().fields]
    assert names == table_schema("records").names


def test_rerun_adds_nothing(spark, batch_lake):
    cfg, lake, _ = batch_lake
    before = {n: lake.version(n) for n in GOLD}
    (res,) = ingest(spark, cfg, [INDUS])
    assert res.version == -1
    assert {n: lake.version(n) for n in GOLD} == before


def test_stream_micro_batches_equal_batch(spark, batch_lake, tmp_path, cfg_factory):
    from kraftlake.jobs.stream import start_stream

    _, blake, _ = batch_lake
    cfg = cfg_factory(tmp_path / "lake")
    seen = []
    q = start_stream(spark, cfg, INDUS, trigger="0 seconds", max_offsets=15_000,
                     on_batch=seen.append)
    try:
        wait_until("the stream has committed offsets up to 51,264",
                   lambda: any((r.end_offset or 0) >= 51_264 for r in seen), 600,
                   failed=lambda: None if q.exception() is None
                   else f"the stream failed: {q.exception()}")
    finally:
        q.stop()
    assert q.exception() is None
    slake = Lake(cfg.lake)
    for name in GOLD:
        assert table_rows(slake, name) == table_rows(blake, name), name
    # maxOffsetsPerTrigger (15,000) caps every micro-batch, so the 51,264 offsets take at
    # least four: the seeded path (a batch continuing the lake of the ones before) is run
    took = [r.end_offset for r in seen if r.records]
    assert len(took) >= 4, f"micro-batches ending at {took}: maxOffsetsPerTrigger not honoured"


def test_sql_cli_json(batch_lake):
    from kraftlake.cli import main

    cfg, _, _ = batch_lake
    out = CliRunner().invoke(main, [
        "sql", "SELECT event_type, count(*) AS n FROM partition_events GROUP BY event_type "
        "ORDER BY event_type", "--lake", str(cfg.lake), "--format", "json"])
    assert out.exit_code == 0, out.output
    rows = {r["event_type"]: r["n"] for r in json.loads(out.output)}
    assert rows["unclean_election"] == 1 and rows["partition_created"] == 5


def _timeline(cfg, *args: str) -> str:
    from kraftlake.cli import main

    out = CliRunner().invoke(main, ["timeline", "--lake", str(cfg.lake), "--partition", "0",
                                    *args], env={"COLUMNS": "250"})
    assert out.exit_code == 0, out.output
    return out.output


def test_timeline_of_a_recreated_topic_is_its_live_incarnation(batch_lake):
    """test-topic was deleted and created again twice: three topics (ids) of one name. The
    timeline by name is the live one's; the earlier ones are listed by id and lifetime, and
    each is shown by its id alone."""
    cfg, lake, _ = batch_lake
    lives = sorted((t for t in table_dicts(lake.path("topics"))
                    if t["topic_name"] == "test-topic"), key=lambda t: t["created_offset"])
    assert len(lives) == 3 and lives[-1]["deleted_offset"] is None
    out = _timeline(cfg, "--topic", "test-topic")
    assert f"topic id {lives[-1]['topic_id']}" in out
    table = out.split("earlier incarnation")[0]
    assert "deleted at offset" not in table  # the live incarnation is not deleted
    for t in lives[:-1]:
        assert (f"earlier incarnation of test-topic-0: topic id {t['topic_id']}, from offset"
                in out)
        assert f"deleted at offset {t['deleted_offset']} (" in out
    first = _timeline(cfg, "--topic-id", lives[0]["topic_id"])
    assert f"topic id {lives[0]['topic_id']}" in first
    assert f"deleted at offset {lives[0]['deleted_offset']}" in first
    assert lives[-1]["topic_id"] not in first and "earlier incarnation" not in first
    # every state shown is the first incarnation's: none from the later ones' offsets
    shown = [int(w) for w in (ln.split("│")[1].strip() for ln in first.splitlines()
                              if ln.count("│") > 3) if w.isdigit()]
    assert shown and max(shown) <= lives[0]["deleted_offset"]


def test_the_report_shows_one_incarnation_of_a_recreated_topic(batch_lake, tmp_path):
    """The report's partition section of test-topic:0 holds the live topic's states only:
    the earlier incarnations' (their own epochs from 0) are another topic's."""
    import re

    from kraftlake.cli import main

    cfg, lake, _ = batch_lake
    live = next(t for t in table_dicts(lake.path("topics"))
                if t["topic_name"] == "test-topic" and t["deleted_offset"] is None)
    page = tmp_path / "report.html"
    out = CliRunner().invoke(main, ["report", "--lake", str(cfg.lake), "--out", str(page),
                                    "--partition", "test-topic:0"])
    assert out.exit_code == 0, out.output
    html = page.read_text()
    section = html.split(f"test-topic:0 <small>topic id {live['topic_id']}</small></h3>")[1]
    offsets = [int(o) for o in re.findall(r"<tr><td>[^<]*</td><td>(\d+)</td>",
                                          section.split("</details>")[0])]
    assert offsets and min(offsets) >= live["created_offset"]
