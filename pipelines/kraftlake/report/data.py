"""What the incident report shows, read from the lake with Spark and collected (small: one
cluster's incidents, intervals, broker records and the chosen partitions' states).
"""

from __future__ import annotations

import contextlib
import datetime as dt
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F

from ..kraft.events import ELR_EVENTS, HARM_EVENTS
from ..kraft.records import GAP_SOURCE
from ..kraft.troubles import OFFLINE, UNDER_MIN_ISR
from ..lake.delta import Lake
from ..lake.location import PROGRESS_TABLE
from ..lake.served import ServedLake

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
    """Every cluster the lake holds (each has progress rows, partitions or not)."""
    return sorted(r.cluster_id for r in lake.read(spark, "ingest_progress")
                  .select("cluster_id").distinct().collect())


def load(spark: SparkSession, lake: Lake | ServedLake, cluster_id: str, window: Window,
         partitions: list[tuple[str, int]] | None = None) -> ReportData:
    """Everything the report shows for one cluster; `partitions` default: the TOP_PARTITIONS
    partitions with the most harmful events in the window."""
    def read(name: str) -> DataFrame:
        return lake.read(spark, name).filter(F.col("cluster_id") == cluster_id)

    events = read("partition_events")
    iv, inc = read("partition_intervals"), read("incidents")
    incidents = [i for i in _rows(inc.orderBy("start_offset"))
                 if window.overlaps(i["start_ts"], i["end_ts"])]
    # every kind: the chart draws each (three columns: under-replicated ones are many)
    intervals = _rows(iv.orderBy("start_offset").select("kind", "start_ts", "end_ts"))
    brokers = _rows(read("brokers").orderBy("offset", "seq"))
    ts = events.agg(F.min("timestamp"), F.max("timestamp")).first()
    b_ts = read("brokers").agg(F.min("timestamp"), F.max("timestamp")).first()
    assert ts is not None and b_ts is not None  # an aggregate has one row
    newest, ingested = _freshness(lake, read)
    first = min((t for t in (ts[0], b_ts[0]) if t is not None), default=None)
    # the time range runs to the newest record, not to the last change: a quiet cluster's
    # heartbeats say it was watched until then
    last = max((t for t in (ts[1], b_ts[1], newest) if t is not None), default=None)
    in_window = events
    if window.since is not None:
        in_window = in_window.filter(F.col("timestamp") >= F.lit(window.since))
    if window.until is not None:
        in_window = in_window.filter(F.col("timestamp") <= F.lit(window.until))
    unclean = _rows(in_window.filter(F.col("event_type") == "unclean_election")
                    .orderBy("offset"))
    incident_events = _incident_events(in_window, incidents)
    if not partitions:
        top = (in_window.filter(F.col("event_type").isin(*HARM_EVENTS)).groupBy(
            "topic_name", "partition_id").count()
            .orderBy(F.col("count").desc(), "topic_name", "partition_id")
            .limit(TOP_PARTITIONS).collect())
        partitions = [(r.topic_name, r.partition_id) for r in top]
    states = _states(read("partition_timeline"), partitions)
    carried = read("partition_timeline").filter(F.col("source") == GAP_SOURCE).groupBy(
        F.col("valid_from_offset").alias("offset")).agg(F.min("valid_from_ts").alias(
            "timestamp"))
    gaps = [g for g in _rows(read("quarantine").filter(F.col("state_unknown")).select(
        "offset", "end_offset").join(carried, "offset", "left").orderBy("offset"))
        if window.overlaps(g["timestamp"], g["timestamp"])]
    now = Counter(i["kind"] for i in intervals if i["end_ts"] is None)
    return ReportData(cluster_id, window, first, last, incidents, intervals, brokers, unclean,
                      incident_events, partitions, states, gaps, newest, ingested,
                      {k: now.get(k, 0) for k in (OFFLINE, UNDER_MIN_ISR)})


def _freshness(lake: Lake | ServedLake, read: Callable[[str], DataFrame]
               ) -> tuple[dt.datetime | None, dt.datetime | None]:
    """(the cluster's newest record, when its last increment committed, naive UTC like
    Spark's rows). The newest record
    is in the last increment that read log records: only its offsets are scanned (Delta
    skips the older files by their offset statistics). The commit time is read from the
    progress table's Delta log, which a served lake's client cannot read (None then)."""
    rows = _rows(read("ingest_progress").select(
        "app_id", "version", "start_offset", "end_offset"))
    if not rows:
        return None, None
    since = max((r["start_offset"] for r in rows if r["start_offset"] is not None),
                default=None)
    log = read("records").filter(F.col("source") == "log")
    if since is not None:
        log = log.filter(F.col("offset") >= since)
    newest = log.agg(F.max("timestamp")).first()
    assert newest is not None  # an aggregate has one row
    ingested = None
    if isinstance(lake, Lake):  # each job kind's last increment (ingest, stream), read from
        # the Delta log without Spark (the session may be a Connect client's)
        from ..lake.deltalog import LakeLog, UnreadableError

        last: dict[str, int] = {}
        for r in rows:
            last[r["app_id"]] = max(last.get(r["app_id"], -1), r["version"])
        commits = LakeLog(lake.root)
        with contextlib.suppress(UnreadableError):  # then not said
            ingested = max((t for t in (commits.committed_at(PROGRESS_TABLE, a, v)
                                        for a, v in last.items()) if t is not None),
                           default=None)
    return newest[0], ingested


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


def _incident_events(events: DataFrame, incidents: list[dict[str, Any]]
                     ) -> dict[str, list[dict[str, Any]]]:
    """Per incident: its unclean elections, recoveries and ELR events (the rest is counted)."""
    out: dict[str, list[dict[str, Any]]] = {i["incident_id"]: [] for i in incidents}
    if not incidents:
        return out
    notable = events.filter(F.col("event_type").isin(
        "unclean_election", "recovery_completed", *ELR_EVENTS)).select(
        "offset", "timestamp", "topic_name", "partition_id", "event_type", "detection",
        "new_leader", "prev_isr", "new_isr", "elr_added", "elr_removed",
        "new_eligible_leader_replicas", "new_last_known_elr", "recovery_started_offset",
        "recovery_duration_ms")
    rows = _rows(notable.orderBy("offset"))
    for i in incidents:
        end = i["end_offset"]
        out[i["incident_id"]] = [r for r in rows if r["offset"] >= i["start_offset"]
                                 and (end is None or r["offset"] <= end)]
    return out


def _states(timeline: DataFrame, partitions: list[tuple[str, int]]
            ) -> dict[tuple[str, int], list[dict[str, Any]]]:
    if not partitions:
        return {}
    cond: Column | None = None
    for topic, pid in partitions:
        c = (F.col("topic_name") == topic) & (F.col("partition_id") == pid)
        cond = c if cond is None else cond | c
    assert cond is not None  # partitions is not empty
    rows = _rows(timeline.filter(cond).select(
        "topic_name", "topic_id", "partition_id", "valid_from_offset", "valid_from_ts",
        "valid_to_ts",
        "leader", "leader_epoch", "partition_epoch", "isr", "eligible_leader_replicas",
        "last_known_elr", "replicas", "leader_recovery_state", "uncertain_since").orderBy(
        "valid_from_offset", "seq"))
    out: dict[tuple[str, int], list[dict[str, Any]]] = {p: [] for p in partitions}
    for r in rows:
        out[(r["topic_name"], r["partition_id"])].append(r)
    # a topic is its id: of a name deleted and created again, the newest incarnation only
    # (its states are another topic's, epochs from 0 again), as `kraftlake timeline` shows
    return {p: [r for r in states if r["topic_id"] == states[-1]["topic_id"]]
            for p, states in out.items()}
