"""Staging: how a table's new rows travel from Spark to delta-rs without the driver holding them.

delta-rs writes on the driver, Spark computes on the executors. Collecting a DataFrame
(`toArrow`) puts every new row of a table in driver memory at once, which is what made the
first ingest of a week-long, 10-million-record log impossible on one machine. Instead, Spark
tasks write each table's new rows as parquet into a per-increment staging directory
(`<lake>/_kraftlake/staging/<app id>/<version>/<table>/`), and delta-rs reads them back as a
stream of record batches: the driver holds one batch at a time, and each table still gets
exactly one Delta commit per (app id, version), so the exactly-once argument is unchanged.

The intermediate frames an increment reuses (committed records, topic names, the fold) are
kept the same way (`Staging.frame`), read back as a plain parquet scan, rather than
`persist()`ed: see `Staging.frame` for why. Partition changes need no frame of their own:
their staged table rows are the fold's input.

A killed run leaves its staging directory behind; the re-run overwrites it (the rows are a
function of the planned input, so they are the same rows) and removes it when done.
"""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path

import pyarrow as pa
import pyarrow.dataset as pads
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from .schema import TableSchema, table_schema

# delta-rs and Spark must agree on timestamps: Spark's default parquet timestamp (INT96) reads
# back as nanoseconds without a time zone; microseconds adjusted to UTC are the Delta type.
TIMESTAMP_CONF = ("spark.sql.parquet.outputTimestampType", "TIMESTAMP_MICROS")


def conform(data: pa.Table | pa.RecordBatch, schema: pa.Schema) -> pa.Table:
    """Select and cast `data` to `schema`'s columns (missing columns become null)."""
    cols = []
    for field in schema:
        if field.name in data.schema.names:
            cols.append(data.column(field.name).cast(field.type))
        else:
            cols.append(pa.nulls(data.num_rows, field.type))
    return pa.Table.from_arrays(cols, schema=schema)


def conformed_reader(batches: Iterator[pa.RecordBatch] | pa.RecordBatchReader,
                     schema: pa.Schema) -> pa.RecordBatchReader:
    """A reader of `batches`, each conformed to `schema` (lazily: one batch in memory)."""
    def gen() -> Iterator[pa.RecordBatch]:
        for b in batches:
            if b.num_rows:
                yield from conform(b, schema).to_batches()
    return pa.RecordBatchReader.from_batches(schema, gen())


def _write(df: DataFrame, path: Path) -> None:
    spark = df.sparkSession
    if spark.conf.get(TIMESTAMP_CONF[0]) != TIMESTAMP_CONF[1]:
        spark.conf.set(*TIMESTAMP_CONF)
    df.write.mode("overwrite").parquet(str(path))


class Staged:
    """One table's new rows of one increment, as parquet files Spark wrote."""

    def __init__(self, path: Path, schema: TableSchema) -> None:
        # Spark creates the directory even for no rows: a missing one means the rows went
        # elsewhere (e.g. a path Spark spelled differently), which must not pass as "empty"
        if not (path / "_SUCCESS").is_file():
            raise FileNotFoundError(f"{path}: Spark wrote no staged rows here (no _SUCCESS)")
        self.path, self.schema = path, schema
        self._ds = pads.dataset(str(path), format="parquet")
        self.rows = self._ds.count_rows()

    def reader(self) -> pa.RecordBatchReader:
        """The rows as a stream of batches (the Lake conforms them to the table as it writes)."""
        return self._ds.scanner().to_reader()

    def column(self, name: str) -> pa.ChunkedArray:
        """One column, read alone (cheap: parquet is columnar)."""
        if not self.rows:
            return pa.chunked_array([], self.schema.arrow.field(name).type)
        return self._ds.to_table(columns=[name]).column(name)

    def dataframe(self, spark: SparkSession) -> DataFrame:
        """The rows as a Spark DataFrame (read from the staged files, not the driver)."""
        if not self.rows:
            return spark.createDataFrame([], self.schema.spark)
        return spark.read.schema(self.schema.spark).parquet(str(self.path))


class Staging:
    """The staging directory of one increment (app id, version) of a lake."""

    def __init__(self, lake_root: Path, app_id: str, version: int) -> None:
        safe = app_id.replace(":", "_").replace("/", "_")
        self.app_dir = lake_root / "_kraftlake" / "staging" / safe
        self.dir = self.app_dir / f"{version:012d}"

    def put(self, name: str, df: DataFrame) -> Staged:
        """Write `df` as rows of table `name` in parquet (replacing a killed run's files)."""
        schema = table_schema(name)
        # typed as the table (the fold computes e.g. epochs as long); absent columns are null
        cols = [(F.col(f.name) if f.name in df.columns else F.lit(None))
                .cast(f.dataType).alias(f.name) for f in schema.spark.fields]
        path = self.dir / name
        _write(df.select(*cols), path)
        return Staged(path, schema)

    def frame(self, name: str, df: DataFrame) -> DataFrame:
        """Compute `df` once into `_work/<name>` and return it as a scan of those files.

        Why not `persist()`: a persisted frame keeps its whole logical plan, and PySpark
        analyses that plan again at every transformation built on it. The fold's plan is
        thousands of nodes and event detection makes hundreds of transformations on it, so
        building (not running) the detection cost ~7 s per increment, whatever its size.
        A scan of parquet files is a plan of one node. Files also need no `unpersist()` on
        every error path (cached frames of a failed increment stayed in the executors), and
        a killed run's files are overwritten by the re-run like the tables' staged rows.
        """
        path = self.dir / "_work" / name
        _write(df, path)
        return df.sparkSession.read.schema(df.schema).parquet(str(path))

    def clear(self) -> None:
        """Remove this app id's staging directories (this increment's and any killed run's)."""
        shutil.rmtree(self.app_dir, ignore_errors=True)
