"""The cluster tests use the pipeline tests' SparkSession (local[2]) for their references."""

from tests.pipeline.conftest import cfg_factory, spark  # noqa: F401
