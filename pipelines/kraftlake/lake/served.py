"""A lake read through a `kraftlake serve` endpoint (`kraftlake.endpoint`): its tables are the
endpoint's catalog tables, read by a Spark Connect client session."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession


class ServedLake:
    """The lake behind a `kraftlake serve` endpoint, read through its catalog tables:
    what `Lake.read` is to a local session (`kraftlake timeline` and `report` read through
    either)."""

    def __init__(self, url: str) -> None:
        self.root = url

    def read(self, spark: SparkSession | None, name: str) -> DataFrame:
        if spark is None:
            raise ValueError("a served lake is read through its client session")
        return spark.table(name)
