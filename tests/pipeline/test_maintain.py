"""Lake maintenance on a lake built the way scheduled runs and streams build one: a real
metadata log ingested in several increments (a small file per table and increment, merges
leaving tombstones), then compaction, vacuum and checkpoints. The rows must not change, nor
the Delta transaction versions the exactly-once writes rely on, and the next increment must
still add exactly the new records.
"""

from __future__ import annotations

import shutil
from collections import Counter
from pathlib import Path

from click.testing import CliRunner

from kraftlake.config import load_config
from kraftlake.jobs.batch import ingest
from kraftlake.lake.apps import app_id_for
from kraftlake.lake.delta import Lake
from kraftlake.lake.deltalog import add_actions
from kraftlake.lake.maintain import count_rows, lake_app_ids, maintain
from kraftlake.lake.schema import table_names, table_schema
from kraftlake.sources.files import read_cluster_id
from tests.lake_rows import table_files, table_operations, table_rows
from tests.logs import BUSY, BUSY_CUTS, growing_copy

STREAM_CUTS = (7, 11, 12)  # the stream's log grows to offsets 64, 71, 131, then 188
DATA = ["records", "quarantine", "partition_changes", "topics", "brokers", "configs",
        "partition_timeline", "partition_events", "snapshot_reconciliation",
        "partition_current"]  # ingest_progress differs by design: one row per run


def every_row(lake: Lake) -> dict[str, list[str]]:
    return {n: table_rows(lake, n) for n in table_names()}


def referenced(lake: Lake, name: str) -> set[str]:
    """Data files of the table's current snapshot, relative to the table's directory."""
    return table_files(lake, name)


def files_per_partition(lake: Lake, name: str) -> Counter:
    """Files of the current snapshot per partition directory ("" = unpartitioned)."""
    return Counter(p.rsplit("/", 1)[0] if "/" in p else "" for p in referenced(lake, name))


def files_on_disk(lake: Lake, name: str) -> set[str]:
    """Data files in the table's directory, referenced or not."""
    root = Path(lake.path(name))
    return {str(p.relative_to(root)) for p in root.rglob("*.parquet")
            if "_delta_log" not in p.parts}


def txn_versions(lake: Lake, app_id: str) -> dict[str, int | None]:
    return {n: lake.txn_version(n, app_id) for n in table_names()}


def has_checkpoint(lake: Lake, name: str) -> bool:
    """The table's current version is checkpointed (`<version>.checkpoint.parquet`)."""
    v = lake.version(name)
    return (Path(lake.path(name)) / "_delta_log" / f"{v:020d}.checkpoint.parquet").is_file()


def test_maintain_keeps_rows_and_transactions_and_the_next_increment(
        spark, tmp_path, cfg_factory, busy_once, busy_runs):
    grown, seg, full, batches = growing_copy(BUSY, tmp_path / "grown")
    seg.write_bytes(full[:batches[BUSY_CUTS[-1]].position])  # the log as the last run saw it
    # the scheduled runs, each on a longer log: a copy of the lake they left (`busy_runs`)
    cfg = cfg_factory(busy_runs.copy(tmp_path / "lake"))
    lake = Lake(cfg.lake)
    for i, res in zip(BUSY_CUTS, busy_runs.results, strict=True):
        assert res.end_offset == batches[i].base_offset
    app_id = app_id_for(read_cluster_id(seg.parent), "ingest")
    assert lake_app_ids(lake) == [app_id]
    before = every_row(lake)
    parts_before = {n: files_per_partition(lake, n) for n in table_names()}
    txns = txn_versions(lake, app_id)
    assert txns["records"] == txns["ingest_progress"] == res.version == len(BUSY_CUTS) - 1
    assert sum(parts_before["records"].values()) >= len(BUSY_CUTS)

    # default retention: compaction and checkpoints, but nothing is old enough to vacuum
    done = {r.table: r for r in maintain(lake)}
    assert set(done) == {n for n in table_names() if lake.exists(n)}  # those written to
    for name, r in done.items():
        parts = files_per_partition(lake, name)
        assert r.error is None, (name, r.error)
        assert (r.files_before, r.files_after) == (sum(parts_before[name].values()),
                                                   sum(parts.values())), name
        assert set(parts) == set(parts_before[name]), name
        assert all(n == 1 for n in parts.values()), (name, parts)  # the tables are tiny
        if r.files_before > len(parts):
            assert r.files_after < r.files_before, name
        assert r.vacuumed == 0, name
        # no file is older than the retention: vacuum is not even started
        assert not any(op.startswith("VACUUM") for op in table_operations(lake, name)), name
        assert has_checkpoint(lake, name), name
        assert files_on_disk(lake, name) >= referenced(lake, name)
    assert done["records"].files_after == 1 and done["records"].rows == 131
    assert len(files_on_disk(lake, "records")) == done["records"].files_before + 1
    assert every_row(lake) == before
    assert txn_versions(lake, app_id) == txns

    # a short retention is refused unless asked for, then deletes every tombstoned file
    cli = ["maintain", "--lake", str(lake.root), "--retention-hours", "0"]
    from kraftlake.cli import main
    refused = CliRunner().invoke(main, cli)
    assert refused.exit_code == 2 and "--allow-short-retention" in refused.output
    assert len(files_on_disk(lake, "records")) == done["records"].files_before + 1
    out = CliRunner().invoke(main, [*cli, "--allow-short-retention"])
    assert out.exit_code == 0, out.output
    assert "partition_timeline" in out.output
    for name in done:
        assert files_on_disk(lake, name) == referenced(lake, name), name
        assert "VACUUM END" in table_operations(lake, name), name
    assert every_row(lake) == before
    assert txn_versions(lake, app_id) == txns

    # the next scheduled run adds exactly the new records; a re-run adds nothing
    seg.write_bytes(full)
    (nxt,) = ingest(spark, cfg, [grown])
    assert (nxt.start_offset, nxt.end_offset, nxt.records) == (131, 188, 57)
    for name in DATA:
        assert table_rows(lake, name) == table_rows(busy_once, name), name
    versions = {n: lake.version(n) for n in DATA}
    (again,) = ingest(spark, cfg, [grown])
    assert again.version == -1
    assert {n: lake.version(n) for n in DATA} == versions


def test_the_stream_compacts_every_n_micro_batches(spark, tmp_path, cfg_factory, busy_once):
    """With `stream.compact_every: 2` the stream compacts and checkpoints after every second
    micro-batch, inside its foreachBatch, and never vacuums. The micro-batch count runs on
    across restarts (Spark's batch ids). Its tables still equal a one-shot ingest, and every
    table's transaction version is the last micro-batch's."""
    from kraftlake.jobs.stream import start_stream

    _, seg, full, batches = growing_copy(BUSY, tmp_path / "kafka")
    cfg = cfg_factory(tmp_path / "lake", compact_every=2)
    seen = []
    for end in [batches[i].position for i in STREAM_CUTS] + [len(full)]:
        seg.write_bytes(full[:end])  # one available-now run per growth: one micro-batch
        q = start_stream(spark, cfg, seg.parent, available_now=True, on_batch=seen.append)
        q.awaitTermination(600)
        assert q.exception() is None and not q.isActive
    assert [r.end_offset for r in seen] == [64, 71, 131, 188]
    assert [r.maintenance_errors for r in seen] == [[]] * 4

    lake = Lake(cfg.lake)
    ops = table_operations(lake, "records")
    assert ops.count("OPTIMIZE") == 2  # after the second and the fourth micro-batch
    assert not any(op.startswith("VACUUM") for op in ops)
    assert sum(files_per_partition(lake, "records").values()) == 1
    for name in table_names():
        assert not lake.exists(name) or has_checkpoint(lake, name), name
    app_id = app_id_for(read_cluster_id(seg.parent), "stream")
    for name in ("records", "partition_timeline", "partition_current", "ingest_progress"):
        assert lake.txn_version(name, app_id) == seen[-1].version == 3, name
    for name in DATA:
        assert table_rows(lake, name) == table_rows(busy_once, name), name


def test_compact_every_comes_from_the_config(tmp_path):
    conf = tmp_path / "k.yaml"
    conf.write_text("")  # an empty file: the built-in default
    assert load_config(conf).compact_every == 100
    conf.write_text("stream:\n  compact_every: 0\n")
    assert load_config(conf).compact_every == 0
    conf.write_text("stream:\n  compact_every: 7\n")
    assert load_config(conf).compact_every == 7


# How kraftlake up to a88c476 partitioned the tables an increment now replaces per cluster
# (their schemas' `partition_by` then); `incidents` had no `is_open` column.
OLD_LAYOUT = {"partition_timeline": ["is_current"], "partition_intervals": ["is_open"],
              "incidents": [], "partition_current": [], "topics": [], "ingest_progress": []}
# columns a table gained since: dropped to write it as an older kraftlake did
NEWER_COLUMNS = {"incidents": ["is_open"], "ingest_progress": ["newest_record_ts"]}


def _as_an_older_kraftlake_wrote_it(spark, lake: Lake) -> None:
    """Rewrite the tables of `lake` into the old layout, each by one overwrite (Delta keeps
    their transaction ids across it, as it kept the old lakes' own)."""
    for name, parts in OLD_LAYOUT.items():
        rows = lake.read(spark, name).drop(*NEWER_COLUMNS.get(name, []))
        (rows.write.format("delta").mode("overwrite").option("overwriteSchema", "true")
         .partitionBy(*parts).save(lake.path(name)))


def test_upgrade_rewrites_a_lake_of_the_old_layout_and_the_next_increment_goes_on(
        spark, tmp_path, cfg_factory, busy_once, busy_runs):
    """A lake an older kraftlake laid out (cluster-less partitions, no `incidents.is_open`,
    no `ingest_progress.newest_record_ts`, which the upgrade derives as a run would have):
    the next scheduled run is refused before its first commit with the command that
    rewrites it; `kraftlake upgrade` rewrites the six tables, keeping every row and every
    transaction id; the run then goes on as on a lake that never was old, and a second
    upgrade has nothing to do."""
    from kraftlake.cli import main

    grown, seg, _, _ = growing_copy(BUSY, tmp_path / "grown")
    cfg = cfg_factory(busy_runs.copy(tmp_path / "lake"))
    lake = Lake(cfg.lake)
    app_id = app_id_for(read_cluster_id(seg.parent), "ingest")
    before, txns = every_row(lake), txn_versions(lake, app_id)
    _as_an_older_kraftlake_wrote_it(spark, lake)
    assert {n: list(lake.partition_columns(n)) for n in OLD_LAYOUT} == OLD_LAYOUT
    versions = {n: lake.version(n) for n in table_names()}

    refused = CliRunner().invoke(main, ["ingest", str(grown), "--lake", str(lake.root)])
    assert refused.exit_code == 2, refused.output
    assert f"run `kraftlake upgrade --lake {lake.root}`" in " ".join(refused.output.split())
    assert {n: lake.version(n) for n in table_names()} == versions
    # a stream is refused alike, by its micro-batch: the line says why, not that "an
    # exception was raised by the Python Proxy" (on a copy: its plan would stay open)
    other = shutil.copytree(lake.root, tmp_path / "old-lake")
    stream = CliRunner().invoke(main, ["stream", str(grown), "--lake", str(other),
                                       "--available-now"])
    assert stream.exit_code == 2, stream.output
    said = " ".join(stream.output.split())
    assert f"run `kraftlake upgrade --lake {other}`" in said and "Python Proxy" not in said

    out = CliRunner().invoke(main, ["upgrade", "--lake", str(lake.root)],
                             env={"COLUMNS": "200"})
    assert out.exit_code == 0, out.output
    for name in OLD_LAYOUT:
        assert name in out.output
        assert lake.partition_columns(name) == table_schema(name).partition_by, name
    assert every_row(lake) == before
    assert txn_versions(lake, app_id) == txns
    again = CliRunner().invoke(main, ["upgrade", "--lake", str(lake.root)])
    assert again.exit_code == 0 and "nothing to do" in again.output, again.output

    (nxt,) = ingest(spark, cfg, [grown])
    assert (nxt.start_offset, nxt.end_offset) == (131, 188)
    for name in [*DATA, "partition_intervals", "incidents"]:
        assert table_rows(lake, name) == table_rows(busy_once, name), name


def test_a_table_whose_files_lack_statistics_is_counted_and_compacted(spark, tmp_path):
    """Rows are counted from the record counts the Delta log holds with each file; a file
    logged without them (another writer's, with Delta's statistics off) is counted by
    Spark instead, and such a table is compacted like any other: the rows stay."""
    lake = Lake(tmp_path / "lake", spark)
    path = lake.path("records")
    spark.range(5).coalesce(1).write.format("delta").save(path)
    spark.conf.set("spark.databricks.delta.stats.collect", "false")
    try:
        spark.range(5, 8).coalesce(1).write.format("delta").mode("append").save(path)
    finally:
        spark.conf.unset("spark.databricks.delta.stats.collect")
    logged = add_actions(path).column("num_records").to_pylist()
    assert sorted(logged, key=lambda n: n is None) == [5, None]  # the fallback is taken
    assert count_rows(lake, "records") == count_rows(lake, "records", 0) + 3 == 8
    (done,) = maintain(lake, ["records"], vacuum=False)
    assert (done.error, done.rows, done.files_before, done.files_after) == (None, 8, 2, 1)
    assert sorted(r.id for r in lake.read(spark, "records").collect()) == list(range(8))
