"""What the incident report shows, read from the lake with Spark and collected (small: one
cluster's incidents, intervals, broker records and the chosen partitions' states).
"""

from __future__ import annotations

import contextlib
import datetime as dt
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pyarrow as pa
from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F

from ..kraft.events import ELR_EVENTS, HARM_EVENTS
from ..kraft.records import GAP_SOURCE
from ..kraft.troubles import OFFLINE, UNDER_MIN_ISR
from ..lake.delta import Lake
from ..lake.location import PROGRESS_TABLE
from ..lake.served import ServedLake
from ..lake.work import collect_together

TOP_PARTITIONS = 10


@dataclass(frozen=True)
class Window:
    """The time range the report covers (either end open), naive UTC like Spark's rows.

    Example:
        >>> import datetime as dt
        >>> from kraftlake import Window
        >>> Window(since=dt.datetime(2026, 11, 29))
        Window(since=datetime.datetime(2026, 11, 29, 0, 0), until=None)
    """

    since: dt.datetime | None = None
    until: dt.datetime | None = None

    def overlaps(self, start: dt.datetime | None, end: dt.datetime | None) -> bool:
        return ((self.until is None or start is None or start <= self.until)
                and (self.since is None or end is None or end >= self.since))


@dataclass
class ReportData:
    cluster_id: str
    window: Window
    first_ts: dt.datetime | None
    last_ts: dt.datetime | None
    incidents: list[dict[str, Any]]
    intervals: list[dict[str, Any]]  # kind, start_ts, end_ts of every interval
    brokers: list[dict[str, Any]]  # broker records, oldest first
    unclean: list[dict[str, Any]]  # unclean_election events
    incident_events: dict[str, list[dict[str, Any]]]  # incident id -> its notable events
    partitions: list[tuple[str, int]]  # (topic_name, partition_id) shown in detail
    states: dict[tuple[str, int], list[dict[str, Any]]] = field(default_factory=dict)
    # offsets a damaged batch took with it: offset, end_offset and the time the states were
    # carried across them (`timestamp`, from the timeline's `gap` rows)
    gaps: list[dict[str, Any]] = field(default_factory=list)
    newest_record_ts: dt.datetime | None = None  # the log's newest record the lake holds
    last_ingested: dt.datetime | None = None  # the commit of the cluster's last increment
    troubles_now: dict[str, int] = field(default_factory=dict)  # open intervals by kind

    @property
    def unknown_offsets(self) -> int:
        return sum(g["end_offset"] - g["offset"] for g in self.gaps)


def _rows(df: DataFrame) -> list[dict[str, Any]]:
    return [r.asDict(recursive=True) for r in df.collect()]


def _collected(frames: dict[str, DataFrame]) -> dict[str, list[dict[str, Any]]]:
    """Each frame's rows as dicts, all from one Spark job (`lake.work.collect_together`),
    timestamps naive UTC. The report had collected a dozen small frames one by one, each a
    Spark job of its own: 5.2-6.7 s in a warm session for what two jobs do in 3.5-4.8."""
    return {name: _dicts(rows) for name, rows in collect_together(frames).items()}


def _dicts(rows: pa.Table) -> list[dict[str, Any]]:
    naive = [c.cast(pa.timestamp(c.type.unit)) if pa.types.is_timestamp(c.type) else c
             for c in rows.columns]
    return pa.Table.from_arrays(naive, names=rows.column_names).to_pylist()


def _sorted(rows: list[dict[str, Any]], *keys: str) -> list[dict[str, Any]]:
    """`rows` in the order of `keys` (nulls first, as Spark sorts ascending)."""
    return sorted(rows, key=lambda r: tuple((r[k] is not None, r[k]) for k in keys))


def lake_events(spark: SparkSession, lake: Path | str, cluster_id: str) -> list[dict[str, Any]]:
    """Every `partition_events` row of one cluster, as dicts.

    Args:
        spark: the session to read with.
        lake: the lake's root (a path or URI).
        cluster_id: the cluster whose events to read.

    Returns:
        One dict per row, the table's columns as keys. Example: the notebook
        `examples/kraftlake-api.ipynb`, which the suite runs.
    """
    df = Lake(lake).read(spark, "partition_events").filter(F.col("cluster_id") == cluster_id)
    return _rows(df)


def lake_current(spark: SparkSession, lake: Path | str, cluster_id: str
                 ) -> dict[tuple[str, int], dict[str, Any]]:
    """`partition_current` of one cluster, by (topic name, partition).

    Args:
        spark: the session to read with.
        lake: the lake's root (a path or URI).
        cluster_id: the cluster whose partitions to read.

    Returns:
        (topic name, partition id) -> the row as a dict. Example: the notebook
        `examples/kraftlake-api.ipynb`, which the suite runs.
    """
    df = Lake(lake).read(spark, "partition_current").filter(F.col("cluster_id") == cluster_id)
    return {(r["topic_name"], r["partition_id"]): r.asDict() for r in df.collect()}


def lake_brokers(spark: SparkSession, lake: Path | str, cluster_id: str
                 ) -> list[dict[str, Any]]:
    """Every `brokers` row of one cluster, in log order."""
    df = Lake(lake).read(spark, "brokers").filter(F.col("cluster_id") == cluster_id)
    return sorted(_rows(df), key=lambda r: (r["offset"], r["seq"]))


def clusters(spark: SparkSession, lake: Lake | ServedLake) -> list[str]:
    """Every cluster the lake holds (each has progress rows, partitions or not): read from
    the Delta log without Spark where it can be (a served lake's client cannot)."""
    if isinstance(lake, Lake):
        from ..lake.deltalog import LakeLog, UnreadableError

        with contextlib.suppress(UnreadableError):  # then Spark reads it
            return sorted(LakeLog(lake.root).clusters())
    return sorted(r.cluster_id for r in lake.read(spark, "ingest_progress")
                  .select("cluster_id").distinct().collect())


def load(spark: SparkSession, lake: Lake | ServedLake, cluster_id: str, window: Window,
         partitions: list[tuple[str, int]] | None = None) -> ReportData:
    """Everything the report shows for one cluster; `partitions` default: the TOP_PARTITIONS
    partitions with the most harmful events in the window. Two Spark jobs: what depends on
    nothing else, then what depends on the first (the newest record, the chosen partitions'
    states)."""
    def read(name: str) -> DataFrame:
        return lake.read(spark, name).filter(F.col("cluster_id") == cluster_id)

    events = read("partition_events")
    in_window = events
    if window.since is not None:
        in_window = in_window.filter(F.col("timestamp") >= F.lit(window.since))
    if window.until is not None:
        in_window = in_window.filter(F.col("timestamp") <= F.lit(window.until))
    carried = read("partition_timeline").filter(F.col("source") == GAP_SOURCE).groupBy(
        F.col("valid_from_offset").alias("offset")).agg(F.min("valid_from_ts").alias(
            "timestamp"))
    first: dict[str, DataFrame] = {
        "incidents": read("incidents"),
        # every kind: the chart draws each (three columns: under-replicated ones are many)
        "intervals": read("partition_intervals").select("kind", "start_offset", "start_ts",
                                                        "end_ts"),
        "brokers": read("brokers"),
        "span": events.select("timestamp").unionByName(read("brokers").select("timestamp"))
        .agg(F.min("timestamp").alias("first"), F.max("timestamp").alias("last")),
        "progress": read("ingest_progress").select("app_id", "version", "start_offset"),
        "unclean": in_window.filter(F.col("event_type") == "unclean_election"),
        "notable": _notable(in_window),
        "gaps": read("quarantine").filter(F.col("state_unknown")).select(
            "offset", "end_offset").join(carried, "offset", "left"),
    }
    if partitions:
        first["states"] = _states(read("partition_timeline"), partitions)
    else:
        first["top"] = in_window.filter(F.col("event_type").isin(*HARM_EVENTS)).groupBy(
            "topic_name", "partition_id").count().orderBy(
            F.col("count").desc(), "topic_name", "partition_id").limit(TOP_PARTITIONS)
    got = _collected(first)
    if not partitions:
        # the union of the frames keeps no order: sorted again (stable: ties by name)
        top = sorted(_sorted(got["top"], "topic_name", "partition_id"),
                     key=lambda r: -r["count"])
        partitions = [(r["topic_name"], r["partition_id"]) for r in top]
    since = max((r["start_offset"] for r in got["progress"] if r["start_offset"] is not None),
                default=None)
    second = {"newest": _newest(read("records"), since)}
    if "states" not in got and partitions:
        second["states"] = _states(read("partition_timeline"), partitions)
    got.update(_collected(second))
    incidents = [i for i in _sorted(got["incidents"], "start_offset")
                 if window.overlaps(i["start_ts"], i["end_ts"])]
    intervals = [{k: r[k] for k in ("kind", "start_ts", "end_ts")}
                 for r in _sorted(got["intervals"], "start_offset")]
    span = got["span"][0]
    newest = got["newest"][0]["newest"] if got["progress"] else None
    ingested = _ingested(lake, got["progress"])
    # the time range runs to the newest record, not to the last change: a quiet cluster's
    # heartbeats say it was watched until then
    last = max((t for t in (span["last"], newest) if t is not None), default=None)
    gaps = [g for g in _sorted(got["gaps"], "offset")
            if window.overlaps(g["timestamp"], g["timestamp"])]
    now = Counter(i["kind"] for i in intervals if i["end_ts"] is None)
    return ReportData(cluster_id, window, span["first"], last, incidents, intervals,
                      _sorted(got["brokers"], "offset", "seq"),
                      _sorted(got["unclean"], "offset"),
                      _incident_events(_sorted(got["notable"], "offset"), incidents),
                      partitions, _states_of(got.get("states", []), partitions), gaps, newest,
                      ingested, {k: now.get(k, 0) for k in (OFFLINE, UNDER_MIN_ISR)})


def _newest(records: DataFrame, since: int | None) -> DataFrame:
    """The cluster's newest log record, which is in the last increment that read log records
    (`since`, its first offset): only those offsets are scanned (Delta skips the older files
    by their offset statistics)."""
    log = records.filter(F.col("source") == "log")
    if since is not None:
        log = log.filter(F.col("offset") >= since)
    return log.agg(F.max("timestamp").alias("newest"))


def _ingested(lake: Lake | ServedLake, progress: list[dict[str, Any]]) -> dt.datetime | None:
    """When the cluster's last increment committed (naive UTC), each job kind's last
    increment read from the progress table's Delta log without Spark; None for a served
    lake, whose client cannot read that log, or a log this reader cannot read."""
    if not progress or not isinstance(lake, Lake):
        return None
    from ..lake.deltalog import LakeLog, UnreadableError

    last: dict[str, int] = {}
    for r in progress:
        last[r["app_id"]] = max(last.get(r["app_id"], -1), r["version"])
    commits = LakeLog(lake.root)
    with contextlib.suppress(UnreadableError):  # then not said
        return max((t for t in (commits.committed_at(PROGRESS_TABLE, a, v)
                                for a, v in last.items()) if t is not None), default=None)
    return None


def recovery_of(unclean: dict[str, Any], events: list[dict[str, Any]]
                ) -> dict[str, Any] | None:
    """The recovery_completed row that closes an unclean election (None while it lasts, or
    where the log has no LeaderRecoveryState): same partition, same `recovery_started_offset`
    (the README's example query joins on the same columns)."""
    if unclean["recovery_started_offset"] is None:
        return None
    key = (unclean["topic_name"], unclean["partition_id"], unclean["recovery_started_offset"])
    return next((e for e in events if e["event_type"] == "recovery_completed"
                 and (e["topic_name"], e["partition_id"], e["recovery_started_offset"]) == key),
                None)


def _notable(events: DataFrame) -> DataFrame:
    """The events an incident lists: unclean elections, recoveries and ELR events (the rest
    is counted)."""
    return events.filter(F.col("event_type").isin(
        "unclean_election", "recovery_completed", *ELR_EVENTS)).select(
        "offset", "timestamp", "topic_name", "partition_id", "event_type", "detection",
        "new_leader", "prev_isr", "new_isr", "elr_added", "elr_removed",
        "new_eligible_leader_replicas", "new_last_known_elr", "recovery_started_offset",
        "recovery_duration_ms")


def _incident_events(notable: list[dict[str, Any]], incidents: list[dict[str, Any]]
                     ) -> dict[str, list[dict[str, Any]]]:
    """Per incident, its `_notable` events (in offset order, as `notable` is)."""
    return {i["incident_id"]: [r for r in notable if r["offset"] >= i["start_offset"]
                               and (i["end_offset"] is None or r["offset"] <= i["end_offset"])]
            for i in incidents}


def _states(timeline: DataFrame, partitions: list[tuple[str, int]]) -> DataFrame:
    """The timeline rows of `partitions` (not empty) that the report draws."""
    cond: Column | None = None
    for topic, pid in partitions:
        c = (F.col("topic_name") == topic) & (F.col("partition_id") == pid)
        cond = c if cond is None else cond | c
    assert cond is not None  # partitions is not empty
    return timeline.filter(cond).select(
        "topic_name", "topic_id", "partition_id", "valid_from_offset", "seq", "valid_from_ts",
        "valid_to_ts",
        "leader", "leader_epoch", "partition_epoch", "isr", "eligible_leader_replicas",
        "last_known_elr", "replicas", "leader_recovery_state", "uncertain_since")


def _states_of(rows: list[dict[str, Any]], partitions: list[tuple[str, int]]
               ) -> dict[tuple[str, int], list[dict[str, Any]]]:
    """`_states`' rows per partition, in log order."""
    out: dict[tuple[str, int], list[dict[str, Any]]] = {p: [] for p in partitions}
    for r in _sorted(rows, "valid_from_offset", "seq"):
        out[(r["topic_name"], r["partition_id"])].append(r)
    # a topic is its id: of a name deleted and created again, the newest incarnation only
    # (its states are another topic's, epochs from 0 again), as `kraftlake timeline` shows
    return {p: [r for r in states if r["topic_id"] == states[-1]["topic_id"]]
            for p, states in out.items()}
