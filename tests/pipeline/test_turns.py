"""A lake built in turns by the two jobs equals one ingest of the whole log, every table.

The log (a simulated 3-hour `mixed` cluster with ELR, segments rolled at 300,000 bytes, two
snapshots) reaches the lake in three turns, as files reach a controller's disk: an
available-now stream up to the segment after the first snapshot, a batch ingest up to the
segment after the second (the snapshot, and changes after it, inside that turn), an
available-now stream of the rest. Each turn continues every
partition from the state the previous one left current: one current timeline row per
partition, no event lost at a turn's edge, the same intervals and incidents.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from kraftlake.codec.logfiles import list_log_dir
from kraftlake.jobs.batch import ingest
from kraftlake.jobs.stream import start_stream
from kraftlake.lake.delta import Lake
from kraftlake.lake.schema import table_names
from kraftlake.simulate.cluster import SimConfig
from kraftlake.simulate.scenarios import DEFAULTS, Params, simulate
from tests.lake_rows import table_dicts, table_rows

# a lake built in turns held against one ingest: over two partitions, as on a real input
pytestmark = pytest.mark.usefixtures("several_partitions")

# every table a turn writes; ingest_progress differs by design (one row per turn)
TABLES = [n for n in table_names() if n != "ingest_progress"]


def _copy(files: list[Path], dest: Path) -> None:
    for f in files:
        if not (dest / f.name).exists():
            shutil.copy2(f, dest / f.name)


def test_turns_of_stream_ingest_stream_equal_one_ingest(spark, tmp_path: Path,
                                                        cfg_factory) -> None:
    src = tmp_path / "cluster"
    simulate("mixed", SimConfig(out=src, seed=23, elr=True, segment_bytes=300_000,
                                txn_threshold=DEFAULTS["mixed"]["txn_threshold"]),
             Params(hours=3.0))
    log = src / "__cluster_metadata-0"
    segments, snapshots = list_log_dir(log)
    snapshots = [s for s in snapshots if s.offset > 0]
    assert len(snapshots) == 2, [s.offset for s in snapshots]
    # a turn ends with the segment after a snapshot: the second turn holds the second
    # snapshot and changes after it, the third continues from them
    cuts = [next(i for i, s in enumerate(segments) if s.offset > snap.offset)
            for snap in snapshots]
    grown = tmp_path / "grown"
    shutil.copytree(src, grown, ignore=shutil.ignore_patterns("__cluster_metadata-0"))
    dest = grown / "__cluster_metadata-0"
    dest.mkdir()
    for f in log.iterdir():
        if not f.name.endswith((".log", ".checkpoint")):
            shutil.copy2(f, dest / f.name)

    def upto(n: int) -> list[Path]:
        end = segments[n].offset if n < len(segments) else 1 << 62
        return [s.path for s in segments[:n]] + [s.path for s in snapshots if s.offset < end]

    cfg = cfg_factory(tmp_path / "lake")
    _copy(upto(cuts[0]), dest)
    start_stream(spark, cfg, grown, available_now=True).awaitTermination()
    _copy(upto(cuts[1]), dest)
    (mid,) = ingest(spark, cfg, [grown])
    assert mid.records and mid.start_offset <= snapshots[1].offset < mid.end_offset
    _copy(upto(len(segments)), dest)
    start_stream(spark, cfg, grown, available_now=True).awaitTermination()

    once = tmp_path / "once"
    ingest(spark, cfg_factory(once), [src])
    turned, whole = Lake(tmp_path / "lake"), Lake(once)
    for name in TABLES:
        assert table_rows(turned, name) == table_rows(whole, name), name
    current = table_dicts(turned.path("partition_timeline"),
                          filters=[("is_current", "=", True)])
    keys = [(r["topic_id"], r["partition_id"]) for r in current]
    assert len(keys) == len(set(keys)), "one current timeline row per partition"
