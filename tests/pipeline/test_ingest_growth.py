"""A log that grew since the last batch run: the next run adds exactly the new records.

This is the everyday scheduled-job case (the active segment kept being written between two
runs), so the tail check that guards against a *different* log under the same cluster id
must accept the same log grown longer.
"""

from __future__ import annotations

import shutil
from pathlib import Path

from kraftlake.codec.batch import Batch, scan_batches
from kraftlake.jobs.batch import ingest
from kraftlake.lake.delta import Lake
from tests.conftest import REAL
from tests.pipeline.test_ingest import GOLD, _rows

LOG = REAL / "vasifvortex__azercell_docker_project2/data/kafka1"  # 3 brokers, 153 records


def _cut_copy(log: Path, dest: Path, batch: int) -> tuple[Path, Path, bytes, Batch]:
    """A copy of `log` whose (only) segment ends before its `batch`-th batch: the log as a
    scheduled run saw it earlier. Returns (copy, its segment, the full bytes, that batch)."""
    shutil.copytree(log, dest)
    seg = dest / "__cluster_metadata-0" / "00000000000000000000.log"
    seg.chmod(0o644)
    full = seg.read_bytes()
    cut = [b for b in scan_batches(full) if isinstance(b, Batch)][batch]
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
        assert _rows(spark, Lake(tmp_path / "lake"), name) == _rows(spark, Lake(once), name), name


BUSY = REAL / "nurlan-abdullazada__Docker-compose/data/kafka1"  # 188 records, 115 changes


def _history_files(lake: Lake) -> set[str]:
    """Files of closed timeline states (the `is_current=false` partition)."""
    return {f for f in lake.table("partition_timeline").file_uris() if "is_current=false" in f}


def test_an_increment_closes_states_without_rewriting_history(spark, tmp_path, cfg_factory):
    """The second run closes current states of the first but rewrites none of the files of
    closed states: that is what keeps an increment's cost independent of the history."""
    grown, seg, full, _ = _cut_copy(BUSY, tmp_path / "grown", -1)  # 61 changes, then 54

    lake = Lake(tmp_path / "lake")
    cfg = cfg_factory(tmp_path / "lake")
    ingest(spark, cfg, [grown])
    history = _history_files(lake)
    assert history, "the first half of this log already closes states"
    seg.write_bytes(full)
    (second,) = ingest(spark, cfg, [grown])
    assert second.changes > 0
    assert history <= _history_files(lake)
    tl = lake.read_arrow("partition_timeline")
    assert tl.column("is_current").to_pylist() == [
        v is None for v in tl.column("valid_to_offset").to_pylist()]

    once = tmp_path / "once"
    ingest(spark, cfg_factory(once), [BUSY])
    assert _rows(spark, lake, "partition_timeline") == _rows(spark, Lake(once),
                                                             "partition_timeline")
