"""A small increment's source rows decoded on the driver, not by Spark's tasks.

The `kraft-metadata` data source decodes each planned byte range in a Python task: a Spark
job, Python workers and, because every stage of an increment reuses the rows, a copy
persisted to local disk. For an increment of a few thousand records that machinery costs
seconds while the decoding itself takes milliseconds. Below `ingest.driver_max_bytes` the
driver runs the same plan (`sources.plan.plan`) and the same decoder (`decode.read_range`)
itself, and the increment starts from an Arrow table: every later stage runs on local
relations (`lake.work.Work`), which Spark plans and runs without reading files.
"""

from __future__ import annotations

import pyarrow as pa
from pyspark.sql import DataFrame, SparkSession

from ..lake.delta import chunked
from ..uris import file_size, to_uri
from .decode import read_range, source_arrow_schema, source_spark_schema
from .decode_tasks import Planned
from .files import LogDirIndex, ReadRange
from .plan import plan


def planned(cluster_id: str, log_dir: str, start: dict, end: dict,
            split_bytes: int) -> list[ReadRange]:
    """The ranges the data source would read between two offset dicts."""
    return plan(cluster_id, LogDirIndex(log_dir).refresh(), start, end, split_bytes)


def range_bytes(ranges: list[ReadRange]) -> int:
    """Bytes the ranges read; a range to the end of its file counts its whole file."""
    total = 0
    for r in ranges:
        if r.kind in ("segment", "snapshot"):
            end = r.end if r.end >= 0 else (file_size(r.path) or 0)
            total += max(end - r.start, 0)
    return total


def read_on_driver(ranges: list[ReadRange]) -> pa.Table:
    """Every source row of the ranges, as the data source's tasks would produce them."""
    schema = source_arrow_schema()
    batches = [b for r in ranges for b in read_range(r)]
    return chunked(pa.Table.from_batches(batches, schema=schema))


def increment_source(spark: SparkSession, cluster_id: str, log_dir: str, start: dict, end: dict,
                     split_bytes: int, max_bytes: int) -> DataFrame | Planned:
    """The increment between two offset dicts: a local relation of its source rows, or,
    when it reads more than `max_bytes` (0: always), its planned ranges, which Spark's tasks
    decode (`decode_tasks`)."""
    ranges = planned(cluster_id, to_uri(log_dir), start, end, split_bytes)
    if max_bytes <= 0 or range_bytes(ranges) > max_bytes:
        return Planned(tuple(ranges))
    return spark.createDataFrame(read_on_driver(ranges), source_spark_schema())
