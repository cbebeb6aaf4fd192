"""The lake and the log on an S3-compatible object store (moto's server on loopback), through
`s3a://` URIs and the real CLI: ingest, sql, quality and maintain work there, and the lake
holds what a local ingest of the same log holds."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import deltalake
import pyarrow.fs as pafs
import pytest

from kraftlake.lake.delta import Lake
from tests.cluster.conftest import EXAMPLE, cli_commands
from tests.cluster.servers import s3_server
from tests.conftest import cli_env

CURRENT = ("SELECT topic_name, partition_id, leader, isr, leader_epoch, partition_epoch, "
           "leader_recovery_state FROM partition_current ORDER BY topic_name, partition_id")


@pytest.fixture(scope="module")
def s3(tmp_path_factory):
    work = tmp_path_factory.mktemp("s3")
    with s3_server(work) as env:
        old = {k: os.environ.get(k) for k in env}
        os.environ.update(env)  # pyarrow (uploads here, the CLI's executors) reads these
        try:
            fs = pafs.S3FileSystem(endpoint_override=env["AWS_ENDPOINT_URL"][len("http://"):],
                                   scheme="http", region="us-east-1",
                                   allow_bucket_creation=True)
            fs.create_dir("kraftlake")
            pafs.copy_files(str(EXAMPLE), "kraftlake/logs/real-3-broker",
                            destination_filesystem=fs)
            yield env
        finally:
            for k, v in old.items():
                if v is None:
                    os.environ.pop(k, None)
                else:
                    os.environ[k] = v


def cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "kraftlake", *args, "--master", "local[2]"],
                          capture_output=True, text=True, timeout=900, env=cli_env())


def test_ingest_sql_quality_maintain_on_s3a(s3, spark, local_lake, tmp_path) -> None:
    lake = "s3a://kraftlake/lake"
    res = cli("ingest", "s3a://kraftlake/logs/real-3-broker", "--lake", lake)
    assert res.returncode == 0, res.stderr[-3000:]
    assert "153" in res.stdout  # the example's records

    want = [r.asDict() for r in spark.sql(CURRENT.replace(
        "FROM partition_current", f"FROM delta.`{Lake(local_lake).path('partition_current')}`"))
        .collect()]
    # sql, quality and maintain in one process: one JVM start instead of three (the
    # first, sql's, resolves the s3a jars from the lake's URI alone; ingest's came with
    # its s3a source too). One suite and two tables: every request to the store is a
    # round trip, and a whole quality run or maintenance of every table takes minutes
    # against a local server.
    sql, quality, maintain = cli_commands([
        [*cmd, "--master", "local[2]"] for cmd in (
            ["sql", CURRENT, "--lake", lake, "--format", "json"],
            ["quality", "--lake", lake, "--suite", "partition_current"],
            ["maintain", "--lake", lake, "--table", "records", "--table", "partition_timeline",
             "--retention-hours", "0", "--allow-short-retention"])], tmp_path, cli_env())
    assert sql.returncode == 0, sql.stderr[-3000:]
    assert json.loads(sql.stdout) == want and want

    assert quality.returncode == 0, quality.stdout[-3000:] + quality.stderr[-3000:]
    assert "0 error(s) failed" in quality.stdout

    assert maintain.returncode == 0, maintain.stdout[-3000:] + maintain.stderr[-3000:]
    # compacted and vacuumed, the table still holds every record: read by delta-rs (another
    # Delta engine, and no third JVM start; the CLI's sql on s3a:// was run above)
    records = deltalake.DeltaTable("s3://kraftlake/lake/records", storage_options={
        **{k: v for k, v in s3.items() if k.startswith("AWS_")}, "AWS_ALLOW_HTTP": "true"})
    assert records.to_pyarrow_table(columns=["offset"]).num_rows == 153
