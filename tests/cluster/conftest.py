"""The cluster tests compare with the suite's SparkSession (local[2]): one local ingest of
the example log is the reference every cluster and object-store lake must equal."""

from pathlib import Path

import pytest

from kraftlake.jobs.batch import ingest
from tests.conftest import REPO
from tests.pipeline.conftest import cfg_factory  # noqa: F401

EXAMPLE = REPO / "examples" / "real-3-broker"


@pytest.fixture(scope="package")
def local_lake(spark, cfg_factory, tmp_path_factory) -> Path:  # noqa: F811
    """`examples/real-3-broker` ingested on `local[2]` (built once for the package)."""
    cfg = cfg_factory(tmp_path_factory.mktemp("local") / "lake")
    ingest(spark, cfg, [EXAMPLE])
    return Path(cfg.lake)
