"""A large increment's source decoded by Spark's tasks that write the rows themselves
(`sources.decode_tasks`): the work frame every stage reads, and `records`' data files.

The same real log ingested that way, split into several ranges (a task each, a snapshot
among them), and decoded on the driver instead (`sources.driver`) gives the same lake, and
the `records` files of the first are the tasks' pyarrow files, not Delta's writer's. So does
a stream's, unless it resumed behind a batch ingest.
"""

from __future__ import annotations

import shutil

import pyarrow.parquet as pq

from kraftlake.codec.batch import Batch, scan_batches
from kraftlake.jobs.batch import ingest
from kraftlake.jobs.stream import start_stream
from kraftlake.lake.delta import Lake
from kraftlake.lake.schema import table_names
from kraftlake.sources.files import LogDirIndex
from kraftlake.sources.plan import FRESH, latest, offset_dict, plan
from kraftlake.uris import to_uri
from tests.lake_rows import table_files, table_rows
from tests.logs import OGS

SPLIT = 256 * 1024


def test_decoding_tasks_write_the_records_the_driver_decodes(spark, tmp_path, cfg_factory
                                                              ) -> None:
    tasks = cfg_factory(tmp_path / "tasks", driver_max_bytes=0, split_bytes=SPLIT)
    driver = cfg_factory(tmp_path / "driver", driver_max_bytes=1 << 40, split_bytes=SPLIT)
    index = LogDirIndex(to_uri(OGS)).refresh()
    start = offset_dict(FRESH)
    ranges = plan("c", index, start, latest(index, start), SPLIT)
    assert len(ranges) > 5 and "snapshot" in {r.kind for r in ranges}

    (by_tasks,) = ingest(spark, tasks, [OGS])
    (on_driver,) = ingest(spark, driver, [OGS])
    assert by_tasks.records == on_driver.records > 20_000
    for name in table_names():
        assert table_rows(Lake(tasks.lake), name) == table_rows(Lake(driver.lake), name), name

    files = table_files(Lake(tasks.lake), "records")
    assert len(files) == len([r for r in ranges if r.kind in ("segment", "snapshot")])
    for f in files:
        made_by = pq.read_metadata(tmp_path / "tasks" / "records" / f).created_by
        assert made_by.startswith("parquet-cpp-arrow"), (f, made_by)


def _made_by_pyarrow(lake_dir, files) -> list[bool]:
    return [pq.read_metadata(lake_dir / "records" / f).created_by.startswith("parquet-cpp-arrow")
            for f in files]


def test_a_stream_commits_the_tasks_records_unless_it_resumed_behind_an_ingest(
        spark, tmp_path, cfg_factory) -> None:
    """A stream decoded by the tasks commits their `records` files; resumed behind a batch
    ingest (stream to a third of the log, ingest to two thirds, stream the rest) it drops
    what the lake holds after decoding, writes those records from the frame instead, and
    the lake equals one ingest of the whole log."""
    whole = cfg_factory(tmp_path / "whole", split_bytes=SPLIT)
    ingest(spark, whole, [OGS])
    cfg = cfg_factory(tmp_path / "turns", driver_max_bytes=0, split_bytes=SPLIT)
    log = tmp_path / "grown" / "__cluster_metadata-0"
    log.mkdir(parents=True)
    shutil.copy(OGS.parent / "meta.properties", log.parent)  # the cluster id
    segment = next(OGS.glob("*.log"))
    full = segment.read_bytes()
    batches = [b for b in scan_batches(full) if isinstance(b, Batch)]
    cut = [batches[len(batches) * k // 3].position for k in (1, 2)]

    (log / segment.name).write_bytes(full[:cut[0]])
    start_stream(spark, cfg, log, available_now=True).awaitTermination()
    assert all(_made_by_pyarrow(tmp_path / "turns", table_files(Lake(cfg.lake), "records")))
    (log / segment.name).write_bytes(full[:cut[1]])
    (mid,) = ingest(spark, cfg, [log])
    assert mid.records > 0
    (log / segment.name).write_bytes(full)
    for snapshot in OGS.glob("*.checkpoint"):
        shutil.copy(snapshot, log / snapshot.name)
    start_stream(spark, cfg, log, available_now=True).awaitTermination()

    for name in table_names():
        if name != "ingest_progress":  # one row per run
            assert table_rows(Lake(cfg.lake), name) == table_rows(Lake(whole.lake), name), name
    made = _made_by_pyarrow(tmp_path / "turns", table_files(Lake(cfg.lake), "records"))
    assert not all(made), "the micro-batch behind the ingest wrote its records from the frame"
