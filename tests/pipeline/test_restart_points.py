"""An increment stopped right after any of its table commits is completed exactly by a re-run.

test_kill_restart.py kills real processes at random instants, which lands where it lands;
this test visits chosen commit points deterministically (`increment.FAIL_AFTER` stops the
increment right after that table's commit, leaving the lake as a kill there would). The
second increment of the log deletes a topic, re-creates it under the same name and shrinks
an ISR, so gold depends on the topics alive before the increment and on the seeds: the two
states a re-run must not read back from its own earlier commits.

At every stop, a reader of the lake's consistent view (`Lake.consistent`, what `kraftlake
sql`, `timeline`, `report` and `quality` read) sees none of the stopped increment: every
table as the increment before it left it, whichever tables the stopped one had committed.
"""

from __future__ import annotations

import json
import shutil
import time

import pytest
from click.testing import CliRunner

from kraftlake.cli import main
from kraftlake.cli.catalog import LakeCatalog
from kraftlake.codec.batch import Batch, scan_batches
from kraftlake.codec.logfiles import records_of_batch
from kraftlake.jobs import increment
from kraftlake.jobs.batch import ingest
from kraftlake.lake.delta import Lake
from kraftlake.lake.schema import table_names
from tests.lake_rows import frame_rows, table_rows
from tests.pipeline.test_ingest_growth import _cut_copy, _recreated_topic_log

TABLES = [t for t in table_names() if t != "quality_results"]
# each point leaves a different set of tables committed (see increment.ORDER); the second
# wave's tables commit concurrently, so a stop there leaves what the other threads had
# committed by then, and on one thread (the second value) a deterministic half of the wave
POINTS = [("records", None), ("partition_timeline", None), ("partition_timeline", 1),
          ("partition_intervals", None), ("partition_current", None), ("topics", None)]


@pytest.fixture(scope="module")
def setup(spark, tmp_path_factory, cfg_factory) -> dict:
    """The grown log, a lake holding its first increment, the clean two-run lake and its
    tables' rows (read once here: every parameter compares its lake with them, and nothing
    writes to the clean lake)."""
    base = tmp_path_factory.mktemp("restart")
    log, _ = _recreated_topic_log(base / "log")
    seg = log / "__cluster_metadata-0" / "00000000000000000000.log"
    batches = [b for b in scan_batches(seg.read_bytes()) if isinstance(b, Batch)]
    removal = next(i for i, b in enumerate(batches)
                   if any(r.type == "RemoveTopicRecord" for r in records_of_batch(b)))
    grown, grown_seg, full, _ = _cut_copy(log, base / "grown", removal)
    first = base / "first"
    ingest(spark, cfg_factory(first), [grown])
    grown_seg.write_bytes(full)
    clean = base / "clean"
    shutil.copytree(first, clean)
    (res,) = ingest(spark, cfg_factory(clean), [grown])
    assert res.start_offset == batches[removal].base_offset
    assert res.event_counts.get("partition_deleted") == 1
    rows = {name: table_rows(Lake(clean), name) for name in TABLES}
    return {"grown": grown, "first": first, "clean": clean, "res": res, "rows": rows}


def _left_cached(spark, before: set[int], wait: float = 120.0) -> list[str]:
    """The RDDs cached since `before` that stay cached: Delta's cache of table states
    ("Delta Table State #n") is Delta's to manage, and in the JVM both test workers share
    (tests/shared_jvm.py) the other worker's tests cache and release frames of their own
    meanwhile, so a new RDD counts only if it is still cached `wait` seconds later."""
    def new() -> dict[int, str]:
        return {k: str(r.name()) for k, r in spark.sparkContext._jsc.getPersistentRDDs().items()
                if k not in before and not str(r.name()).startswith("Delta Table State")}

    left = new()
    deadline = time.monotonic() + wait
    while left and time.monotonic() < deadline:
        time.sleep(1)
        still = new()
        left = {k: n for k, n in left.items() if k in still}
    return list(left.values())


@pytest.mark.parametrize(("point", "threads"), POINTS,
                         ids=[f"{p}-{t or 'threads'}" for p, t in POINTS])
def test_a_rerun_after_a_stop_at_each_commit_point_equals_a_clean_run(
        spark, tmp_path, cfg_factory, setup, point, threads, monkeypatch):
    lake = tmp_path / "lake"
    shutil.copytree(setup["first"], lake)
    monkeypatch.setattr(increment, "FAIL_AFTER", point)
    if threads:
        monkeypatch.setattr(increment, "COMMIT_THREADS", threads)
    before = set(spark.sparkContext._jsc.getPersistentRDDs().keys())
    with pytest.raises(increment.InjectedFailure):
        ingest(spark, cfg_factory(lake), [setup["grown"]])
    # a failed increment leaves nothing of its own cached in the executors (a stream retries
    # forever)
    assert _left_cached(spark, before) == []
    # a table the increment leaves unchanged gets no commit (increment.write): the point is
    # committed exactly when the clean run committed it
    app_id = "kraftlake-ingest:recreated-topic"
    assert Lake(lake).committed(point, app_id, 1) == Lake(setup["clean"]).committed(point,
                                                                                   app_id, 1)
    assert not Lake(lake).committed("ingest_progress", app_id, 1)
    wave = {t: Lake(lake).committed(t, app_id, 1) for t in increment.TOGETHER}
    if threads == 1:  # the tables after the point in the wave's order had not started
        clean = {t for t in increment.TOGETHER if Lake(setup["clean"]).committed(t, app_id, 1)}
        assert wave[point] and {t for t in clean if not wave[t]}, (wave, clean)
    print(f"stopped after {point}: wave tables committed {wave}")
    # a reader sees none of the stopped increment: every table as the first one left it
    first = {name: table_rows(Lake(setup["first"]), name) for name in TABLES}
    seen = Lake(lake, spark).consistent()
    assert seen.cut is not None and seen.cut.held == {"recreated-topic"}
    for name in TABLES:
        assert frame_rows(name, seen.read(spark, name)) == first[name], name
    counted = CliRunner().invoke(main, ["sql", "--lake", str(lake), "--format", "json",
                                        "SELECT count(*) AS n FROM partition_events"])
    assert json.loads(counted.output) == [{"n": len(first["partition_events"])}]
    # the catalog a `kraftlake serve` endpoint refreshes: its views move on once the
    # increment completes, not before
    catalog = LakeCatalog(spark, Lake(lake, spark))
    catalog.prepare(None)
    def n_events() -> int:  # the view as the catalog has it now
        return spark.table("partition_events").count()

    assert n_events() == len(first["partition_events"])
    monkeypatch.setattr(increment, "FAIL_AFTER", None)

    (res,) = ingest(spark, cfg_factory(lake), [setup["grown"]])
    want = setup["res"]
    assert (res.records, res.changes, res.events, res.event_counts) == \
        (want.records, want.changes, want.events, want.event_counts)
    for name in TABLES:
        assert table_rows(Lake(lake), name) == setup["rows"][name], name
    done = Lake(lake, spark).consistent()
    assert done.cut is not None and done.cut.held == set()
    events = done.read(spark, "partition_events")
    assert frame_rows("partition_events", events) == setup["rows"]["partition_events"]
    assert n_events() == len(first["partition_events"])  # until the catalog is refreshed
    catalog.prepare(None)
    assert n_events() == len(setup["rows"]["partition_events"])
