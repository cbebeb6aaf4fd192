"""`kraftlake ingest` and `kraftlake stream` on a real Spark standalone cluster (a master and
two workers on 127.0.0.1, each its own JVM and work directory): the executors decode and
write in other processes than the driver, and the lakes equal a `local[2]` ingest, table for
table."""

from __future__ import annotations

import subprocess
import sys

import pytest

from kraftlake.lake.delta import Lake
from kraftlake.lake.schema import table_names
from tests.cluster.conftest import EXAMPLE
from tests.cluster.servers import spark_standalone
from tests.conftest import cli_env
from tests.lake_rows import table_rows

# ingest_progress and quality_results record runs, not the log
TABLES = [t for t in table_names() if t not in ("ingest_progress", "quality_results")]


@pytest.fixture(scope="module")
def master(tmp_path_factory):
    with spark_standalone(tmp_path_factory.mktemp("standalone")) as url:
        yield url


@pytest.mark.parametrize("job", [["ingest"], ["stream", "--available-now"]])
def test_a_cluster_lake_equals_a_local_one(master, job, tmp_path, local_lake) -> None:
    lake = tmp_path / "cluster-lake"
    res = subprocess.run([sys.executable, "-m", "kraftlake", job[0], str(EXAMPLE), *job[1:],
                          "--lake", str(lake), "--master", master],
                         capture_output=True, text=True, timeout=900,
                         env=cli_env(SPARK_LOCAL_IP="127.0.0.1"))
    assert res.returncode == 0, res.stderr[-3000:]
    for name in TABLES:
        assert table_rows(Lake(lake), name) == table_rows(Lake(local_lake), name), name
