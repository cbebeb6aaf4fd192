"""A large increment's source decoded by Spark's tasks, which write the rows themselves.

Read through the `kraft-metadata` data source, every decoded row went from the decoding
Python worker to the JVM as Arrow, was turned into Spark's rows there and written by the
JVM as a work frame (`lake.work`), which every later stage reads; `records`, all of whose
rows are in that frame, was then written a second time from it by Delta's writer. On the
24-hour `large` log the JVM spent more CPU on those two writes than the decoder's Python
spent decoding (`docs/benchmarks.md`).

Here one Spark job runs a task per planned range (`sources.plan`), as the data source
would, and each task writes what it decodes with pyarrow: every source row into one
parquet file of the work frame, and the records into data files of the `records` table
(`lake.written.Target`), whose add actions it hands back for the increment's commit of
that table. The rows never pass through the JVM, and `records` is written once.

A killed or retried task writes its work file again under the same name (the rows are a
function of the planned range); the `records` files of a killed run are in no commit, and
Delta's VACUUM removes them as it removes a killed writer's.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from functools import partial
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.fs as pafs
import pyarrow.parquet as pq
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql.pandas.types import from_arrow_schema

from ..lake.schema import table_rows
from ..lake.written import Target, Written
from ..uris import filesystem, join
from .decode import read_range, source_arrow_schema, source_spark_schema
from .files import ReadRange
from .plan import as_value


@dataclass(frozen=True)
class Planned:
    """A large increment's source, as the byte ranges Spark's tasks decode
    (`decode_to_files`); a small one's is decoded on the driver (`sources.driver`)."""

    ranges: tuple[ReadRange, ...]
    # the lake's progress row for the cluster, whose rows the increment drops after decoding
    # (a stream passes it for every micro-batch: it may have resumed behind an ingest; the
    # tasks' `records` files are then used only if none of their rows was dropped)
    behind: dict | None = None


@dataclass(frozen=True)
class Decoded:
    """What the decoding tasks wrote: every source row (`frame`, a scan of the work files)
    and, when asked for, the records as `records` table files (`records`)."""

    frame: DataFrame
    records: Written | None


# what each task hands back: its work file, and the add action of each `records` file
_OUT = pa.schema([("file", pa.string()), ("add", pa.string())])


def decode_to_files(spark: SparkSession, planned: Planned, work_dir: str,
                    records: Target | None) -> Decoded:
    """Decode `planned`'s ranges in one Spark job, a task each: the source rows written as
    parquet under `<work_dir>/source`, the records as `records` table files at `records`
    (None: not written, e.g. a re-run whose `records` is committed)."""
    values = [as_value(r) for r in planned.ranges]
    uri = join(work_dir, "source")
    n = max(len(values), 1)
    got = spark.range(0, len(values), 1, n).mapInArrow(
        partial(_decode_batches, values, uri, records), from_arrow_schema(_OUT)).toArrow()
    files = [f for f in got.column("file").to_pylist() if f is not None]
    adds = [json.loads(a) for a in got.column("add").to_pylist() if a is not None]
    schema = source_spark_schema()
    frame = spark.read.schema(schema).parquet(*files) if files else \
        spark.createDataFrame(source_arrow_schema().empty_table(), schema)
    return Decoded(frame, None if records is None else records.written(adds))


def _decode_batches(values: list[dict[str, Any]], uri: str, records: Target | None,
                    batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
    """What each task runs: its ranges (one, by `spark.range`'s id) decoded and written."""
    for batch in batches:
        for i in batch.column("id").to_pylist():
            yield _decode_range(ReadRange(**values[i]), f"{uri}/part-{i:05d}.parquet",
                                records)


def _decode_range(r: ReadRange, uri: str, records: Target | None) -> pa.RecordBatch:
    """Range `r`'s source rows written to the work file `uri`, its records to `records`'
    files; the file's location and the records files' add actions."""
    fs, path = filesystem(uri)
    if isinstance(fs, pafs.LocalFileSystem):
        fs.create_dir(path.rsplit("/", 1)[0], recursive=True)
    # One write of the range's rows: its batches are as the decoder made them (a run of
    # NoOps is one), hundreds of them, some of a row, and a row group each made every
    # later scan of the frame slower than the writing saved.
    rows = pa.Table.from_batches(list(read_range(r)), source_arrow_schema())
    with fs.open_output_stream(path) as sink, \
            pq.ParquetWriter(sink, rows.schema, compression="snappy") as writer:
        writer.write_table(rows)
    table_files = records.files() if records is not None else None
    if table_files is not None:
        is_record = pc.equal(rows.column("row_kind"), "record")
        kept = table_rows(rows, "records")
        if not pc.all(is_record).as_py():  # problems, gaps
            kept = kept.filter(is_record)
        if kept.num_rows:
            table_files.write(kept)
    adds = [] if table_files is None else [json.dumps(a) for a in table_files.close()]
    return pa.RecordBatch.from_pydict(
        {"file": [uri] + [None] * len(adds), "add": [None, *adds]}, schema=_OUT)
