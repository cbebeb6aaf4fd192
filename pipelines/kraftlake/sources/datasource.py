"""`kraft-metadata`: a PySpark Python DataSource over one `__cluster_metadata-0` directory.

    spark.read.format("kraft-metadata").option("cluster_id", ...).load(dir)
    spark.readStream.format("kraft-metadata").load(dir)

Offsets are the metadata log's own offsets (plus the snapshot high mark and the CRC of the
last batch read, which is how a diverged tail is noticed). The driver only walks batch
headers; every byte range is decoded by a Spark task (`sources.decode.read_range`).

Batch options: `startOffset` (default: from the beginning / oldest covering snapshot),
`endOffset` (default: everything complete now), `snapshotHigh` (snapshots with a larger end
offset are reconciliation checks), `splitBytes`.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from typing import cast

import pyarrow as pa
from pyspark.sql.datasource import (
    DataSource,
    DataSourceReader,
    DataSourceStreamReader,
    InputPartition,
)
from pyspark.sql.streaming.datasource import ReadMaxRows, SupportsTriggerAvailableNow
from pyspark.sql.types import StructType

from ..uris import to_uri
from .decode import read_range, source_spark_schema
from .files import LogDirIndex, ReadRange, no_cluster_id, read_cluster_id
from .plan import FRESH, as_value, latest, noops_only, offset_dict, plan

DEFAULT_SPLIT = 32 * 1024 * 1024


class _Part(InputPartition):
    pass


def _lower(options) -> dict:
    """Spark hands options over case-insensitively (keys may arrive lower-cased)."""
    return {str(k).lower(): v for k, v in dict(options).items()}


def _cluster_id(options: dict, path: str) -> str:
    cid = options.get("cluster_id") or options.get("clusterid") or read_cluster_id(path)
    if not cid:
        raise ValueError(no_cluster_id(path, "pass option cluster_id"))
    return cid


def _read(partition: InputPartition | None) -> Iterator[pa.RecordBatch]:
    # With no planned range Spark still runs one task, with partition None.
    if partition is None or not getattr(partition, "value", None):
        return
    yield from read_range(ReadRange(**partition.value))


class KraftMetadataDataSource(DataSource):
    """Records (and damaged regions, gaps) of a KRaft metadata log directory."""

    @classmethod
    def name(cls) -> str:
        return "kraft-metadata"

    def schema(self) -> StructType:
        return source_spark_schema()

    def reader(self, schema: StructType) -> DataSourceReader:
        return _BatchReader(_lower(self.options))

    def streamReader(self, schema: StructType) -> DataSourceStreamReader:
        return _StreamReader(_lower(self.options))


class _BatchReader(DataSourceReader):
    def __init__(self, options: dict) -> None:
        self.path = to_uri(options["path"])
        self.cluster_id = _cluster_id(options, self.path)
        self.split = int(options.get("splitbytes", DEFAULT_SPLIT))
        if options.get("startjson"):
            self.start = json.loads(options["startjson"])
        else:
            self.start = offset_dict(int(options.get("startoffset", FRESH)),
                                     int(options.get("snapshothigh", -1)))
        self.end_offset = options.get("endoffset")
        self.end_json = options.get("endjson")

    def partitions(self) -> list[InputPartition]:
        """`DataSourceReader.partitions`: the byte ranges of the read, one Spark task each (`plan`,
        split at `splitBytes`), from the start option to `endJson` when given, else to what is
        complete on disk now, capped at `endOffset`."""
        index = LogDirIndex(self.path)
        if self.end_json:
            index.refresh()
            end = json.loads(self.end_json)
        else:
            end = latest(index, self.start)
            if self.end_offset is not None:
                end["offset"] = min(end["offset"], int(self.end_offset))
        ranges = plan(self.cluster_id, index, self.start, end, self.split)
        return [_Part(as_value(r)) for r in ranges]

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        return _read(partition)


class _StreamReader(DataSourceStreamReader, SupportsTriggerAvailableNow):
    """Micro-batches between offset dicts; see `sources.plan` for gaps, resets and checks.

    It implements `SupportsTriggerAvailableNow` itself: without it Spark wraps the reader and
    answers every `latestOffset` with the offset seen at query start, which collapses an
    `--available-now --max-offsets N` run into one micro-batch of N offsets and then stops.
    """

    def __init__(self, options: dict) -> None:
        self.path = to_uri(options["path"])
        self.cluster_id = _cluster_id(options, self.path)
        self.split = int(options.get("splitbytes", DEFAULT_SPLIT))
        self.index = LogDirIndex(self.path)
        self.start_json = options.get("startjson")
        self.max_offsets = int(options.get("maxoffsetspertrigger", 0)) or None
        self.cap_all = options.get("capavailablenow", "false") == "true"
        self.target: int | None = None  # Trigger.AvailableNow: do not read past this offset
        # a tail of NoOpRecords alone is read at most every so many seconds (0: every trigger)
        self.noop_every = float(options.get("noopevery", 0) or 0)
        self.advanced_at: float | None = None  # when latestOffset last moved on

    def prepareForTriggerAvailableNow(self) -> None:
        """Fix the end of an AvailableNow run: what is complete on disk now."""
        self.target = self.index.refresh().log_end

    def initialOffset(self) -> dict:
        if self.start_json:
            return json.loads(self.start_json)
        return offset_dict(FRESH)

    def getDefaultReadLimit(self):
        """maxOffsetsPerTrigger caps log offsets per micro-batch (one record per offset)."""
        from pyspark.sql.streaming.datasource import ReadAllAvailable, ReadMaxRows

        return ReadMaxRows(self.max_offsets) if self.max_offsets else ReadAllAvailable()

    def latestOffset(self, start: dict | None = None, limit: object = None) -> dict:
        """`DataSourceStreamReader.latestOffset`: the offset dict the next micro-batch ends at
        (`plan.latest`), at most `limit` (else maxOffsetsPerTrigger) log offsets past `start`,
        uncapped for AvailableNow's ReadAllAvailable unless `capAvailableNow`, never past that run's
        fixed end. `start` itself when nothing moved or a tail of NoOps alone is held (`_held`)."""
        cap = self.max_offsets
        if limit is not None and type(limit).__name__ == "ReadMaxRows":
            cap = int(cast(ReadMaxRows, limit).max_rows)
        elif limit is not None and type(limit).__name__ == "ReadAllAvailable" \
                and not self.cap_all:
            cap = None  # Trigger.AvailableNow asks for everything
        start = start if start is not None else self.initialOffset()
        end = latest(self.index, start, cap, self.target)
        if end == start or self._held(start, end):
            return start
        self.advanced_at = time.monotonic()
        return end

    def _held(self, start: dict, end: dict) -> bool:
        """Whether to wait with a tail of NoOps: an idle controller writes one every 500 ms,
        and each would otherwise be a micro-batch committing two tables, every trigger, for
        nothing but the log's position. Held at most `noop_every` seconds after the last
        move, never in an `--available-now` run (it reads to its fixed end)."""
        return (self.noop_every > 0 and self.target is None
                and self.advanced_at is not None
                and time.monotonic() - self.advanced_at < self.noop_every
                and noops_only(self.index, start, end))

    def partitions(self, start: dict, end: dict) -> list[InputPartition]:
        self.index.refresh()
        return [_Part(as_value(r)) for r in plan(self.cluster_id, self.index, start, end,
                                                  self.split)]

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        return _read(partition)

    def commit(self, end: dict) -> None:
        """Nothing to release: the log is only read."""
