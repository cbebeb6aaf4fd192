"""The lake and the log on an S3-compatible object store (moto's server on loopback), through
`s3a://` URIs and the real CLI: ingest, sql, quality and maintain work there, and the lake
holds what a local ingest of the same log holds; a store that refuses a write in the middle
of an ingest ends it with one line, and the next run completes the lake; a stream of the
log directories a pattern matches there holds the same rows."""

from __future__ import annotations

import json
import re

import deltalake
import pyarrow.fs as pafs
import pytest
import yaml

from kraftlake.lake.delta import Lake
from kraftlake.lake.deltalog import LakeLog
from kraftlake.lake.schema import table_names
from kraftlake.lake.schema import table_rows as table_rows_of
from tests.cluster.conftest import EXAMPLE, cli_commands
from tests.cluster.servers import FaultyStore, s3_server, store_fs
from tests.conftest import cli_env
from tests.lake_rows import table_rows

CURRENT = ("SELECT topic_name, partition_id, leader, isr, leader_epoch, partition_epoch, "
           "leader_recovery_state FROM partition_current ORDER BY topic_name, partition_id")


@pytest.fixture(scope="module")
def s3(tmp_path_factory):
    work = tmp_path_factory.mktemp("s3")
    with s3_server(work) as env, pytest.MonkeyPatch.context() as mp:
        for k, v in env.items():  # pyarrow (uploads here, the CLI's executors) reads these
            mp.setenv(k, v)
        fs = store_fs(env)
        fs.create_dir("kraftlake")
        pafs.copy_files(str(EXAMPLE), "kraftlake/logs/real-3-broker", destination_filesystem=fs)
        yield env


def test_ingest_sql_quality_maintain_on_s3a(s3, spark, local_lake, tmp_path) -> None:
    """Every command on the store, in one process (one JVM start: each is a round trip per
    request against a local server, and a JVM start costs more than the commands). The
    store first refuses one write in the middle of the ingest, as one whose credentials were
    revoked would (403 AccessDenied for the first commit of `incidents`, after other tables
    of the increment committed; both ingests as a large increment, whose tasks write gold's
    files on the store): that ingest ends with exit status 1 and one line naming the
    store's error code, no traceback. The next one, the store answering again, completes the
    lake, which then equals a local ingest of the same log table for table; sql, quality
    (one suite) and maintain (two tables) work on it. No file is written as a temporary
    one renamed into place (`kraftlake.jvm.S3CheckpointFileManager`: Delta's checksums and
    the stream's checkpoint are one PUT each)."""
    lake = "s3a://kraftlake/lake"
    refused = "/kraftlake/lake/incidents/_delta_log/"
    want = [r.asDict() for r in spark.sql(CURRENT.replace(
        "FROM partition_current", f"FROM delta.`{Lake(local_lake).path('partition_current')}`"))
        .collect()]
    # the ingests take a large increment's path (Spark's tasks decode, fold and write the
    # timeline's, events' and intervals' files onto the store themselves, through pyarrow)
    large = tmp_path / "large.yaml"
    large.write_text(yaml.safe_dump({"ingest": {"driver_fold_max_records": 0,
                                                "driver_max_bytes": 0}}))
    ingest = ["ingest", "s3a://kraftlake/logs/real-3-broker", "--lake", lake, "--conf",
              str(large)]
    with FaultyStore(s3["AWS_ENDPOINT_URL"], lambda m, p: m == "PUT" and refused in p) as store:
        failed, done, streamed, sql, quality, maintain = cli_commands([
            [*cmd, "--master", "local[2]"] for cmd in (
                ingest, ingest,
                ["stream", "s3a://kraftlake/log*/*", "--lake", "s3a://kraftlake/streamed",
                 "--available-now"],
                ["sql", CURRENT, "--lake", lake, "--format", "json"],
                ["quality", "--lake", lake, "--suite", "partition_current"],
                ["maintain", "--lake", lake, "--table", "records", "--table",
                 "partition_timeline", "--retention-hours", "0", "--allow-short-retention"])],
            tmp_path, cli_env(AWS_ENDPOINT_URL=store.url))
    assert [m for m, _p in store.failed] == ["PUT"]
    # Spark's rename-based writer names its temporary files `.<name>.<uuid>.tmp`
    renamed = [p for m, p in store.seen if m == "PUT" and re.search(r"/\.[^/]+\.tmp$", p)]
    assert not renamed and any(p.endswith(".crc") for _m, p in store.seen), renamed[:3]
    assert any("/_kraftlake/checkpoints/" in p and "/offsets/" in p
               for m, p in store.seen if m == "PUT"), "the stream wrote no offsets here"
    assert failed.returncode == 1, failed.stderr[-3000:]
    err = failed.stderr.strip().splitlines()
    assert err[-1].startswith("Error: ") and "Traceback" not in failed.stderr, failed.stderr
    assert "AccessDenied" in err[-1] and "403" in err[-1], err[-1]
    assert done.returncode == 0, done.stderr[-3000:]
    assert "153" in done.stdout  # the example's records
    for name in ("records", "partition_changes", "partition_timeline", "partition_events",
                 "partition_current", "partition_intervals", "incidents", "quarantine",
                 "topics", "brokers", "configs"):
        assert _s3_rows(s3, f"{lake}/{name}") == table_rows(Lake(local_lake), name), name
    # a stream of the log directories a pattern matches on the store: the same rows
    assert streamed.returncode == 0, streamed.stderr[-3000:]
    assert "streaming s3a://kraftlake/logs/real-3-broker/__cluster_metadata-0 (" in \
        streamed.stderr, streamed.stderr
    for name in ("records", "partition_events", "partition_current", "incidents"):
        assert _s3_rows(s3, f"s3a://kraftlake/streamed/{name}") == table_rows(
            Lake(local_lake), name), name

    assert sql.returncode == 0, sql.stderr[-3000:]
    assert json.loads(sql.stdout) == want and want
    assert quality.returncode == 0, quality.stdout[-3000:] + quality.stderr[-3000:]
    assert "0 error(s) failed" in quality.stdout
    assert maintain.returncode == 0, maintain.stdout[-3000:] + maintain.stderr[-3000:]
    # compacted and vacuumed, the table still holds every record (read by delta-rs)
    records = deltalake.DeltaTable("s3://kraftlake/lake/records", storage_options=_options(s3))
    assert records.to_pyarrow_table(columns=["offset"]).num_rows == 153


def _s3_rows(s3: dict[str, str], uri: str) -> list[str]:
    """`table_rows` of the Delta table at an `s3a://` URI, read by delta-rs from the store."""
    if not deltalake.DeltaTable.is_deltatable(uri.replace("s3a://", "s3://"), _options(s3)):
        return []
    rows = deltalake.DeltaTable(uri.replace("s3a://", "s3://"), storage_options=_options(s3)
                                ).to_pyarrow_table().to_pylist(maps_as_pydicts="strict")
    return sorted(json.dumps(r, default=str, sort_keys=True) for r in rows)


def _options(s3: dict[str, str]) -> dict[str, str]:
    return {**{k: v for k, v in s3.items() if k.startswith("AWS_")}, "AWS_ALLOW_HTTP": "true"}


def test_the_delta_log_reader_reads_a_lake_on_s3a(s3, spark, local_lake) -> None:
    """`lake.deltalog` (delta-rs, no JVM) on an `s3a://` lake, a copy of the local one on
    the store: the progress rows Spark reads locally, every table's version and layout."""
    fs = store_fs(s3)
    pafs.copy_files(str(local_lake), "kraftlake/copied-lake", destination_filesystem=fs)
    log, local = LakeLog("s3a://kraftlake/copied-lake"), Lake(local_lake, spark)
    want = table_rows_of(local.read(None, "ingest_progress").toArrow(), "ingest_progress")
    assert sorted(map(repr, log.progress_rows())) == sorted(map(repr, want.to_pylist()))
    for name in table_names():
        dt = log.table(name)
        assert (None if dt is None else dt.version()) == local.version(name), name
        assert log.layout_problem(name) is None, name
