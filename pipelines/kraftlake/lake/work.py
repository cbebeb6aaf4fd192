"""Work frames: intermediate results of one increment, computed once and read back as files.

The increment reuses a few frames (the decoded source, committed records, topic names, and
partition changes where they are not written as their table's own files,
`Lake.write_files`) in several stages. Each is written once by Spark's executors as parquet under
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
one node too, which Spark runs without a file to write, list or read. `frames` computes
several at once, and on the driver in one Spark job: an increment's Spark jobs are what
its fixed cost is counted in (and what Spark's listeners and UI show per micro-batch).
"""

from __future__ import annotations

import pyarrow as pa
import pyarrow.compute as pc
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql import types as T
from pyspark.sql.pandas.types import to_arrow_schema

from ..uris import join
from .delta import chunked
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
        self.arrow: dict[str, pa.Table] = {}  # `local`: each frame's rows, as collected

    def frame(self, name: str, df: DataFrame) -> DataFrame:
        """Compute `df` once into `<dir>/<name>` and return it as a scan of those files
        (`local`: as a local relation of its rows, which stay in `arrow`)."""
        return self.frames({name: df})[0][name]

    def frames(self, frames: dict[str, DataFrame], answers: dict[str, DataFrame] | None = None
               ) -> tuple[dict[str, DataFrame], dict[str, pa.Table]]:
        """`frame` of each of `frames`, and the rows of each of `answers` (a few rows the
        driver needs) as Arrow. `local`: all of them in one Spark job."""
        answers = answers or {}
        if not self.local:
            return ({name: self._written(name, df) for name, df in frames.items()},
                    {name: df.toArrow() for name, df in answers.items()})
        got = collect_together({**frames, **answers})
        self.arrow.update({name: got[name] for name in frames})
        return ({name: self.spark.createDataFrame(got[name], df.schema)
                 for name, df in frames.items()},
                {name: got[name] for name in answers})

    def _written(self, name: str, df: DataFrame) -> DataFrame:
        path = join(self.dir, name)
        df.write.mode("overwrite").parquet(path)
        return self.spark.read.schema(df.schema).parquet(path)

    def clear(self) -> None:
        """Remove this app id's work directories (this increment's and any killed run's)."""
        HadoopFS(self.spark, self.app_dir).delete(self.app_dir)


def collect_together(frames: dict[str, DataFrame]) -> dict[str, pa.Table]:
    """Every frame's rows as Arrow (each as its own `toArrow()` would give them), from one
    Spark job: the frames become one union, each frame's rows a struct in a column of its
    own (the other columns null), split again on the driver. One frame needs no union: its
    own `toArrow()`."""
    if len(frames) == 1:
        return {name: chunked(df.toArrow()) for name, df in frames.items()}
    # every field nullable: the other frames' rows hold a null struct, whose fields Arrow
    # then holds as nulls too (split off below, each frame gets its own schema back)
    parts = [df.select(F.lit(i).alias("_frame"), F.struct(*[df[c] for c in df.columns]).cast(
        T.StructType([T.StructField(f.name, f.dataType) for f in df.schema])).alias(f"_{i}"))
             for i, df in enumerate(frames.values())]
    union = parts[0]
    for p in parts[1:]:
        union = union.unionByName(p, allowMissingColumns=True)
    rows = union.toArrow()
    tz = union.sparkSession.conf.get("spark.sql.session.timeZone")
    out = {}
    for i, (name, df) in enumerate(frames.items()):
        col = rows.filter(pc.equal(rows["_frame"], i)).column(f"_{i}")
        got = pa.Table.from_struct_array(col.combine_chunks()) if len(col) else None
        schema = to_arrow_schema(df.schema, timezone=tz)
        out[name] = schema.empty_table() if got is None else got.cast(schema)
    return out
