"""Batch ingest: every new record of metadata-log directories or dump-log texts, one
increment each.

A run reads from where the previous run of the same cluster stopped (`ingest_progress`), so
re-running on the same input adds nothing, and re-running after more was appended adds only
that. The range of an increment is written to `<lake>/_kraftlake/plans/` before any table is
touched; a run that was killed resumes exactly that plan, so its Delta transaction ids
always name the same rows.

Before reading on from where the lake stopped, the records the lake already holds for the
last ingested batch are compared with what the input has at those offsets (`_check_tail`).
Two clusters can share a cluster id (the apache/kafka image's default one): without that
comparison the second would be read on from the first one's end offset and appended under
the same cluster as if it were its continuation. A mismatch refuses that input: nothing of
it is ingested, a `diverged` row in `quarantine` keeps the reason and the input's bytes at
the offset that differs, and the run goes on with its other sources.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import NoReturn

import pyarrow as pa
import pyarrow.compute as pc
from pyspark.sql import DataFrame, SparkSession

from ..codec.batch import Batch, scan_batches
from ..codec.logfiles import records_of_batch
from ..config import Config, load_config
from ..lake.apps import app_id_for
from ..lake.delta import Lake
from ..lake.transaction import sql_eq
from ..sources.decode import source_arrow_schema, source_spark_schema
from ..sources.driver import increment_source
from ..sources.dumptext import read_dump_text
from ..sources.files import LogDirIndex
from ..sources.plan import FRESH, latest, offset_dict
from ..uris import basename, read_bytes
from .increment import process_increment, progress_rows
from .inputs import find_inputs
from .progress import IncrementResult, furthest, last_of
from .resume import kept_batch, nothing_between, plan_file, resume_start, tail_by_header


@dataclass(frozen=True)
class Divergence:
    """Where an input disagrees with what the lake ingested for its cluster id: the
    evidence a `diverged` quarantine row keeps (`raw` = the input's batch at `offset`)."""

    cluster_id: str
    source_file: str
    offset: int
    reason: str
    byte_position: int = -1
    raw: bytes | None = None


class DivergedLogError(ValueError):
    """The input disagrees with what the lake already ingested for its cluster id."""

    def __init__(self, divergence: Divergence) -> None:
        super().__init__(divergence.reason)
        self.divergence = divergence


def _refuse(lake: Lake, d: Divergence) -> NoReturn:
    """Keep a refused input's divergence in `quarantine`, then refuse it.

    The row is merged on its key, so refusing the same input again does not repeat it.
    """
    app_id = app_id_for(d.cluster_id, "refusals")
    last = lake.txn_version("quarantine", app_id)
    row = pa.table({"cluster_id": [d.cluster_id], "source_file": [d.source_file],
                    "byte_position": [d.byte_position], "offset": [d.offset],
                    "end_offset": pa.nulls(1, pa.int64()), "kind": ["diverged"],
                    "reason": [d.reason], "raw": pa.array([d.raw], pa.binary())})
    lake.upsert("quarantine", row, app_id, 0 if last is None else last + 1)
    raise DivergedLogError(d)


def _log_records(lake: Lake, cluster_id: str, lo: int, hi: int) -> pa.Table:
    """Log rows of `records` with lo <= offset < hi (file statistics prune the read).

    `timestamp` comes back as integer microseconds, the unit `_check_tail` computes from the
    input's bytes (the column itself is a UTC timestamp, which would read as datetimes).
    """
    where = (f"{sql_eq('cluster_id', cluster_id)} AND offset >= {int(lo)} AND offset < {int(hi)} "
             f"AND source = 'log'")
    return _int_timestamps(lake.read_arrow("records", where))


def _int_timestamps(t: pa.Table) -> pa.Table:
    """`timestamp` as integer microseconds, so lake rows and input rows compare equal."""
    i = t.schema.get_field_index("timestamp")
    return t.set_column(i, "timestamp", t.column(i).cast(pa.int64()))


def _lake_tail(lake: Lake, cluster_id: str, end_offset: int) -> list[dict]:
    """Log records the lake holds for the batch that contains offset `end_offset - 1`."""
    last = _log_records(lake, cluster_id, end_offset - 1, end_offset)
    if last.num_rows == 0:
        return []
    base = last["batch_base_offset"][0].as_py()
    if base is None:
        return last.to_pylist()
    rows = _log_records(lake, cluster_id, base, end_offset)
    return sorted(rows.to_pylist(), key=lambda r: r["offset"])


def _mismatch(lake_rows: list[dict], now: dict[int, tuple]) -> int | None:
    """First offset whose (epoch, timestamp, type[, value]) differs between lake and input."""
    for r in lake_rows:
        got = now.get(r["offset"])
        want = (r["epoch"], r["timestamp"], r["record_type"])
        if got is None or got[:3] != want or (len(got) > 3 and got[3] != r["value"]):
            return r["offset"]
    return None


def _check_tail(lake: Lake, cluster_id: str, log_dir: str, end_offset: int,
               index: LogDirIndex | None = None,
               end_batch: tuple[int, int] | None = None) -> Divergence | None:
    """Why `log_dir` cannot continue the lake's cluster at `end_offset` (None if it can).

    The input's batch holding `end_offset - 1` must be the one the lake ingested last. When
    the lake kept that batch's CRC and leader epoch (`end_batch`, from the progress row),
    the input's batch header says so at once: the CRC covers every byte of the batch's
    records, and the epoch is the one field before it. Otherwise, or when the header
    differs, the batch is read and its records compared (epoch, timestamp, type, value
    bytes) with the rows the lake holds at the same offsets, which names the first offset
    that differs. A log that ends before `end_offset` is a different (or truncated) log; a
    log whose start is past `end_offset` fell behind retention, which the planner records as
    a gap.
    """
    if end_offset <= 0:
        return None
    index = index or LogDirIndex(log_dir)
    proven, e = tail_by_header(index, end_offset, end_batch)
    if proven:
        return None
    # the lake's rows at the offsets of the input's batch, in one read (the lake's own batch
    # boundaries would take a second one): any of them differing is a divergence
    rows = sorted(_log_records(lake, cluster_id, end_offset - 1 if e is None else
                               e.base_offset, end_offset).to_pylist(), key=lambda r: r["offset"])
    if not rows:
        return None  # nothing to compare with (e.g. the lake started from a snapshot)
    if e is None:
        return Divergence(cluster_id, str(log_dir), index.log_end, (
            f"{log_dir}: the lake already holds cluster {cluster_id} up to offset "
            f"{end_offset - 1}, but this log ends at offset {index.log_end - 1}: it is "
            f"another log with the same cluster id (or a truncated one)"))
    seg = next(s for s in index.ordered() if e in s.entries)
    buf = read_bytes(seg.path, e.position, e.position + e.size)
    now: dict[int, tuple] = {}
    for item in scan_batches(buf, basename(seg.path)):
        if isinstance(item, Batch):
            for rec in records_of_batch(item):
                now[rec.offset] = (rec.epoch, rec.timestamp * 1000, rec.type, rec.value)
    bad = _mismatch(rows, now)
    if bad is None:
        return None
    return Divergence(cluster_id, str(seg.path), bad, (
        f"{log_dir}: offset {bad} differs from what the lake ingested for cluster "
        f"{cluster_id} (epoch, timestamp or bytes): this is another log with the same "
        f"cluster id, or its tail diverged; refusing to append it. Ingest it into "
        f"another lake or pass a distinct --cluster-id."), e.position, buf)


def refuse_if_diverged(lake: Lake, log_dir: str, prev: dict,
                       index: LogDirIndex | None = None) -> None:
    """Refuse `log_dir` (`DivergedLogError`, the divergence kept in `quarantine`) unless it
    continues what the lake holds after increment `prev` of its cluster."""
    if prev.get("end_offset"):
        d = _check_tail(lake, prev["cluster_id"], log_dir, int(prev["end_offset"]), index,
                        kept_batch(prev))
        if d is not None:
            _refuse(lake, d)


def write_plan(lake: Lake, app_id: str, version: int, start: dict, end: dict) -> None:
    """Record an increment's range before any table is touched: whoever finds it unfinished
    (a re-run of the same job, or the other job kind) does exactly that increment first."""
    lake.fs.write_text(plan_file(lake.root, app_id, version),
                       json.dumps({"start": start, "end": end}))


def _read_plan(lake: Lake, app_id: str, version: int) -> dict | None:
    text = lake.fs.read_text(plan_file(lake.root, app_id, version))
    return None if text is None else json.loads(text)


def _open_increment(lake: Lake, cluster_id: str, kind: str,
                   rows: list[dict]) -> tuple[str, int, dict] | None:
    """The increment a killed job of `kind` planned and did not finish: (app id, version,
    plan), or None. It must be finished before anything else is ingested for the cluster,
    or its tables that did commit would be ingested twice. `rows`: the cluster's progress."""
    app_id = app_id_for(cluster_id, kind)
    prev = last_of(rows, app_id)
    version = (prev["version"] + 1) if prev else 0
    plan = _read_plan(lake, app_id, version)
    return None if plan is None else (app_id, version, plan)


def _finish_open(spark: SparkSession, lake: Lake, cfg: Config, log_dir: str, cid: str,
                kind: str, rows: list[dict], say: Callable[[str], None] = lambda _m: None
                ) -> list[dict]:
    """Finish the increment a stopped job of `kind` left half-written for this cluster;
    the cluster's progress rows afterwards (`rows` when there was nothing to finish)."""
    found = _open_increment(lake, cid, kind, rows)
    if found is None:
        return rows
    app_id, version, plan = found
    say(f"{log_dir}: finishing increment {version} of the stopped {kind} of cluster {cid}")
    _run(spark, lake, cfg, log_dir, cid, app_id, version, plan["start"], plan["end"],
         furthest(rows), say)
    return progress_rows(lake, cid)


def finish_open_ingest(spark: SparkSession, lake: Lake, cfg: Config, log_dir: str,
                       cid: str) -> list[dict]:
    """What a stream does before it starts: finish a killed ingest's increment; the
    cluster's progress rows afterwards."""
    return _finish_open(spark, lake, cfg, log_dir, cid, "ingest", progress_rows(lake, cid))


def _next_range(lake: Lake, app_id: str, log_dir: str,
               rows: list[dict]) -> tuple[int, dict, dict] | None:
    """(version, start, end) of the next increment of `app_id`, or None if nothing is new.

    It starts where the lake stands for the cluster (`furthest` of its progress `rows`),
    whichever job got it there, so an ingest after a stream (and the reverse) neither
    repeats nor skips.
    """
    prev = last_of(rows, app_id)
    version = (prev["version"] + 1) if prev else 0
    plan = _read_plan(lake, app_id, version)
    if plan is not None:  # a killed run: do exactly what it planned
        return version, plan["start"], plan["end"]
    at = furthest(rows)
    index = LogDirIndex(log_dir)  # one walk of the batch headers for the check and the end
    if at is None:
        start = offset_dict(FRESH)
    else:
        refuse_if_diverged(lake, log_dir, at, index)
        start = resume_start(at)  # the tail was checked above
    end = latest(index, start)
    if nothing_between(start, end):
        return None
    write_plan(lake, app_id, version, start, end)
    return version, start, end


def ingest(spark: SparkSession, cfg: Config, sources: list[str | Path],
           cluster_id: str | None = None,
           log: Callable[[str], None] | None = None) -> list[IncrementResult]:
    """Ingest every `__cluster_metadata-0` found in `sources`, and every kafka-dump-log text
    among them (cluster id required), into the lake of `cfg`.

    An input that is not a metadata log, or that diverges from what the lake holds for its
    cluster id, is refused (its result has `refused` set; a divergence is also kept in
    `quarantine`) and the others go on. When no input can be ingested, nothing is written,
    not even an empty lake.

    Args:
        spark: the session to run on (`get_spark(cfg)`).
        cfg: the configuration; `cfg.lake` is the lake written.
        sources: log directories (or folders holding them) and dump-log texts.
        cluster_id: the cluster id of dump-log texts, or one to check the logs against.
        log: called with each progress line.

    Returns:
        One `IncrementResult` per increment committed or input refused.

    Example, from a clone's root (`examples/real-3-broker`: the log of a real 3-broker
    cluster); the examples of `ingest_dir`, `start_stream`, `maintain`, `run_quality` and
    `write_report` go on with this lake:

        >>> import tempfile
        >>> from kraftlake import get_spark, ingest, load_config
        >>> cfg = load_config(lake=tempfile.mkdtemp())
        >>> spark = get_spark(cfg)
        >>> results = ingest(spark, cfg, ["examples/real-3-broker"])
        >>> [(r.records, r.events, r.refused) for r in results]
        [(153, 129, None)]
    """
    inputs = find_inputs(sources, cluster_id, cfg)
    say = log or (lambda _m: None)
    results = []
    lake = None
    for inp in inputs:
        if inp.refused is not None:
            say(f"refused: {inp.refused}")
            results.append(IncrementResult(inp.cluster_id or "", "", -1, refused=inp.refused,
                                           source=inp.source))
            continue
        assert inp.cluster_id is not None  # find_inputs gives each accepted input one
        if lake is None:
            lake = Lake(cfg.lake, spark)
        try:
            if inp.kind == "text":
                res = _ingest_text(spark, lake, cfg, Path(inp.location), inp.cluster_id, say)
            else:
                res = _ingest_dir(spark, lake, cfg, inp.location, inp.cluster_id, say)
        except DivergedLogError as exc:  # already kept in quarantine
            d = exc.divergence
            say(f"refused: {d.reason}")
            res = IncrementResult(d.cluster_id, app_id_for(d.cluster_id), -1,
                                  refused=d.reason)
        res.source = inp.source
        results.append(res)
    return results


def ingest_dir(spark: SparkSession, directory: str | Path, lake: str | Path,
               log: Callable[[str], None] | None = None,
               conf_file: str | None = None) -> list[IncrementResult]:
    """`kraftlake ingest DIRECTORY --lake LAKE [--conf CONF_FILE]` in-process: the same
    library call as the command, with the configuration it would load.

    Args:
        spark: the session to run on.
        directory: a log directory (or a folder holding them).
        lake: the lake's root (a path or URI).
        log: called with each progress line.
        conf_file: a YAML configuration file, as `--conf`.

    Returns:
        `ingest`'s results.

    Example, going on from `ingest`'s: the same log again finds nothing new:

        >>> from kraftlake import ingest_dir
        >>> [(r.records, r.refused) for r in ingest_dir(spark, "examples/real-3-broker", cfg.lake)]
        [(0, None)]
    """
    return ingest(spark, load_config(conf_file, lake=lake), [directory], log=log)


def _ingest_dir(spark: SparkSession, lake: Lake, cfg: Config, d: str, cid: str,
                say: Callable[[str], None]) -> IncrementResult:
    app_id = app_id_for(cid)
    rows = _finish_open(spark, lake, cfg, d, cid, "stream", progress_rows(lake, cid), say)
    nxt = _next_range(lake, app_id, d, rows)
    if nxt is None:
        say(f"{d}: nothing new for cluster {cid}")
        return IncrementResult(cid, app_id, -1)
    version, start, end = nxt
    say(f"{d}: cluster {cid}, offsets {max(start['offset'], 0)}..{end['offset']} "
        f"(increment {version})")
    return _run(spark, lake, cfg, d, cid, app_id, version, start, end, furthest(rows), say)


def _run(spark: SparkSession, lake: Lake, cfg: Config, d: str, cid: str, app_id: str,
         version: int, start: dict, end: dict, prev: dict | None,
         say: Callable[[str], None]) -> IncrementResult:
    """One planned increment of a log directory; `prev`: where the lake stood for the
    cluster before it."""
    src = increment_source(spark, cid, d, start, end, cfg.split_bytes, cfg.driver_max_bytes)
    res = process_increment(spark, lake, src, cid, app_id, version, prev=prev,
                            min_isr_default=cfg.min_insync_replicas_default,
                            driver_fold_max=cfg.driver_fold_max_records,
                            snapshot_high=end["snap"], local=isinstance(src, DataFrame),
                            log=say)
    if res.end_offset is None:
        res.end_offset = end["offset"]
    return res


def _text_tail_check(lake: Lake, cid: str, text: pa.Table, prev: dict, path: Path) -> None:
    """`_check_tail` for a dump text: compare epoch/timestamp/type (the text has no bytes)."""
    end = int(prev["end_offset"] or 0)
    rows = _lake_tail(lake, cid, end) if end > 0 else []
    if not rows:
        return
    log = _int_timestamps(text.filter(pc.equal(text["source"], "log"))).to_pylist()
    now = {r["offset"]: (r["epoch"], r["timestamp"], r["record_type"]) for r in log
           if r["offset"] is not None and r["offset"] < end}
    if not now and log and min(r["offset"] for r in log) >= end:
        return  # the text starts after what the lake holds: nothing to compare
    bad = _mismatch(rows, now)
    if bad is not None:
        _refuse(lake, Divergence(cid, str(path), bad, (
            f"{path}: offset {bad} differs from what the lake ingested for cluster {cid}: "
            f"this dump is of another log with the same cluster id (or a diverged tail); "
            f"refusing to append it")))


def _ingest_text(spark: SparkSession, lake: Lake, cfg: Config, path: Path,
                 cluster_id: str, say: Callable[[str], None]) -> IncrementResult:
    """One increment from a kafka-dump-log text (records after the lake's end offset)."""
    app_id = app_id_for(cluster_id)
    rows = progress_rows(lake, cluster_id)
    prev, own = furthest(rows), last_of(rows, app_id)
    start = int(prev["end_offset"] or 0) if prev else 0
    high = int(prev["snapshot_high"]) if prev and prev["snapshot_high"] is not None else -1
    if prev is not None:
        everything, _, _ = read_dump_text(path, cluster_id)
        _text_tail_check(lake, cluster_id, everything, prev, path)
    table, end, new_high = read_dump_text(path, cluster_id, start, high)
    if table.num_rows == 0:
        say(f"{path}: nothing new for cluster {cluster_id}")
        return IncrementResult(cluster_id, app_id, -1)
    version = own["version"] + 1 if own else 0
    say(f"{path}: cluster {cluster_id}, offsets {start}..{end} (increment {version})")
    table = table.cast(source_arrow_schema())
    df = spark.createDataFrame(table, schema=source_spark_schema())
    res = process_increment(spark, lake, df, cluster_id, app_id, version, prev=prev,
                            min_isr_default=cfg.min_insync_replicas_default,
                            driver_fold_max=cfg.driver_fold_max_records,
                            snapshot_high=new_high if new_high >= 0 else None,
                            local=0 < table.nbytes <= cfg.driver_max_bytes, log=say)
    if res.end_offset is None:
        res.end_offset = end
    return res
