"""The lake's writes on real Delta tables: a slice replaced in one commit (what an increment
does to a cluster's open rows), merges, and the refusal of a table laid out otherwise."""

from __future__ import annotations

import json

import pyarrow as pa
import pytest

from kraftlake.config import load_config
from kraftlake.jobs.batch import ingest
from kraftlake.lake.conflicts import SliceMovedError
from kraftlake.lake.delta import Lake, LakeLayoutError
from kraftlake.lake.schema import table_names, table_rows, table_schema
from tests.conftest import REPO
from tests.lake_rows import table_dicts, table_files


def _current_row(cluster: str, topic: str, partition: int) -> dict:
    row: dict = {}
    for f in table_schema("partition_current").arrow:
        if pa.types.is_list(f.type):
            row[f.name] = []
        elif pa.types.is_integer(f.type):
            row[f.name] = 0
        elif pa.types.is_boolean(f.type):
            row[f.name] = False
        elif pa.types.is_timestamp(f.type):
            row[f.name] = None if f.nullable else 0
        else:
            row[f.name] = None if f.nullable else "x"
    row.update(cluster_id=cluster, topic_id=topic, partition_id=partition, topic_name="t",
               leader=1, isr=[1], replicas=[1])
    return row


def test_upsert_with_only_deletions(spark, tmp_path) -> None:
    lake = Lake(tmp_path)
    schema = table_schema("partition_current").arrow
    rows = [_current_row("c", "AAAAAAAAAAAAAAAAAAAAAQ", p) for p in range(3)]
    lake.append("partition_current", pa.Table.from_pylist(rows, schema=schema))
    keys = spark.createDataFrame([("c", "AAAAAAAAAAAAAAAAAAAAAQ", 1)],
                                 "cluster_id string, topic_id string, partition_id int")
    nothing = schema.empty_table()
    assert lake.upsert("partition_current", nothing, "app", 1, delete_keys=keys)
    left = lake.read_arrow("partition_current").column("partition_id").to_pylist()
    assert sorted(left) == [0, 2]


def _timeline_row(cluster: str, offset: int, current: bool) -> dict:
    row = _current_row(cluster, "AAAAAAAAAAAAAAAAAAAAAQ", 0)
    row = {f.name: row.get(f.name) for f in table_schema("partition_timeline").arrow}
    row.update(valid_from_offset=offset, seq=0, is_current=current,
               valid_to_offset=None if current else offset + 1)
    return row


def _timeline(spark, rows: list[dict]):
    return spark.createDataFrame(pa.Table.from_pylist(
        rows, schema=table_schema("partition_timeline").arrow))


def test_a_replacement_swaps_one_clusters_slice_and_adds_the_closed_rows_in_one_commit(
        spark, tmp_path) -> None:
    """Cluster a's current state at offset 1 is closed by a new one at offset 5: one commit
    removes a's current partition alone (no file read or rewritten: Delta copied no row),
    adds the new current state there and the closed one to a's history. Cluster b's rows
    and a's older history keep their files. The same transaction id again commits nothing."""
    lake = Lake(tmp_path, spark)
    lake.append("partition_timeline", _timeline(spark, [
        _timeline_row("a", 0, False), _timeline_row("a", 1, True),
        _timeline_row("b", 0, True)]))
    before = table_files(lake, "partition_timeline")
    new = _timeline(spark, [{**_timeline_row("a", 1, False), "valid_to_offset": 5},
                            _timeline_row("a", 5, True)])
    assert lake.replace("partition_timeline", new, {"cluster_id": "a", "is_current": True},
                        "app", 1, read_version=0)
    assert lake.version("partition_timeline") == 1
    got = sorted((r["cluster_id"], r["valid_from_offset"], r["valid_to_offset"],
                  r["is_current"]) for r in table_dicts(lake.path("partition_timeline")))
    assert got == [("a", 0, 1, False), ("a", 1, 5, False), ("a", 5, None, True),
                   ("b", 0, None, True)]
    after = table_files(lake, "partition_timeline")
    gone = before - after
    assert gone and all(f.startswith("cluster_id=a/is_current=true/") for f in gone)
    assert {f.split("/")[0] + "/" + f.split("/")[1] for f in after - before} == {
        "cluster_id=a/is_current=true", "cluster_id=a/is_current=false"}
    assert lake.commit_of("partition_timeline", "app", 1)[0] == 1
    metrics = lake.commit_of("partition_timeline", "app", 1)[1]
    assert metrics["numOutputRows"] == 2
    assert not lake.replace("partition_timeline", new, {"cluster_id": "a", "is_current": True},
                            "app", 1, read_version=0)
    assert lake.version("partition_timeline") == 1


def test_a_replacement_after_another_jobs_commit_into_its_slice_is_refused(
        spark, tmp_path) -> None:
    """A slice read at version 0 and changed at version 1 by another job of the same cluster
    is not replaced (that job's rows would be lost); a commit of another cluster's job, or
    into the cluster's history, does not stand in the way."""
    lake = Lake(tmp_path, spark)
    lake.append("partition_timeline", _timeline(spark, [_timeline_row("a", 1, True)]))
    lake.append("partition_timeline", _timeline(spark, [_timeline_row("b", 3, True)]), "b", 1)
    lake.append("partition_timeline", _timeline(spark, [_timeline_row("a", 0, False)]), "x", 1)
    new = _timeline(spark, [_timeline_row("a", 5, True)])
    where = {"cluster_id": "a", "is_current": True}
    assert lake.replace("partition_timeline", new, where, "a", 1, read_version=0)
    lake.append("partition_timeline", _timeline(spark, [_timeline_row("a", 7, True)]), "y", 1)
    with pytest.raises(SliceMovedError, match=r"is_current=true \(version 4\) after this one"):
        lake.replace("partition_timeline", new, where, "a", 2, read_version=3)
    assert lake.version("partition_timeline") == 4


def test_timeline_rows_land_in_their_is_current_partition(spark, tmp_path) -> None:
    """`is_current` partitions the table: closed and current states live in different files."""
    lake = Lake(tmp_path)
    schema = table_schema("partition_timeline").arrow
    rows = [_timeline_row("c", i, current) for i, current in enumerate([False, False, True])]
    lake.append("partition_timeline", pa.Table.from_pylist(rows, schema=schema))
    files = table_files(lake, "partition_timeline")
    assert {("is_current=true" in f) for f in files} == {True, False}
    got = lake.read_arrow("partition_timeline", "is_current")
    assert got.column("valid_from_offset").to_pylist() == [2]
    seen = lake.read(spark, "partition_timeline").select("valid_from_offset", "is_current")
    assert sorted(tuple(r) for r in seen.collect()) == [(0, False), (1, False), (2, True)]


def test_a_table_of_another_layout_is_refused(spark, tmp_path) -> None:
    """A timeline written unpartitioned (kraftlake before is_current) is not written on."""
    schema = table_schema("partition_timeline").spark
    spark.createDataFrame([], schema).write.format("delta").save(
        str(tmp_path / "partition_timeline"))
    with pytest.raises(LakeLayoutError, match="older version: run `kraftlake upgrade --lake"):
        Lake(tmp_path).append("partition_timeline", spark.createDataFrame([], schema))


def test_an_ingest_into_a_lake_of_another_layout_is_refused_before_its_first_commit(
        spark, tmp_path) -> None:
    """A lake whose intervals an older kraftlake wrote unpartitioned (before `is_open`):
    the increment is refused with the remedy when it pins the lake, before it reads the
    table (a failing read midway named a missing column) or commits anything."""
    schema = table_schema("partition_intervals").spark
    spark.createDataFrame([], schema).write.format("delta").save(
        str(tmp_path / "partition_intervals"))
    with pytest.raises(LakeLayoutError, match="run `kraftlake upgrade --lake"):
        ingest(spark, load_config(lake=str(tmp_path)), [REPO / "examples" / "real-3-broker"])
    lake = Lake(tmp_path)
    assert [n for n in table_names() if lake.exists(n)] == ["partition_intervals"]


def test_merges_committing_on_several_threads_keep_their_own_transaction_ids(
        spark, tmp_path) -> None:
    """Concurrent merges into different tables (an increment's second commit wave): each
    table records the transaction id of the thread that merged into it, none another's.
    The id is a session setting, so threads sharing one session would swap them."""
    from concurrent.futures import ThreadPoolExecutor

    lake = Lake(tmp_path, spark)
    tables = ["partition_current", "partition_timeline"]
    for name in tables:  # merges need rows in the target, else they are appends
        row = {f.name: _current_row("c", "AAAAAAAAAAAAAAAAAAAAAQ", 0).get(f.name)
               for f in table_schema(name).arrow}
        lake.append(name, pa.Table.from_pylist([row], schema=table_schema(name).arrow))
    keys = spark.createDataFrame([("c", "AAAAAAAAAAAAAAAAAAAAAQ", 9)],
                                 "cluster_id string, topic_id string, partition_id int")

    def merge_all(name: str) -> None:
        for v in range(1, 6):
            assert lake.upsert(name, table_schema(name).arrow.empty_table(), f"app-{name}", v,
                               delete_keys=keys)

    with ThreadPoolExecutor(2, initializer=lake.own_session) as pool:
        list(pool.map(merge_all, tables))
    for name in tables:
        assert lake.txn_version(name, f"app-{name}") == 5
        other = next(t for t in tables if t != name)
        assert lake.txn_version(name, f"app-{other}") is None


def test_a_table_another_writer_creates_later_is_seen(spark, tmp_path) -> None:
    """A process that looked at a table while another one was writing its first commit
    sees the table once that commit lands (the other writer here: delta-rs)."""
    import deltalake

    lake = Lake(tmp_path, spark)
    (tmp_path / "brokers" / "_delta_log").mkdir(parents=True)  # a first write under way
    assert not lake.exists("brokers")
    deltalake.write_deltalake(str(tmp_path / "brokers"),
                              table_schema("brokers").arrow.empty_table())
    assert lake.exists("brokers") and lake.version("brokers") == 0


def test_an_append_commits_what_deltas_writer_would_as_another_reader_sees_it(
        spark, tmp_path) -> None:
    """Appends into an existing table go through a Delta transaction kraftlake opens
    (`lake.transaction`); delta-rs, another Delta implementation, reads back the rows, the app's
    transaction version, and a WRITE commit with the user metadata, as it does for the
    writer's own appends."""
    import deltalake

    lake = Lake(tmp_path, spark)
    schema = table_schema("partition_current").arrow
    rows = [_current_row("c", "AAAAAAAAAAAAAAAAAAAAAQ", p) for p in range(3)]
    assert lake.append("partition_current", pa.Table.from_pylist(rows[:1], schema=schema),
                       "app", 1)  # creates the table (the same transaction)
    assert lake.append("partition_current", pa.Table.from_pylist(rows[1:], schema=schema),
                       "app", 2, metadata={"kraftlake.events": "7"})
    assert not lake.append("partition_current", pa.Table.from_pylist(rows, schema=schema),
                           "app", 2)  # committed already
    dt = deltalake.DeltaTable(str(tmp_path / "partition_current"))
    assert dt.version() == 1 and dt.transaction_version("app") == 2
    assert sorted(dt.to_pyarrow_table().column("partition_id").to_pylist()) == [0, 1, 2]
    newest = dt.history(1)[0]
    assert newest["operation"] == "WRITE" and newest["isBlindAppend"] is True
    assert json.loads(newest["userMetadata"]) == {
        "kraftlake.app_id": "app", "kraftlake.version": "2", "kraftlake.events": "7"}
    assert newest["operationMetrics"]["numOutputRows"] == "2"
    assert lake.commit_metadata("partition_current", "app", 2)["kraftlake.events"] == "7"


def test_an_append_racing_a_commit_of_the_same_increment_is_written_once(
        spark, tmp_path) -> None:
    """Two runs of one increment appending at once (read the same snapshot, both see the
    increment not committed): Delta refuses the second commit because the first holds the
    app id the second registered as read (`ConcurrentTransactionException`), and the lake's
    retry then finds the increment committed. The rows are in the table once."""
    from delta.exceptions import ConcurrentTransactionException

    from kraftlake.lake.delta import conform
    from kraftlake.lake.transaction import commit_files

    lake = Lake(tmp_path, spark)
    schema = table_schema("partition_current").arrow
    row = pa.Table.from_pylist([_current_row("c", "AAAAAAAAAAAAAAAAAAAAAQ", 0)], schema=schema)
    lake.append("partition_current", row, "app", 1)
    stale = lake._snapshot("partition_current")  # what the losing run read
    assert lake.append("partition_current", row, "app", 2)  # the winner
    frame = conform(spark.createDataFrame(row), "partition_current")
    with pytest.raises(ConcurrentTransactionException):
        commit_files(spark, lake.path("partition_current"), frame, stale, "app", 2, "{}",
                     schema=table_schema("partition_current").spark)
    assert not lake.append("partition_current", row, "app", 2)
    assert lake.read_arrow("partition_current").num_rows == 2


def test_a_table_with_other_columns_is_refused(spark, tmp_path) -> None:
    """A table whose columns differ from this kraftlake's (written by another version) is
    not appended to: a transaction's append would not compare them itself."""
    schema = table_schema("brokers").spark
    spark.createDataFrame([], schema).drop("rack").write.format("delta").save(
        str(tmp_path / "brokers"))
    with pytest.raises(LakeLayoutError, match=r"has the columns .* run `kraftlake upgrade"):
        Lake(tmp_path).append("brokers", spark.createDataFrame([], schema), "app", 1)


def _log_actions(lake: Lake, name: str, version: int, kind: str) -> list[dict]:
    """The `kind` actions (add, remove) of one commit of table `name`, from its log file."""
    log = lake.path(name).removeprefix("file:") + f"/_delta_log/{version:020d}.json"
    with open(log) as fh:
        return [a[kind] for a in map(json.loads, fh) if kind in a]


def test_replacements_remove_the_files_the_last_one_added_and_a_marker_keeps_them(
        spark, tmp_path) -> None:
    """A process replacing a slice again removes exactly the files its previous replacement
    added there (held, not looked up), whatever another cluster committed in between; a
    marker commit (no rows) removes nothing and leaves the next replacement the same files."""
    lake = Lake(tmp_path, spark)
    where = {"cluster_id": "a", "is_current": True}
    lake.append("partition_timeline", _timeline(spark, [_timeline_row("a", 1, True),
                                                        _timeline_row("b", 1, True)]))
    assert lake.replace("partition_timeline", _timeline(spark, [_timeline_row("a", 2, True)]),
                        where, "app", 1, read_version=0)
    added = {a["path"] for a in _log_actions(lake, "partition_timeline", 1, "add")}
    lake.append("partition_timeline", _timeline(spark, [_timeline_row("b", 3, False)]), "b", 1)
    assert lake.replace("partition_timeline", None, where, "app", 2, read_version=2)
    assert _log_actions(lake, "partition_timeline", 3, "remove") == []
    assert lake.replace("partition_timeline", _timeline(spark, [_timeline_row("a", 4, True)]),
                        where, "app", 3, read_version=3)
    assert {r["path"] for r in _log_actions(lake, "partition_timeline", 4, "remove")} == added
    got = sorted((r["cluster_id"], r["valid_from_offset"]) for r in
                 table_dicts(lake.path("partition_timeline")))
    assert got == [("a", 4), ("b", 1), ("b", 3)]


def test_a_compaction_of_the_slice_after_the_held_files_fails_the_commit_and_it_is_made_again(
        spark, tmp_path) -> None:
    """An OPTIMIZE of the slice (`maintain`, a stream's compaction) rewrites the files this
    process holds as the slice's: the next replacement must not remove the old files and
    leave the compacted copy of their rows. Delta's conflict check refuses the commit
    started on the held files' snapshot, and the attempt made again on the latest snapshot
    removes the compacted file: the slice holds the new rows alone."""
    from delta.tables import DeltaTable

    lake = Lake(tmp_path, spark)
    where = {"cluster_id": "a", "is_current": True}
    lake.append("partition_timeline", _timeline(spark, [_timeline_row("a", 1, True)]))
    for v, offset in ((1, 2), (2, 3)):  # two files in a's current partition, held
        assert lake.replace("partition_timeline", _timeline(spark, [
            _timeline_row("a", offset, True), _timeline_row("a", offset + 100, True)]),
            where, "app", v, read_version=v - 1)
    DeltaTable.forPath(spark, lake.path("partition_timeline")).optimize().where(
        "cluster_id = 'a' AND is_current = true").executeCompaction()
    assert lake.version("partition_timeline") == 3
    assert lake.replace("partition_timeline", _timeline(spark, [_timeline_row("a", 9, True)]),
                        where, "app", 3, read_version=3)
    got = sorted(r["valid_from_offset"] for r in table_dicts(lake.path("partition_timeline")))
    assert got == [9]


def _files_delta_holds(spark, lake: Lake, name: str) -> list[tuple]:
    """(path, partition values, size) of every file of the table's latest snapshot, as
    delta-spark's own state reconstruction (`Snapshot.allFiles`) lists them."""
    from pyspark.sql import DataFrame

    log = spark._jvm.org.apache.spark.sql.delta.DeltaLog.forTable(
        spark._jsparkSession, lake.path(name))
    files = DataFrame(log.update(False, spark._jvm.scala.Option.empty(),
                                 spark._jvm.scala.Option.empty()).allFiles().toDF(), spark)
    return sorted((r.path, dict(r.partitionValues), r.size) for r in
                  files.select("path", "partitionValues", "size").collect())


def test_a_process_holding_no_files_lists_the_slices_files_as_delta_does(
        spark, tmp_path) -> None:
    """A replacement with no held file list (a new process, a conflict a moment ago) has
    delta-rs list the slice's files on the latest snapshot (`deltalog.slice_adds`) instead
    of Delta's state reconstruction: the same files, whatever compacted, checkpointed or
    escaped them (a cluster id that is not a plain word, as `ingest --cluster-id` may
    give), and the replacement removes exactly them."""
    from delta.tables import DeltaTable

    from kraftlake.lake import delta
    from kraftlake.lake.deltalog import slice_adds
    from kraftlake.lake.transaction import slice_values

    lake = Lake(tmp_path, spark)
    odd = "a b/c:%=é"
    lake.append("partition_timeline", _timeline(spark, [
        _timeline_row(c, o, cur) for c in ("a", odd) for o, cur in ((1, False), (2, True))]))
    for v, c in enumerate(("a", odd, "a"), start=1):
        assert lake.replace("partition_timeline", _timeline(spark, [
            _timeline_row(c, 10 * v, True), _timeline_row(c, 10 * v - 5, False)]),
            {"cluster_id": c, "is_current": True}, f"app-{c}", v,
            read_version=lake.version("partition_timeline"))
    DeltaTable.forPath(spark, lake.path("partition_timeline")).optimize().where(
        "is_current = false").executeCompaction()
    lake._snapshot("partition_timeline").deltaLog().checkpoint()
    tag = lake.tag("partition_timeline")
    assert tag is not None
    holds = _files_delta_holds(spark, lake, "partition_timeline")
    listed = []
    for c in ("a", odd):
        for current in (True, False):
            values = slice_values({"cluster_id": c, "is_current": current})
            listed += [(f["path"], f["partitionValues"], f["size"])
                       for f in slice_adds(lake.path("partition_timeline"), tag, values)]
    assert sorted(listed) == holds and len(holds) >= 4

    delta._SLICES.clear()  # what a new process holds
    old = {f["path"] for f in slice_adds(lake.path("partition_timeline"), tag, slice_values(
        {"cluster_id": odd, "is_current": True}))}
    assert lake.replace("partition_timeline", _timeline(spark, [_timeline_row(odd, 99, True)]),
                        {"cluster_id": odd, "is_current": True}, f"app-{odd}", 9,
                        read_version=tag[1])
    removed = {r["path"] for r in _log_actions(lake, "partition_timeline", tag[1] + 1, "remove")}
    assert removed == old
    got = sorted((r["cluster_id"], r["valid_from_offset"]) for r in
                 table_dicts(lake.path("partition_timeline")) if r["is_current"])
    assert got == [("a", 30), (odd, 99)]


def test_a_transactions_files_carry_the_statistics_deltas_writer_writes(
        spark, tmp_path) -> None:
    """The same rows written by Delta's own writer (an overwrite with `replaceWhere`) and by
    kraftlake's transaction (`Lake.replace`) carry the same statistics: readers skip files
    by them, so a file of either must be skipped alike."""
    rows = [_timeline_row("a", 1, True), {**_timeline_row("a", 0, False), "valid_to_offset": 1}]
    stats = {}
    for how in ("writer", "kraftlake"):
        lake = Lake(tmp_path / how, spark)
        lake.append("partition_timeline", _timeline(spark, [_timeline_row("a", 0, True)]))
        where = {"cluster_id": "a", "is_current": True}
        if how == "kraftlake":
            assert lake.replace("partition_timeline", _timeline(spark, rows), where, "app", 1,
                                read_version=0)
        else:
            spark.conf.set("spark.databricks.delta.replaceWhere.constraintCheck.enabled",
                           "false")
            (_timeline(spark, rows).write.format("delta").mode("overwrite")
             .option("replaceWhere", "cluster_id = 'a' AND is_current = true")
             .save(lake.path("partition_timeline")))
        stats[how] = sorted((json.dumps(a["partitionValues"], sort_keys=True), a["stats"])
                            for a in _log_actions(lake, "partition_timeline", 1, "add"))
    assert len(stats["writer"]) == 2 and stats["kraftlake"] == stats["writer"]


def _created(lake: Lake, name: str) -> dict[str, dict]:
    """What the first commit of table `name` declares: its protocol, its metadata less what
    differs per table (the id, the time), and its operation and parameters."""
    (meta,) = _log_actions(lake, name, 0, "metaData")
    (protocol,) = _log_actions(lake, name, 0, "protocol")
    (info,) = _log_actions(lake, name, 0, "commitInfo")
    return {"protocol": protocol,
            "metaData": {k: v for k, v in meta.items() if k not in ("id", "createdTime")},
            "operation": {k: info[k] for k in ("operation", "operationParameters",
                                               "isBlindAppend")}}


def test_a_table_kraftlake_creates_is_the_one_deltas_writer_creates(spark, tmp_path) -> None:
    """A table's first write creates it in kraftlake's own transaction (`NewTable`): every
    table of the lake, created so with one row and by Delta's writer with the same row
    (a write without a transaction id still takes the writer), gets the same protocol,
    schema, partition columns and properties, and a WRITE naming the same partition
    columns; delta-rs, another Delta implementation, reads the two alike."""
    import deltalake

    for name in table_names():
        schema = table_schema(name)
        row = pa.Table.from_pylist([_a_row(schema.arrow)], schema=schema.arrow)
        made = {}
        for how in ("writer", "kraftlake"):
            lake = Lake(tmp_path / how, spark)
            if how == "writer":
                assert lake.append(name, row)
            else:
                assert lake.append(name, row, "app", 0)
            made[how] = _created(lake, name)
            dt = deltalake.DeltaTable(lake.path(name).removeprefix("file:"))
            assert dt.metadata().partition_columns == list(schema.partition_by), name
            assert dt.to_pyarrow_table().num_rows == 1, name
        assert made["kraftlake"] == made["writer"], name


def _a_row(schema: pa.Schema) -> dict:
    """A row of every column of `schema` set (the null-free values of its types)."""
    def value(t: pa.DataType):
        if pa.types.is_list(t):
            return [value(t.value_type)]
        if pa.types.is_struct(t):
            return {f.name: value(f.type) for f in t}
        if pa.types.is_map(t):
            return [("k", value(t.item_type))]
        if pa.types.is_boolean(t):
            return True
        if pa.types.is_integer(t) or pa.types.is_timestamp(t):
            return 1
        if pa.types.is_floating(t):
            return 1.0
        if pa.types.is_binary(t):
            return b"x"
        return "x"
    return {f.name: value(f.type) for f in schema}


def test_a_session_giving_new_tables_features_has_deltas_writer_create_them(
        spark, tmp_path) -> None:
    """Where the session's defaults would give a new table features kraftlake's transaction
    does not honour, Delta's writer creates the table, with them. Column mapping here:
    its data files name columns by the physical names Delta chose, which only the writer
    knows to use, so a file written by the driver would read back as nulls."""
    key = "spark.databricks.delta.properties.defaults.columnMapping.mode"
    lake = Lake(tmp_path, spark)
    schema = table_schema("brokers").arrow
    row = pa.Table.from_pylist([_a_row(schema)], schema=schema)
    spark.conf.set(key, "name")
    try:
        assert lake.append("brokers", row, "app", 0)
    finally:
        spark.conf.unset(key)
    created = _created(lake, "brokers")
    assert created["protocol"]["minReaderVersion"] >= 2, created
    assert created["metaData"]["configuration"]["delta.columnMapping.mode"] == "name"
    assert lake.read_arrow("brokers").to_pylist() == row.to_pylist()


def test_the_tables_of_a_lake_write_their_checkpoints_on_different_increments(
        spark, tmp_path) -> None:
    """Every table gets its own checkpoint interval when created: tables an increment
    commits together reach the same versions together, and one interval for all would make
    every one of them write a checkpoint inside the same increment's commits."""
    from kraftlake.lake.delta import CHECKPOINT_INTERVALS

    assert set(CHECKPOINT_INTERVALS) == set(table_names())
    intervals = sorted(CHECKPOINT_INTERVALS.values())
    assert all(all(a % b for b in intervals if b < a) for a in intervals)  # no multiples
    lake = Lake(tmp_path, spark)
    lake.append("brokers", table_schema("brokers").arrow.empty_table(), "app", 1)
    conf = _log_actions(lake, "brokers", 0, "metaData")[0]["configuration"]
    assert conf["delta.checkpointInterval"] == str(CHECKPOINT_INTERVALS["brokers"])


def _stats_by_partition(lake: Lake, name: str, version: int) -> dict[str, dict]:
    return {json.dumps(a["partitionValues"], sort_keys=True): json.loads(a["stats"])
            for a in _log_actions(lake, name, version, "add")}


def _writer_and_arrow_stats(spark, root, name: str, rows: pa.Table
                            ) -> tuple[dict[str, dict], dict[str, dict]]:
    """The statistics of `rows` appended to a new table `name` by Delta's writer (one file
    per partition) and by the driver's Arrow files (`lake.arrow_files`)."""
    from kraftlake.lake.delta import from_arrow

    got = []
    for how in ("writer", "arrow"):
        lake = Lake(root / how, spark)
        lake.append(name, table_schema(name).arrow.empty_table(), "create", 0)
        if how == "arrow":
            assert lake.append(name, rows, "app", 1)
        else:
            (from_arrow(spark, name, rows).coalesce(1).write.format("delta").mode("append")
             .save(lake.path(name)))
        got.append(_stats_by_partition(lake, name, 1))
    return got[0], got[1]


def test_the_drivers_arrow_files_carry_the_statistics_deltas_writer_writes(
        spark, tmp_path) -> None:
    """A small increment's rows are written as parquet by the driver, with statistics this
    project computes (`lake.arrow_files`): for every table of a real lake (a real
    controller's log, ingested), the same rows written by Delta's own writer carry the same
    statistics, file by file (one per partition), strings longer than the 32 characters
    Delta keeps (app ids) included."""
    real = Lake(tmp_path / "real", spark)
    ingest(spark, load_config(lake=str(real.root)), [REPO / "examples" / "real-3-broker"])
    compared = []
    for name in table_names():
        rows = real.read_arrow(name) if real.exists(name) else None
        if rows is None or not rows.num_rows:
            continue
        writer, arrow = _writer_and_arrow_stats(spark, tmp_path / name, name, rows)
        assert arrow == writer, name
        compared.append(name)
    assert {"records", "partition_events", "partition_timeline", "ingest_progress",
            "partition_current", "topics"} <= set(compared)


def test_the_files_a_kernel_task_writes_carry_the_statistics_deltas_writer_writes(
        spark, tmp_path) -> None:
    """A large increment's kernel tasks write the timeline's, events' and intervals' rows
    as they come, a batch at a time, into the tables' directories (`arrow_files.TableFiles`),
    and the commit adds those files (`lake.written`). For each of those tables of a real
    lake, the rows written so in batches of 7 carry, file by file (one per partition), the
    statistics Delta's writer writes for the same rows; read back from the files before the
    commit, and from the table after it, they are the rows written."""
    from kraftlake.fold.kernel import TABLES

    real = Lake(tmp_path / "real", spark)
    ingest(spark, load_config(lake=str(real.root)), [REPO / "examples" / "real-3-broker"])
    for name in TABLES.values():
        rows = table_rows(real.read_arrow(name), name)
        assert rows.num_rows > 7, name
        lake = Lake(tmp_path / "tasks" / name, spark)
        lake.append(name, table_schema(name).arrow.empty_table(), "create", 0)
        target = lake.files_target(name, str(tmp_path / "work"))
        assert target.direct and target.uri == lake.path(name)
        files = target.files()
        for batch in rows.to_batches(max_chunksize=7):
            files.write(pa.Table.from_batches([batch]))
        written = target.written(files.close())
        assert _sorted_rows(written.files_frame(spark).toArrow(), name) == \
            _sorted_rows(rows, name), name
        assert lake.append(name, written, "app", 1)
        writer, _arrow = _writer_and_arrow_stats(spark, tmp_path / "writer" / name, name, rows)
        assert _stats_by_partition(lake, name, 1) == writer, name
        assert _sorted_rows(lake.read_arrow(name), name) == _sorted_rows(rows, name), name


def _sorted_rows(rows: pa.Table, name: str) -> list[str]:
    return sorted(json.dumps(r, default=str, sort_keys=True)
                  for r in table_rows(rows, name).to_pylist())


def test_string_statistics_are_truncated_as_deltas_writer_truncates_them(
        spark, tmp_path) -> None:
    """Strings longer than Delta's 32-character prefix, in UTF-16 units as Java counts them:
    two-unit characters, a pair that straddles the cut, characters at and above the
    tie-breakers Delta appends to a truncated maximum. The driver's statistics equal the
    writer's for each."""
    names = ["é" * 40, "\U0001f600" * 20, "a" * 31 + "\U0001f600b", "\uffff" * 40,
             "b" * 32 + "\U0010ffff" * 3 + "c", "short", "z" * 33]
    base = pa.Table.from_pylist(
        [{"cluster_id": "c", "topic_id": "t", "partition_id": 0, "topic_name": n,
          "offset": i, "seq": 0, "event_type": "x"} for i, n in enumerate(names)])
    rows = pa.Table.from_arrays(
        [base.column(f.name).cast(f.type) if f.name in base.column_names
         else pa.nulls(base.num_rows, f.type) for f in table_schema("partition_events").arrow],
        schema=table_schema("partition_events").arrow)
    for i, name in enumerate(names):
        one = rows.slice(i, 1)
        writer, arrow = _writer_and_arrow_stats(spark, tmp_path / str(i), "partition_events",
                                                one)
        assert arrow == writer, repr(name)
