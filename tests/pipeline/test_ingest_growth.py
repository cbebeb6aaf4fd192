"""A log that grew since the last batch run: the next run adds exactly the new records.

This is the everyday scheduled-job case (the active segment kept being written between two
runs), so the tail check that guards against a *different* log under the same cluster id
must accept the same log grown longer.
"""

from __future__ import annotations

import base64
import uuid
from itertools import pairwise
from pathlib import Path

from kraftlake import simulate_cluster
from kraftlake.codec.batch import Batch, scan_batches
from kraftlake.codec.logfiles import records_of_batch
from kraftlake.jobs.batch import ingest
from kraftlake.lake.delta import Lake
from kraftlake.simulate.writer import LogWriter
from tests.conftest import real
from tests.lake_rows import table_dicts, table_files, table_rows
from tests.logs import BUSY, BUSY_CUTS, growing_copy
from tests.pipeline.test_ingest import GOLD

LOG = real("vasifvortex__azercell_docker_project2/data/kafka1")  # 3 brokers, 153 records


def _cut_copy(log: Path, dest: Path, batch: int) -> tuple[Path, Path, bytes, Batch]:
    """A copy of `log` whose (only) segment ends before its `batch`-th batch: the log as a
    scheduled run saw it earlier. Returns (copy, its segment, the full bytes, that batch)."""
    dest, seg, full, batches = growing_copy(log, dest)
    cut = batches[batch]
    seg.write_bytes(full[:cut.position])
    return dest, seg, full, cut


def test_second_run_on_a_grown_log_adds_only_the_new_records(spark, tmp_path, cfg_factory):
    grown, seg, full, cut = _cut_copy(LOG, tmp_path / "grown", 10)

    cfg = cfg_factory(tmp_path / "lake")
    (first,) = ingest(spark, cfg, [grown])
    assert first.end_offset == cut.base_offset
    seg.write_bytes(full)
    (second,) = ingest(spark, cfg, [grown])
    assert (second.start_offset, second.end_offset) == (cut.base_offset, 153)
    assert first.records + second.records == 153

    once = tmp_path / "once"
    ingest(spark, cfg_factory(once), [LOG])
    for name in GOLD:
        assert table_rows(Lake(tmp_path / "lake"), name) == table_rows(Lake(once), name), name


def test_increments_decoded_on_the_driver_and_folded_by_tasks_equal_one_ingest(
        spark, tmp_path, cfg_factory, busy_once):
    """An increment small enough to decode on the driver (`ingest.driver_max_bytes`) may hold
    more changes than the driver folds (`ingest.driver_fold_max_records`): its frames stay on
    the driver, its kernel runs in Spark's tasks, and its incidents meet both. Scheduled runs
    of the busy log that way end in the lake of one ingest."""
    grown, seg, full, batches = growing_copy(BUSY, tmp_path / "grown")
    cfg = cfg_factory(tmp_path / "lake", driver_fold_max_records=1)
    for end in [batches[i].position for i in BUSY_CUTS] + [len(full)]:
        seg.write_bytes(full[:end])
        (res,) = ingest(spark, cfg, [grown])
        assert res.changes > 1
    lake = Lake(cfg.lake)
    for name in [*GOLD, "partition_intervals", "incidents"]:
        assert table_rows(lake, name) == table_rows(busy_once, name), name


def _history_files(lake: Lake) -> set[str]:
    """Files of closed timeline states (the `is_current=false` partition)."""
    return {f for f in table_files(lake, "partition_timeline") if "is_current=false" in f}


def test_an_increment_closes_states_without_rewriting_history(spark, tmp_path, cfg_factory,
                                                             busy_once, busy_runs):
    """The next run closes current states of the runs before but rewrites none of the files
    of closed states: that is what keeps an increment's cost independent of the history."""
    # the log as the last of `busy_runs` saw it (61 changes in two runs), then 54 more
    grown, seg, full, cut = _cut_copy(BUSY, tmp_path / "grown", BUSY_CUTS[-1])
    assert busy_runs.results[-1].end_offset == cut.base_offset

    cfg = cfg_factory(busy_runs.copy(tmp_path / "lake"))
    lake = Lake(cfg.lake)
    history = _history_files(lake)
    assert history, "the first part of this log already closes states"
    seg.write_bytes(full)
    (second,) = ingest(spark, cfg, [grown])
    assert second.changes > 0
    assert history <= _history_files(lake)
    tl = table_dicts(lake.path("partition_timeline"), ["is_current", "valid_to_offset"])
    assert [r["is_current"] for r in tl] == [r["valid_to_offset"] is None for r in tl]

    assert table_rows(lake, "partition_timeline") == table_rows(busy_once, "partition_timeline")


def _topic(name: str, n: int) -> str:
    return base64.urlsafe_b64encode(uuid.UUID(int=n).bytes).decode().rstrip("=")


def _recreated_topic_log(root: Path) -> tuple[Path, int]:
    """A log where topic `orders` (min.insync.replicas=3) is deleted, then re-created under the
    same name with no topic config, and its ISR shrinks to 2. Returns (root, the offset at
    which the re-creation starts)."""
    first, second = _topic("orders", 0xA1), _topic("orders", 0xB2)

    def partition(tid: str) -> tuple[str, int, dict]:
        return ("PartitionRecord", 0, {"partition_id": 0, "topic_id": tid, "replicas": [1, 2, 3],
                                       "isr": [1, 2, 3], "removing_replicas": [],
                                       "adding_replicas": [], "leader": 1, "leader_epoch": 0,
                                       "partition_epoch": 0, "leader_recovery_state": 0})

    def shrink(tid: str) -> tuple[str, int, dict]:
        return ("PartitionChangeRecord", 0, {"partition_id": 0, "topic_id": tid, "isr": [1, 2]})

    t0 = 1_700_000_000_000
    w = LogWriter(root)
    w.new_epoch(1, [1], t0)
    w.append([("FeatureLevelRecord", 0, {"name": "metadata.version", "feature_level": 21})], t0)
    w.append([("TopicRecord", 0, {"name": "orders", "topic_id": first}),
              ("ConfigRecord", 0, {"resource_type": 2, "resource_name": "orders",
                                   "name": "min.insync.replicas", "value": "3"}),
              partition(first)], t0 + 10)
    w.append([shrink(first)], t0 + 1000)
    w.append([("RemoveTopicRecord", 0, {"topic_id": first})], t0 + 2000)
    w.append_noop(t0 + 2500)
    recreated = w.next
    w.append([("TopicRecord", 0, {"name": "orders", "topic_id": second}), partition(second)],
             t0 + 3000)
    w.append([shrink(second)], t0 + 4000)
    w.close()
    w.write_companions(cluster_id="recreated-topic", node_id=1, directory_id=_topic("d", 1),
                       bootstrap=[], leader_id=1, voters=[1], ts=t0, formatted="test")
    return root, recreated


def test_a_topic_recreated_in_a_later_increment_does_not_inherit_its_configs(
        spark, tmp_path, cfg_factory):
    """RemoveTopicRecord drops the topic's configs (docs/semantics.md 1.4: a re-created topic
    starts from the cluster defaults), also when the deletion was ingested by an earlier run."""
    log, recreated = _recreated_topic_log(tmp_path / "log")
    batches = [b for b in scan_batches(
        (log / "__cluster_metadata-0" / "00000000000000000000.log").read_bytes())
        if isinstance(b, Batch)]
    cut = next(i for i, b in enumerate(batches) if b.base_offset == recreated)
    grown, seg, full, _ = _cut_copy(log, tmp_path / "grown", cut)

    cfg = cfg_factory(tmp_path / "lake")
    ingest(spark, cfg, [grown])
    seg.write_bytes(full)
    (second,) = ingest(spark, cfg, [grown])
    assert second.start_offset == recreated

    lake = Lake(tmp_path / "lake")
    events = table_dicts(lake.path("partition_events"))
    under = sorted(e["topic_id"] for e in events if e["event_type"] == "under_min_isr")
    assert under == [_topic("orders", 0xA1)]  # the first incarnation only: 2 < 3
    shrinks = {e["topic_id"]: e["min_isr"] for e in events if e["event_type"] == "isr_shrink"}
    assert shrinks == {_topic("orders", 0xA1): 3, _topic("orders", 0xB2): 1}

    once = tmp_path / "once"
    ingest(spark, cfg_factory(once), [log])
    assert table_rows(lake, "partition_events") == table_rows(Lake(once), "partition_events")


def test_a_transaction_open_at_the_end_of_a_run_is_settled_by_the_next(
        spark, tmp_path, cfg_factory):
    """A run that stops inside a metadata transaction holds its records back (they may still
    be aborted); the next run reads them again from bronze and settles them. Here the
    transaction is the simulator's aborted topic creation (a controller failover), so none
    of its records may reach silver or gold, exactly as in a one-shot ingest."""
    sim = tmp_path / "sim"
    simulate_cluster(sim, "mixed", seed=1, hours=0.5, elr=False)
    seg = sim / "__cluster_metadata-0" / "00000000000000000000.log"
    batches = [b for b in scan_batches(seg.read_bytes()) if isinstance(b, Batch)]
    markers = [(i, r.offset, r.type) for i, b in enumerate(batches)
               for r in records_of_batch(b) if r.type.endswith("TransactionRecord")]
    begin = next(m for m, n in pairwise(markers)
                 if m[2] == "BeginTransactionRecord" and n[2] == "AbortTransactionRecord"
                 and n[0] > m[0] + 1)
    grown, seg, full, _ = _cut_copy(sim, tmp_path / "grown", begin[0] + 1)

    cfg = cfg_factory(tmp_path / "lake")
    (first,) = ingest(spark, cfg, [grown])
    assert first.pending_txn_from == begin[1]
    seg.write_bytes(full)
    (second,) = ingest(spark, cfg, [grown])
    assert second.pending_txn_from is None and second.start_offset > begin[1]

    once = tmp_path / "once"
    ingest(spark, cfg_factory(once), [sim])
    for name in GOLD:
        assert table_rows(Lake(tmp_path / "lake"), name) == table_rows(Lake(once), name), name


def _readme_as_of_query() -> str:
    """The README's query of the partitions offline between two times across the fleet."""
    import re

    readme = (Path(__file__).resolve().parents[2] / "README.md").read_text()
    (found,) = [q for q in re.findall(r'kraftlake sql "(.*?)"', readme, re.S) if "as_of" in q]
    return found


def test_the_readmes_offline_query_closes_open_intervals_at_the_newest_record(busy_once):
    """BUSY ends with its brokers fenced: partitions offline still. The README's query
    closes each open interval at the cluster's newest record (`ingest_progress`'s
    `newest_record_ts`), so a window after the last change still finds them."""
    import json
    import re

    from click.testing import CliRunner

    from kraftlake.cli import main

    lake = busy_once
    log = [r["timestamp"] for r in table_dicts(lake.path("records"), ["timestamp", "source"])
           if r["source"] == "log"]
    newest = max(log)
    offline = [i for i in table_dicts(lake.path("partition_intervals"))
               if i["kind"] == "offline"]
    still = {(i["topic_name"], i["partition_id"]) for i in offline if i["is_open"]}
    assert still and max(i["start_ts"] for i in offline) < newest
    progress = table_dicts(lake.path("ingest_progress"), ["newest_record_ts"])
    assert max(r["newest_record_ts"] for r in progress) == newest
    # a window of one instant, the newest record: after every change
    t1 = f"{newest:%Y-%m-%d %H:%M:%S.%f}"
    query = re.sub(r"TIMESTAMP '[^']*'", f"TIMESTAMP '{t1}'", _readme_as_of_query())
    out = CliRunner().invoke(main, ["sql", query, "--lake", lake.root, "--format", "json"])
    assert out.exit_code == 0, out.output
    rows = json.loads(out.output)
    assert {(r["topic_name"], r["partition_id"]) for r in rows} == still
    assert {r["end_ts"] for r in rows} == {f"{newest:%Y-%m-%dT%H:%M:%S.%f}Z"}
    assert all(r["open_at_as_of"] for r in rows)
