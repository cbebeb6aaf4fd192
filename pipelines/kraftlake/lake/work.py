"""Work frames: intermediate results of one increment, computed once and read back as files.

The increment reuses a few frames (committed records, topic names, the fold's output) in
several stages. Each is written once by Spark's executors as parquet under
`<lake>/_kraftlake/work/<app id>/<version>/<name>` and read back as a plain scan, rather
than `persist()`ed:

* a persisted frame keeps its whole logical plan, and PySpark analyses that plan again at
  every transformation built on it. The fold's plan is thousands of nodes and event
  detection makes hundreds of transformations on it, so building (not running) detection
  cost ~7 s per increment, whatever its size. A scan of files is a plan of one node;
* files need no `unpersist()` on every error path, and a killed run's files are simply
  overwritten by the re-run (the rows are a function of the planned input).

They live under the lake's root, so they are wherever the lake is (local disk, s3a://),
reachable by every executor. `clear()` removes them once the increment has committed.

A small increment decoded on the driver (`sources.driver`) keeps its frames on the driver
instead (`local`): each is collected once as Arrow and becomes a local relation, a plan of
one node too, which Spark runs without a file to write, list or read.
"""

from __future__ import annotations

from pyspark.sql import DataFrame, SparkSession

from ..uris import join
from .hadoopfs import HadoopFS
from .schema import KRAFTLAKE_DIR


class Work:
    """The work directory of one increment (app id, version) of a lake."""

    def __init__(self, spark: SparkSession, lake_root: str, app_id: str, version: int,
                 local: bool = False) -> None:
        safe = app_id.replace(":", "_").replace("/", "_")
        self.spark, self.local = spark, local
        self.app_dir = join(lake_root, KRAFTLAKE_DIR, "work", safe)
        self.dir = join(self.app_dir, f"{version:012d}")

    def frame(self, name: str, df: DataFrame) -> DataFrame:
        """Compute `df` once into `<dir>/<name>` and return it as a scan of those files
        (`local`: as a local relation of its rows)."""
        if self.local:
            return self.spark.createDataFrame(df.toArrow(), df.schema)
        path = join(self.dir, name)
        df.write.mode("overwrite").parquet(path)
        return self.spark.read.schema(df.schema).parquet(path)

    def clear(self) -> None:
        """Remove this app id's work directories (this increment's and any killed run's)."""
        HadoopFS(self.spark, self.app_dir).delete(self.app_dir)
