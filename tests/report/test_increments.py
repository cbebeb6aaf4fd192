"""The increments write partition_intervals and incidents: a real log ingested as it grew (three
scheduled batch runs on the same log cut at two earlier points) leaves the tables equal to the
reference replay's answers for the whole log, and a fresh single run leaves the same rows.
(The stream job runs the same `process_increment`.)
"""

from __future__ import annotations

import shutil
from pathlib import Path

from kraftlake.codec.batch import Batch, scan_batches
from kraftlake.jobs.batch import ingest
from tests.report.conftest import REAL_INCIDENTS
from tests.report.oracle import expected
from tests.report.test_tables import incident_rows, interval_map


def test_grown_log_increments_write_the_replay_answers(spark, tmp_path: Path, cfg_factory,
                                                        scenario_lakes) -> None:
    grown = tmp_path / "grown"
    shutil.copytree(REAL_INCIDENTS.parent, grown)
    log_dir = grown / "__cluster_metadata-0"
    for snap in log_dir.glob("*.checkpoint"):  # a snapshot beyond a cut is another test's
        snap.unlink()
    seg = log_dir / "00000000000000000000.log"
    seg.chmod(0o644)
    full = seg.read_bytes()
    batches = [b for b in scan_batches(full) if isinstance(b, Batch)]
    cfg = cfg_factory(tmp_path / "lake")
    runs = []
    for cut in (batches[len(batches) // 3], batches[2 * len(batches) // 3]):
        seg.write_bytes(full[:cut.position])
        runs += ingest(spark, cfg, [grown])
    seg.write_bytes(full)
    runs += ingest(spark, cfg, [grown])
    assert len(runs) == 3 and all(r.records for r in runs)

    ex = expected(log_dir)
    assert interval_map(tmp_path / "lake") == ex.intervals
    assert incident_rows(tmp_path / "lake") == ex.incidents
    assert ex.incidents and any(i["end_offset"] is not None for i in ex.incidents)

    one = scenario_lakes["real"][1]  # the session's single run of the whole log
    assert interval_map(one) == ex.intervals
    assert incident_rows(one) == ex.incidents
