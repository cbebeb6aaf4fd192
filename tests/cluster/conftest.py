"""The cluster tests use the suite's SparkSession (local[2]) for their references."""

from tests.pipeline.conftest import cfg_factory  # noqa: F401
