"""The snapshot a read resets from, on a real log whose head retention deleted: the pipeline's
plan (`sources.plan`) and the sequential replay (`reference.replay`) take the same one
(`kraft.snapshots.reset_snapshot`), and it is one Kafka's own recovery would load.

The log is a real one, `ogs59__docker-compose-kafka4.10/data/kafka-1` (Kafka 4.1, three
nodes, one snapshot at end offset 20475 and 260 partition changes after it), cut as Kafka's
retention cuts a log: whole batches, byte for byte, from one batch on, in a segment named
after its base offset. Kafka deletes every snapshot below its log start at startup and
refuses a log whose start no snapshot reaches (`KafkaMetadataLog.recoverSnapshots`); a fresh
reader gets the latest snapshot (`KafkaRaftClient.updateListenersProgress`). The replay once
fell back to the newest snapshot even below the log start; the last test shows what that
folds: a state the log never had.
"""

from __future__ import annotations

import shutil
from pathlib import Path

from kraftlake.codec.batch import Batch, scan_batches
from kraftlake.codec.logfiles import iter_file, list_log_dir
from kraftlake.kraft.records import PARTITION_CHANGE_RECORD
from kraftlake.reference.replay import Replay, plan_log_dir, read_records, replay_dir
from kraftlake.sources.files import LogDirIndex
from kraftlake.sources.plan import FRESH, latest, offset_dict, plan
from tests.conftest import CORPUS

LOG = CORPUS / "ogs59__docker-compose-kafka4.10/data/kafka-1/__cluster_metadata-0"
SNAPSHOT = 20475


def _cut(src: Path, dest: Path, first: int) -> Path:
    """A copy of the log directory `src` whose segment starts at the first batch with a base
    offset >= `first` (the batches before it deleted, as retention deletes them), with its
    snapshots; returns the new directory."""
    (segment,), snapshots = list_log_dir(src)
    data = segment.path.read_bytes()
    batch = next(b for b in scan_batches(data) if isinstance(b, Batch) and b.base_offset >= first)
    out = dest / "__cluster_metadata-0"
    out.mkdir(parents=True)
    (out / f"{batch.base_offset:020d}.log").write_bytes(data[batch.position:])
    for s in snapshots:
        shutil.copy(s.path, out / s.path.name)
    return out


def _pipeline_reset(log_dir: Path) -> tuple[int, list]:
    """The reset offset of a fresh read of `log_dir` by the pipeline, and its planned ranges."""
    index = LogDirIndex(str(log_dir)).refresh()
    start = offset_dict(FRESH)
    end = latest(index, start)
    return end["reset"], plan("c", index, start, end, 1 << 30)


def _change_offsets_after(log_dir: Path, offset: int) -> list[int]:
    (segment,), _ = list_log_dir(log_dir)
    return [r.offset for _, recs in iter_file(segment) for r in recs
            if r.type == PARTITION_CHANGE_RECORD and r.offset >= offset]


def test_a_snapshot_at_or_above_the_log_start_is_the_reset_of_both(tmp_path: Path) -> None:
    """Retention kept the log from below the snapshot on: both reset from it, and its state
    with the log after it is the image of the whole log (what Kafka recovers to)."""
    cut = _cut(LOG, tmp_path, SNAPSHOT - 5000)
    reset, ranges = _pipeline_reset(cut)
    assert reset == SNAPSHOT
    assert [(r.kind, r.snapshot_role) for r in ranges if r.kind == "snapshot"] == [
        ("snapshot", "reset")]
    start = plan_log_dir(cut).start_snapshot
    assert start is not None and start.offset == SNAPSHOT
    assert replay_dir(cut)[0].final_state() == replay_dir(LOG)[0].final_state()


def test_a_snapshot_below_the_log_start_is_no_reset_for_either(tmp_path: Path) -> None:
    """Retention kept the log from after the snapshot on (Kafka itself would have deleted the
    snapshot and refused the log): neither resets from it; the pipeline records the offsets
    before the log start as a gap, the replay folds the log from its start."""
    changes = _change_offsets_after(LOG, SNAPSHOT)
    cut = _cut(LOG, tmp_path, changes[len(changes) // 2])
    log_start = list_log_dir(cut)[0][0].offset
    assert log_start > SNAPSHOT
    reset, ranges = _pipeline_reset(cut)
    assert reset == -1
    assert [(r.kind, r.lo, r.hi) for r in ranges if r.kind == "gap"] == [("gap", 0, log_start)]
    assert [r for r in ranges if r.snapshot_role == "reset"] == []
    assert plan_log_dir(cut).start_snapshot is None


def test_the_newest_snapshot_below_the_log_start_folds_a_state_the_log_never_had(
        tmp_path: Path) -> None:
    """Why the fallback went: the snapshot's state with the log from its (later) start on
    misses the partition changes in between, and ends in another image than the log's."""
    changes = _change_offsets_after(LOG, SNAPSHOT)
    cut = _cut(LOG, tmp_path, changes[len(changes) // 2])
    log_start = list_log_dir(cut)[0][0].offset
    assert any(SNAPSHOT <= c < log_start for c in changes)
    (segment,), (snapshot,) = list_log_dir(cut)
    fallback = Replay()
    fallback.load_snapshot(read_records(snapshot), snapshot.offset)
    for _, recs in iter_file(segment):
        for r in recs:
            fallback.apply(r)
    assert fallback.final_state() != replay_dir(LOG)[0].final_state()
