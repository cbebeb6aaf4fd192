"""The lake as Delta users see it: exactly once across job kinds, time travel, Delta streams of
new events, and tables another Delta engine reads.

Real segment bytes (batches of a real controller's log, appended in steps), a real
SparkSession with delta-spark, and delta-rs as the independent reader.
"""

from __future__ import annotations

import shutil
import time
from pathlib import Path

import deltalake
import pytest
from pyspark.errors import StreamingQueryException

from kraftlake.jobs import increment
from kraftlake.jobs.batch import ingest
from kraftlake.jobs.increment import cluster_progress
from kraftlake.jobs.stream import start_stream
from kraftlake.lake.apps import app_id_for
from kraftlake.lake.delta import Lake
from kraftlake.lake.schema import table_names
from tests.lake_rows import row_count, table_rows
from tests.lakes import TABLES
from tests.logs import NOMAN, GrowingLog

CID = "engine-test"


def _stream_now(spark, cfg, log_dir) -> list:
    """One `kraftlake stream --available-now` run; its increments."""
    seen: list = []
    q = start_stream(spark, cfg, log_dir, available_now=True, on_batch=seen.append)
    q.awaitTermination(600)
    assert q.exception() is None and not q.isActive
    return seen


@pytest.fixture(scope="module")
def whole(spark, tmp_path_factory, cfg_factory):
    """The log of the exactly-once tests, whole, and a lake of one batch ingest of it."""
    root = tmp_path_factory.mktemp("whole")
    log = GrowingLog(root / "kafka", NOMAN / "00000000000000000000.log", CID)
    log.write(0, 900)
    cfg = cfg_factory(root / "lake")
    ingest(spark, cfg, [log.dir])
    return Lake(cfg.lake)


@pytest.fixture(scope="module")
def streamed(spark, tmp_path_factory, cfg_factory) -> tuple[Path, int]:
    """(lake, its end offset) of one `kraftlake stream --available-now` run on the first
    300 batches: how both exactly-once tests below begin. Run once, not once in each (a
    warm small increment costs 7-10 CPU s); each test writes the same bytes again and goes
    on from a copy of the lake, its stream checkpoint included (the checkpoint and the lake
    hold offsets and file names, not paths)."""
    root = tmp_path_factory.mktemp("streamed")
    log = GrowingLog(root / "kafka", NOMAN / "00000000000000000000.log", CID)
    end = log.write(0, 300)
    cfg = cfg_factory(root / "lake")
    assert [r.end_offset for r in _stream_now(spark, cfg, log.dir)][-1] == end
    return root / "lake", end


def _from_streamed(streamed: tuple[Path, int], dest: Path) -> tuple[GrowingLog, Path, int]:
    """(the log, the lake, the log's end offset) as the `streamed` run left them, in `dest`."""
    lake, end = streamed
    log = GrowingLog(dest / "kafka", NOMAN / "00000000000000000000.log", CID)
    assert log.write(0, 300) == end
    return log, Path(shutil.copytree(lake, dest / "lake")), end


def test_stream_then_ingest_then_stream(spark, tmp_path, cfg_factory, whole,
                                        streamed) -> None:
    """The sequence that lost records when both job kinds shared one Delta app id: every
    command succeeds and the lake ends equal to one batch ingest of the whole log."""
    log, path, end1 = _from_streamed(streamed, tmp_path)  # the first stream run
    cfg = cfg_factory(path)
    lake = Lake(cfg.lake)
    end2 = log.write(300, 600)
    (res,) = ingest(spark, cfg, [log.dir])
    assert (res.start_offset, res.end_offset) == (end1, end2)
    end3 = log.write(600, 900)
    later = _stream_now(spark, cfg, log.dir)
    assert later[-1].end_offset == end3
    assert cluster_progress(lake, CID)["end_offset"] == end3
    for name in TABLES:
        assert table_rows(lake, name) == table_rows(whole, name), name


def test_ingest_finishes_a_killed_streams_increment(spark, tmp_path, cfg_factory,
                                                   whole, streamed) -> None:
    """A stream stopped right after committing `records` of a micro-batch leaves those rows
    in the lake; an ingest run next finishes that micro-batch (same app id, version and
    range) before its own, so nothing is lost and nothing is there twice."""
    log, path, _ = _from_streamed(streamed, tmp_path)  # a first stream run
    cfg = cfg_factory(path)
    lake = Lake(cfg.lake)
    log.write(300, 600)
    increment.FAIL_AFTER = "records"
    try:
        q = start_stream(spark, cfg, log.dir, available_now=True)
        with pytest.raises(StreamingQueryException, match="stopped after the commit of records"):
            q.awaitTermination(600)
    finally:
        increment.FAIL_AFTER = None
    stream_app = app_id_for(CID, "stream")
    assert lake.committed("records", stream_app, 1)
    assert not lake.committed("ingest_progress", stream_app, 1)
    log.write(600, 900)
    ingest(spark, cfg, [log.dir])
    assert lake.committed("ingest_progress", stream_app, 1)
    for name in TABLES:
        assert table_rows(lake, name) == table_rows(whole, name), name


def test_sql_time_travel(spark, tmp_path, cfg_factory) -> None:
    """`VERSION AS OF` / `TIMESTAMP AS OF` on the catalog tables `kraftlake sql` registers
    give the table as an earlier increment left it."""
    log = GrowingLog(tmp_path / "kafka", NOMAN / "00000000000000000000.log", CID)
    cfg = cfg_factory(tmp_path / "lake")
    lake = Lake(cfg.lake)
    log.write(0, 300)
    ingest(spark, cfg, [log.dir])
    v1 = lake.version("records")
    n1 = row_count(lake.path("records"))
    ts1 = spark.sql(f"DESCRIBE HISTORY delta.`{lake.path('records')}`").where(
        f"version = {v1}").first().timestamp
    time.sleep(1.1)  # commit timestamps have millisecond resolution; keep them apart
    log.write(300, 600)
    ingest(spark, cfg, [log.dir])
    n2 = row_count(lake.path("records"))
    assert n2 > n1
    # what `kraftlake sql` registers for a statement naming `records` (cli/catalog.py):
    # that table alone; registering every table, as this did, cost 1.85 CPU s against 0.11
    lake.register_views(spark, ["records"])
    assert spark.sql(f"SELECT count(*) FROM records VERSION AS OF {v1}").first()[0] == n1
    assert spark.sql(f"SELECT count(*) FROM records TIMESTAMP AS OF '{ts1}'").first()[0] == n1
    assert spark.sql("SELECT count(*) FROM records").first()[0] == n2


def test_events_as_a_delta_stream(spark, tmp_path, cfg_factory) -> None:
    """How alerting consumes kraftlake: `readStream.format("delta")` on `partition_events`
    delivers the events each new increment commits, and only those."""
    log = GrowingLog(tmp_path / "kafka", NOMAN / "00000000000000000000.log", CID)
    cfg = cfg_factory(tmp_path / "lake")
    lake = Lake(cfg.lake)
    log.write(0, 1000)  # NOMAN's partition changes are in batches 961, 962, 1504, 1839
    ingest(spark, cfg, [log.dir])
    got: list = []

    def consume() -> None:
        q = (spark.readStream.format("delta").load(lake.path("partition_events"))
             .writeStream.foreachBatch(lambda df, _bid: got.extend(df.collect()))
             .option("checkpointLocation", str(tmp_path / "alerts"))
             .trigger(availableNow=True).start())
        q.awaitTermination(300)
        assert q.exception() is None

    consume()
    first = row_count(lake.path("partition_events"))
    assert len(got) == first > 0  # a new consumer reads everything once ...
    old = {(r.topic_id, r.partition_id, r.offset, r.event_type) for r in got}
    log.write(1000, len(log.batches))
    ingest(spark, cfg, [log.dir])
    got.clear()
    consume()
    # ... and a restarted one exactly what was committed since
    new = row_count(lake.path("partition_events")) - first
    assert new > 0 and len(got) == new
    assert not {(r.topic_id, r.partition_id, r.offset, r.event_type) for r in got} & old


def test_delta_rs_reads_every_table(spark, whole) -> None:
    """Every table the pipeline wrote is a standard Delta table: delta-rs, whose reader
    refuses table features it does not support, reads the same rows Spark does."""
    for name in table_names():
        if not whole.exists(name):
            continue
        dt = deltalake.DeltaTable(whole.path(name))
        assert dt.to_pyarrow_table().num_rows == whole.read(spark, name).count(), name
