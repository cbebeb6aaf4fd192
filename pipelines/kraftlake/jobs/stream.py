"""Streaming ingest: `kraft-metadata` micro-batches -> `process_increment`, exactly once.

Spark's checkpoint (offset log) guarantees that after a crash the last micro-batch is run
again with the same offsets, hence the same rows. Its Delta transaction version is
`base + batch_id`, where `base` is fixed the first time the stream starts on a lake (stored
beside the Spark checkpoint), so a re-run carries the same (app id, version) and every
table that already committed it is skipped.

Every `stream.compact_every` micro-batches the stream compacts and checkpoints the lake's
tables (`lake.maintain`) inside its own foreachBatch, after the increment has committed:
compaction conflicts with a concurrent merge, and there it cannot run beside one of the
stream's own. Vacuum is left to `kraftlake maintain`, which can be scheduled beside a
running stream (`--no-compact`) and whose retention protects readers of older snapshots.

A query that fails for a reason of Spark's own machinery, not of the data (`transient`),
is started again on the same checkpoint by its caller (`kraftlake stream`), at most
`MAX_RESTARTS` times in a row without a micro-batch completing in between: the checkpoint
makes the new query run the interrupted micro-batch again, and its transaction ids make
that exactly once.
"""

from __future__ import annotations

import contextlib
import json
import threading
import time
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql.streaming import StreamingQuery

from ..config import Config
from ..lake.apps import app_id_for
from ..lake.delta import Lake
from ..lake.maintain import maintain
from ..lake.schema import KRAFTLAKE_DIR
from ..sources.decode_tasks import Planned
from ..sources.driver import increment_source
from ..sources.files import find_log_dirs, no_cluster_id, read_cluster_id, require_metadata_log
from ..sources.plan import FRESH, offset_dict
from ..uris import join, to_uri
from .batch import finish_open_ingest, refuse_if_diverged, write_plan
from .increment import cluster_progress, not_held, process_increment
from .progress import IncrementResult, furthest, last_of
from .seed import Seed
from .trigger import processing_time

# What a new query on the same checkpoint cures: the streaming source's Python worker
# starting more slowly than Spark's fixed wait for it (10 s, seen on a loaded machine), a
# lost executor, and a commit that lost a race with another writer of the lake.
TRANSIENT = ("Python worker failed to connect back",
             "Timed out while waiting for the Python worker", "ExecutorLostFailure",
             "DELTA_CONCURRENT_")
MAX_RESTARTS = 3  # in a row, without a micro-batch completing in between


def transient(exc: BaseException) -> str | None:
    """The first line of `exc`'s message when a new query would cure it, else None."""
    text = str(exc)
    if not any(t in text for t in TRANSIENT):
        return None
    return text.strip().splitlines()[0][:300]


def _state(lake: Lake, app_id: str, checkpoint: str, log_dir: str, rows: list[dict]) -> dict:
    """Where a stream starts: its own state file, else where the lake stands for the cluster.

    Starting after a batch ingest (or another stream) of the same cluster id, the input's
    bytes at the last ingested offsets must be the ones the lake holds; otherwise this is
    another log that happens to share the cluster id: it is refused, and the divergence
    kept in `quarantine`. `rows`: the cluster's progress rows.
    """
    f = join(checkpoint, "kraftlake.json")
    text = lake.fs.read_text(f)
    if text is not None:
        return json.loads(text)
    at = furthest(rows)
    if at is not None:
        refuse_if_diverged(lake, log_dir, at)
    own = last_of(rows, app_id)
    start = offset_dict(FRESH) if at is None else offset_dict(
        at["end_offset"], at["snapshot_high"] if at["snapshot_high"] is not None else -1)
    state = {"app_id": app_id, "base_version": own["version"] + 1 if own else 0,
             "start": start}
    lake.fs.write_text(f, json.dumps(state))
    return state


def _offsets(lake: Lake, checkpoint: str, state: dict, batch_id: int) -> tuple[dict, dict]:
    """(start, end) offset dicts of micro-batch `batch_id`, from Spark's offset log.

    Spark writes the log entry of a micro-batch before running it, so it is there while
    the batch runs; the start is the previous entry's end (or where the stream started).
    """
    def end_of(bid: int) -> dict | None:
        text = lake.fs.read_text(join(checkpoint, "spark", "offsets", str(bid)))
        if text is None:
            return None
        return json.loads(text.strip().splitlines()[-1])

    end = end_of(batch_id)
    start = end_of(batch_id - 1) if batch_id > 0 else None
    return start or state["start"], end or state["start"]


def start_stream(spark: SparkSession, cfg: Config, source: str | Path,
                 cluster_id: str | None = None,
                 trigger: str | None = None, available_now: bool = False,
                 max_offsets: int | None = None,
                 on_batch: Callable[[IncrementResult], None] | None = None,
                 failures: list[BaseException] | None = None,
                 on_start: Callable[[Lake, str], None] | None = None,
                 on_events: Callable[[IncrementResult], None] | None = None,
                 slots: threading.Semaphore | None = None) -> StreamingQuery:
    """Start the streaming query for one metadata-log directory (one cluster).

    `failures`: receives the exception a micro-batch raised before the query stops with it.
    Spark reports that as "An exception was raised by the Python Proxy", the cause buried in
    a Python traceback inside its message; the caller can raise the original instead.
    `on_start(lake, cluster_id)`: called once the lake holds everything a killed job left
    half-written and the cluster's slices are held, before the first micro-batch (the live
    gauges start from there: `metrics.watch`). `on_batch` gets each micro-batch's result
    after its last commit, with its wall time (`seconds`); `on_events` as soon as its events
    are committed (`process_increment`).

    Args:
        spark: the session to run on.
        cfg: the configuration; `cfg.lake` is the lake written, `cfg.checkpoint` the
            query's checkpoint (default: under the lake).
        source: the `__cluster_metadata-0` directory to tail.
        cluster_id: a cluster id to check the log against.
        trigger: the trigger interval (default `cfg.trigger`), e.g. "1s".
        available_now: read what is there and stop.
        max_offsets: the most offsets a micro-batch reads.
        on_batch: called with each micro-batch's `IncrementResult`.
        on_start: called before the first micro-batch, with the lake and the cluster id.
        on_events: called with each micro-batch's result once its events are committed.
        slots: held while a micro-batch runs, shared by the queries of one process
            (`jobs.streams`): at most so many run at once.

    Returns:
        The running StreamingQuery.

    Example, going on from `kraftlake.ingest`'s: the same log streamed into a lake of its
    own, everything there read and the stream stopped (`available_now`):

        >>> from kraftlake import Lake, start_stream
        >>> streamed = load_config(lake=tempfile.mkdtemp())
        >>> query = start_stream(spark, streamed, "examples/real-3-broker/__cluster_metadata-0",
        ...                      available_now=True)
        >>> query.awaitTermination()
        >>> Lake(streamed.lake, spark).read(spark, "partition_events").count()
        129
    """
    interval = None if available_now else processing_time(trigger or cfg.trigger)
    log_dir = find_log_dirs(source)[0]
    require_metadata_log(log_dir)  # before the lake is touched: user data never enters
    cid = cluster_id or cfg.cluster_id or read_cluster_id(log_dir)
    if not cid:
        raise ValueError(no_cluster_id(log_dir, "pass --cluster-id"))
    lake = Lake(cfg.lake, spark)
    rows = finish_open_ingest(spark, lake, cfg, log_dir, cid)
    app_id = app_id_for(cid, "stream")
    ck = to_uri(cfg.checkpoint) if cfg.checkpoint else join(lake.root, KRAFTLAKE_DIR,
                                                           "checkpoints", cid)
    st = _state(lake, app_id, ck, log_dir, rows)
    Seed(spark, lake, cid).load()  # what the first micro-batch continues from, read now
    if on_start is not None:
        on_start(lake, cid)
    reader = (spark.readStream.format("kraft-metadata").option("cluster_id", cid)
              .option("startJson", json.dumps(st["start"]))
              .option("splitBytes", str(cfg.split_bytes))
              .option("noopEvery", str(cfg.noop_every)))
    if max_offsets:
        reader = reader.option("maxOffsetsPerTrigger", str(max_offsets)).option(
            "capAvailableNow", "true")
    df = reader.load(str(log_dir))

    def each(batch: DataFrame, batch_id: int) -> None:
        try:
            with slots or contextlib.nullcontext():
                _each(batch, batch_id, time.perf_counter())
        except Exception as exc:
            if failures is not None:
                failures.append(exc)
            raise

    def _each(batch: DataFrame, batch_id: int, t0: float) -> None:
        version = st["base_version"] + batch_id
        at = None
        local = False
        src: DataFrame | Planned = batch
        if not lake.committed("ingest_progress", app_id, version):
            start, end = _offsets(lake, ck, st, batch_id)
            write_plan(lake, app_id, version, start, end)
            at = cluster_progress(lake, cid)
            # the micro-batch decoded by the driver (small) or by tasks of a job of its own
            # (`Planned`), as a batch ingest's increment is: Spark's rows of it stay unread
            src = increment_source(spark, cid, log_dir, start, end, cfg.split_bytes,
                                   cfg.driver_max_bytes)
            local = isinstance(src, DataFrame)
            # what the lake holds already is dropped (a stream resumed behind an ingest)
            src = not_held(src, at) if isinstance(src, DataFrame) else replace(src, behind=at)
        res = process_increment(spark, lake, src, cid, app_id, version, prev=at,
                                min_isr_default=cfg.min_insync_replicas_default,
                                driver_fold_max=cfg.driver_fold_max_records, local=local,
                                on_events=on_events)
        if cfg.compact_every > 0 and (batch_id + 1) % cfg.compact_every == 0:
            # a table whose compaction lost a commit conflict (someone else compacted or
            # wrote it meanwhile) is left as it was and compacted next time: reported only
            res.maintenance_errors = [f"{m.table}: {m.error}"
                                      for m in maintain(lake, vacuum=False) if m.error]
        if on_batch is not None:
            res.seconds = round(time.perf_counter() - t0, 3)
            on_batch(res)

    w = df.writeStream.foreachBatch(each).option("checkpointLocation", join(ck, "spark"))
    w = w.trigger(availableNow=True) if interval is None else w.trigger(processingTime=interval)
    return w.queryName(f"kraftlake-{cid}").start()
