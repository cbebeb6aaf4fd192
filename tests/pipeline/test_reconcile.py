"""Snapshot reconciliation finds a snapshot that disagrees with the log, and only that.

Every other test asserts that real and simulated snapshots reconcile with no mismatch;
this one proves the check can fail. The log is written through the codec; the snapshot
appears only after the first run (Kafka writes it later), so the state it is checked against
is a state of the first run that the second run closes: the check must find it in the
history, not only among the states the second run wrote.
"""

from __future__ import annotations

import base64
import json
import uuid
from pathlib import Path

from kraftlake.codec.batch import Batch, scan_batches
from kraftlake.jobs.batch import ingest
from kraftlake.lake.delta import Lake
from kraftlake.simulate.writer import LogWriter
from tests.lake_rows import table_dicts
from tests.pipeline.test_ingest_growth import _cut_copy

T0 = 1_700_000_000_000
TOPIC = base64.urlsafe_b64encode(uuid.UUID(int=0xC0FFEE).bytes).decode().rstrip("=")


def _partition(pid: int, isr: list[int], epoch: int = 0) -> tuple[str, int, dict]:
    return ("PartitionRecord", 0, {"partition_id": pid, "topic_id": TOPIC, "replicas": [1, 2, 3],
                                   "isr": isr, "removing_replicas": [], "adding_replicas": [],
                                   "leader": 1, "leader_epoch": 0, "partition_epoch": epoch,
                                   "leader_recovery_state": 0})


def _isr(pid: int, isr: list[int]) -> tuple[str, int, dict]:
    return ("PartitionChangeRecord", 0, {"partition_id": pid, "topic_id": TOPIC, "isr": isr})


def _log(root: Path) -> tuple[Path, int, Path]:
    """(root, offset where the second run starts, the snapshot file)."""
    w = LogWriter(root)
    w.new_epoch(1, [1], T0)
    w.append([("FeatureLevelRecord", 0, {"name": "metadata.version", "feature_level": 21})], T0)
    w.append([("TopicRecord", 0, {"name": "audit", "topic_id": TOPIC}),
              _partition(0, [1, 2, 3]), _partition(1, [1, 2, 3])], T0 + 10)
    w.append([_isr(0, [1, 2]), _isr(1, [1, 2])], T0 + 1000)
    second_run = w.next
    w.append_noop(T0 + 1500)
    end = w.next  # the snapshot holds the state after offset end - 1 (the NoOp)
    w.append([_isr(0, [1]), _isr(1, [1])], T0 + 2000)
    w.close()
    # partition 0 as the log has it; partition 1 with the ISR from before the shrink
    snap = w.write_snapshot([("FeatureLevelRecord", 0, {"name": "metadata.version",
                                                        "feature_level": 21}),
                             ("TopicRecord", 0, {"name": "audit", "topic_id": TOPIC}),
                             _partition(0, [1, 2], epoch=1), _partition(1, [1, 2, 3], epoch=1)],
                            end_offset=end, epoch=1, last_contained_ts=T0 + 1500, ts=T0 + 1600)
    w.write_companions(cluster_id="reconcile-test", node_id=1, directory_id=TOPIC, bootstrap=[],
                       leader_id=1, voters=[1], ts=T0, formatted="test")
    return root, second_run, snap


def test_a_snapshot_that_disagrees_with_the_log_is_reported(spark, tmp_path, cfg_factory):
    log, second_run, snap = _log(tmp_path / "log")
    seg = log / "__cluster_metadata-0" / "00000000000000000000.log"
    cut = next(i for i, b in enumerate(b for b in scan_batches(seg.read_bytes())
                                        if isinstance(b, Batch)) if b.base_offset == second_run)
    grown, grown_seg, full, _ = _cut_copy(log, tmp_path / "grown", cut)
    grown_snap = grown / "__cluster_metadata-0" / snap.name
    grown_snap.unlink()  # not written yet at the time of the first run

    cfg = cfg_factory(tmp_path / "lake")
    ingest(spark, cfg, [grown])
    grown_seg.write_bytes(full)
    grown_snap.write_bytes(snap.read_bytes())
    (second,) = ingest(spark, cfg, [grown])
    assert second.start_offset == second_run

    for lake_dir in (tmp_path / "lake", tmp_path / "once"):
        if lake_dir.name == "once":
            ingest(spark, cfg_factory(lake_dir), [log])
        got = table_dicts(Lake(lake_dir).path("snapshot_reconciliation"))
        assert [(r["partition_id"], r["field"], json.loads(r["folded_value"])["v"],
                 json.loads(r["snapshot_value"])["v"]) for r in got] == \
            [(1, "isr", [1, 2], [1, 2, 3])], lake_dir.name
        assert got[0]["snapshot_end_offset"] == second_run + 1
