"""A large increment's source decoded by Spark's tasks that write the rows themselves
(`sources.decode_tasks`): the work frame every stage reads, and `records`' data files.

The same real log ingested that way, split into several ranges (a task each, a snapshot
among them), and decoded on the driver instead (`sources.driver`) gives the same lake, and
the `records` files of the first are the tasks' pyarrow files, not Delta's writer's.
"""

from __future__ import annotations

import pyarrow.parquet as pq

from kraftlake.jobs.batch import ingest
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
