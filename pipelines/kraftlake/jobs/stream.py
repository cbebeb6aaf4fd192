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
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from pathlib import Path

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql.streaming import StreamingQuery

from ..config import Config
from ..lake.delta import Lake
from ..lake.maintain import maintain
from ..sources.files import find_log_dirs, read_cluster_id
from ..sources.plan import FRESH, offset_dict
from .batch import app_id_for, refuse_if_diverged
from .increment import IncrementResult, last_progress, process_increment

_UNITS = {"ms": "milliseconds", "s": "seconds", "sec": "seconds", "m": "minutes",
          "min": "minutes", "h": "hours"}


def processing_time(trigger: str) -> str:
    """A trigger interval as Spark parses it: "1s" -> "1 seconds" ("500ms", "5m", "1h" too).

    The README and conf/ use the short form; Spark's processingTime rejects it ("1s" is
    not an interval to Spark) and would only fail once the query starts. Spark's own
    spelling ("1 second") passes through.
    """
    m = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*([a-z]+)\s*", trigger.lower())
    if m and m.group(2) in _UNITS:
        return f"{m.group(1)} {_UNITS[m.group(2)]}"
    if m and m.group(2).rstrip("s") in {"millisecond", "second", "minute", "hour"}:
        return trigger.strip()
    raise ValueError(f"trigger {trigger!r}: expected a number and a unit, e.g. 500ms, 1s, "
                     f"5m, 1h")


def _state(lake: Lake, app_id: str, checkpoint: Path, log_dir: Path) -> dict:
    """Where a stream starts: its own state file, else after the lake's last increment.

    Starting after a batch ingest (or another stream) of the same cluster id, the input's
    bytes at the last ingested offsets must be the ones the lake holds; otherwise this is
    another log that happens to share the cluster id: it is refused, and the divergence
    kept in `quarantine`.
    """
    f = checkpoint / "kraftlake.json"
    if f.is_file():
        return json.loads(f.read_text())
    prev = last_progress(lake, app_id)
    if prev is not None:
        refuse_if_diverged(lake, log_dir, prev)
    if prev is None:
        start = offset_dict(FRESH)
        base = 0
    else:
        start = offset_dict(prev["end_offset"], prev["snapshot_high"]
                            if prev["snapshot_high"] is not None else -1)
        base = prev["version"] + 1
    state = {"app_id": app_id, "base_version": base, "start": start}
    checkpoint.mkdir(parents=True, exist_ok=True)
    tmp = f.with_suffix(".tmp")
    tmp.write_text(json.dumps(state))
    tmp.replace(f)
    return state


def start_stream(spark: SparkSession, cfg: Config, source: Path, cluster_id: str | None = None,
                 trigger: str | None = None, available_now: bool = False,
                 max_offsets: int | None = None,
                 on_batch: Callable[[IncrementResult], None] | None = None) -> StreamingQuery:
    """Start the streaming query for one metadata-log directory (one cluster)."""
    interval = None if available_now else processing_time(trigger or cfg.trigger)
    log_dir = find_log_dirs(Path(source))[0]
    cid = cluster_id or cfg.cluster_id or read_cluster_id(log_dir)
    if not cid:
        raise ValueError(f"{log_dir}: no meta.properties beside it; pass --cluster-id")
    lake = Lake(cfg.lake)
    lake.ensure_all()
    app_id = app_id_for(cid)
    ck = Path(cfg.checkpoint) if cfg.checkpoint else lake.root / "_kraftlake" / "checkpoints" / cid
    st = _state(lake, app_id, ck, log_dir)
    reader = (spark.readStream.format("kraft-metadata").option("cluster_id", cid)
              .option("startJson", json.dumps(st["start"]))
              .option("splitBytes", str(cfg.split_bytes)))
    if max_offsets:
        reader = reader.option("maxOffsetsPerTrigger", str(max_offsets)).option(
            "capAvailableNow", "true")
    df = reader.load(str(log_dir))

    def each(batch: DataFrame, batch_id: int) -> None:
        version = st["base_version"] + batch_id
        res = process_increment(spark, lake, batch, cid, app_id, version,
                                min_isr_default=cfg.min_insync_replicas_default)
        if cfg.compact_every > 0 and (batch_id + 1) % cfg.compact_every == 0:
            # a table whose compaction lost a commit conflict (someone else compacted or
            # wrote it meanwhile) is left as it was and compacted next time: reported only
            res.maintenance_errors = [f"{m.table}: {m.error}"
                                      for m in maintain(lake, vacuum=False) if m.error]
        if on_batch is not None:
            on_batch(res)

    w = df.writeStream.foreachBatch(each).option("checkpointLocation", str(ck / "spark"))
    w = w.trigger(availableNow=True) if available_now else w.trigger(processingTime=interval)
    return w.queryName(f"kraftlake-{cid}").start()
