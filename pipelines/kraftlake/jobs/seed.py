"""What an increment continues from, for one cluster: the slices of the lake it reads, and
the same slices held in memory from one increment of a process to the next.

An increment reads the cluster's current partition states, its open intervals, its open
incident, the current timeline rows, its topics, configs, brokers and progress rows. Read
through Delta, each costs a snapshot of its table's new version (the previous increment
just committed it) and a scan: seconds per increment, however few rows. The job that wrote
them knows them already, so it keeps them (`Held`), tagged with the table versions they
reflect. The next increment uses a held slice only when its table is still at that
version; any other commit to the table (another process of the cluster after a restart,
`maintain`, another cluster's job, the other job kind taking its turn) makes it read the
slice from the lake again. A new process holds nothing and reads everything.

A slice is read by delta-rs at the pinned version (`lake.deltalog`: milliseconds, no Spark
job), by Spark only where delta-rs cannot answer exactly: through Spark each of the eight
slices cost a snapshot and a scan, about 17 Spark jobs and 3 s before a new process's
first increment could start its work.

`KRAFTLAKE_CHECK_HELD=1` (on in the test suite) compares every held slice an increment uses
with a fresh read of the lake, the same read, and raises `HeldStateError` on a difference.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import TypeAlias

import pyarrow as pa
import pyarrow.compute as pc
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from ..lake.delta import Lake, Tag, from_arrow
from ..lake.deltalog import LakeLog, UnreadableError
from ..lake.schema import table_rows, table_schema
from ..lake.written import Written

# table -> the rows of the cluster an increment continues from (None: all of them)
SLICES: dict[str, str | None] = {
    "partition_current": None, "partition_timeline": "is_current",
    "partition_intervals": "is_open", "incidents": "is_open",
    "topics": None, "configs": None, "brokers": None, "ingest_progress": None}

CHECK_ENV = "KRAFTLAKE_CHECK_HELD"

# a slice's rows after an increment: rows, a frame of them, or what computes either
Rows: TypeAlias = pa.Table | DataFrame | Written | Callable[[], pa.Table | DataFrame]


class HeldStateError(AssertionError):
    """A held slice differs from the lake at the version it was tagged with."""


@dataclass
class Held:
    """One cluster's slices as a job left them: table -> (tag, rows), the tag the (table
    id, version) the rows reflect (None: no table)."""

    slices: dict[str, tuple[Tag | None, pa.Table]] = field(default_factory=dict)
    # the cluster's events from an offset on (its open incident's): (tag, offset, rows)
    events: tuple[Tag | None, int, pa.Table] | None = None


_HELD: dict[tuple[str, str], Held] = {}
_LOCK = threading.Lock()


def _held(lake: Lake, cluster_id: str) -> Held:
    with _LOCK:
        return _HELD.setdefault((lake.root, cluster_id), Held())


def progress(lake: Lake, cluster_id: str) -> list[dict]:
    """Every `ingest_progress` row of a cluster (all its jobs): held from this process's
    last increment of the cluster while the table has not moved since, else read."""
    tag = lake.tag("ingest_progress")
    held = _held(lake, cluster_id)
    got = held.slices.get("ingest_progress")
    if got is not None and got[0] == tag and os.environ.get(CHECK_ENV) != "1":
        return got[1].to_pylist()
    def spark_read() -> DataFrame:
        return lake.read(None, "ingest_progress", None if tag is None else tag[1]).filter(
            F.col("cluster_id") == cluster_id)

    rows = _lake_rows(lake, cluster_id, "ingest_progress", tag, [], spark_read)
    if got is not None and got[0] == tag:  # the check's read
        _same("ingest_progress", cluster_id, tag, got[1], rows)
    held.slices["ingest_progress"] = (tag, rows)
    return rows.to_pylist()


def held_tags(lake: Lake, cluster_id: str) -> dict[str, Tag | None]:
    """Table -> the (table id, version) of the slice this process holds of a cluster (what
    the next increment will use while the lake's tables are still there)."""
    return {name: tag for name, (tag, _rows) in _held(lake, cluster_id).slices.items()}


def held_slices(spark: SparkSession, lake: Lake, cluster_id: str, names: Iterable[str]
                ) -> dict[str, pa.Table]:
    """The cluster's slices of tables `names` (`SLICES`) as the lake has them now: those this
    process holds at the table's current version as held, any other read (and then held, as
    an increment's seed reads it). Between a stream's micro-batches every slice is held, so
    this reads nothing from the tables: what the live gauges are counted from."""
    held = _held(lake, cluster_id)
    out, stale = {}, []
    for name in names:
        got = held.slices.get(name)
        if got is not None and got[0] == lake.tag(name):
            out[name] = got[1]
        else:
            stale.append(name)
    if stale:
        seed = Seed(spark, lake, cluster_id)
        out.update({name: seed.rows(name) for name in stale})
    return out


def forget(lake: Lake, cluster_id: str) -> None:
    """Drop what is held of a cluster (an increment failed midway: its slices are unknown)."""
    with _LOCK:
        _HELD.pop((lake.root, cluster_id), None)


def as_rows(data: DataFrame | pa.Table, name: str) -> pa.Table:
    """`data`'s rows as Arrow in table `name`'s own schema (a column it lacks is null), so
    held and read rows compare."""
    return table_rows(data if isinstance(data, pa.Table) else data.toArrow(), name)


def _newer(a: Tag | None, b: Tag | None) -> bool:
    """Tag `a` is a later version of the table `b` is a version of."""
    return a is not None and b is not None and a[0] == b[0] and a[1] > b[1]


def _offsets(rows: pa.Table, first: int, until: int | None) -> pa.Table:
    """The rows at offsets [first, until) (None: no end)."""
    keep = pc.greater_equal(rows["offset"], first)
    if until is not None:
        keep = pc.and_(keep, pc.less(rows["offset"], until))
    return rows.filter(keep)


def _same(name: str, cluster_id: str, tag: Tag | None, held: pa.Table,
          fresh: pa.Table) -> None:
    """`HeldStateError` unless the held slice has the rows of a fresh read, in any order."""
    if sorted(map(repr, held.to_pylist())) != sorted(map(repr, fresh.to_pylist())):
        raise HeldStateError(
            f"held {name} of cluster {cluster_id} ({held.num_rows} rows) differs from the "
            f"lake at {tag} ({fresh.num_rows} rows)")


def _lake_rows(lake: Lake, cluster_id: str, name: str, tag: Tag | None,
               filters: list[tuple[str, str, object]],
               spark_read: Callable[[], DataFrame]) -> pa.Table:
    """The cluster's rows of `name` matching `filters` at `tag`, read from the lake (what an
    increment does not hold, and the check's fresh read): by delta-rs, or by `spark_read`
    where delta-rs cannot answer exactly."""
    if tag is None:
        return as_rows(table_schema(name).arrow.empty_table(), name)
    try:
        return LakeLog(lake.root, {name: tag}).rows(
            name, filters=[("cluster_id", "=", cluster_id), *filters])
    except UnreadableError:
        return as_rows(spark_read(), name)


class Seed:
    """The lake as pinned at an increment's start (`lake`), and the cluster's slices of it:
    from memory when held at the pinned version, else read (and then held)."""

    def __init__(self, spark: SparkSession, lake: Lake, cluster_id: str) -> None:
        self.spark, self.cluster_id = spark, cluster_id
        self.latest = lake
        self.lake = lake.pinned()
        self.held = _held(lake, cluster_id)
        self.check = os.environ.get(CHECK_ENV) == "1"

    def pin(self, name: str) -> int | None:
        return self.lake.pin(name)

    def load(self) -> None:
        """Hold every slice now (a stream starting: its first micro-batch then reads none)."""
        for name in SLICES:
            self.rows(name)

    def read(self, name: str) -> DataFrame:
        """The cluster's rows of a table at the pinned version (every row, from Delta)."""
        return self.lake.read(self.spark, name).filter(F.col("cluster_id") == self.cluster_id)

    def rows(self, name: str) -> pa.Table:
        """The cluster's slice of table `name` (`SLICES`) at the pinned version, as Arrow."""
        tag = self.lake.pinned_tag(name)
        got = self.held.slices.get(name)
        if got is not None and got[0] == tag:
            if self.check:
                self._compare(name, got[1])
            return got[1]
        rows = self._fresh(name)
        with _LOCK:  # a commit on another thread may have kept a newer one meanwhile
            now = self.held.slices.get(name)
            if now is None or not _newer(now[0], tag):
                self.held.slices[name] = (tag, rows)
        return rows

    def slice(self, name: str) -> DataFrame:
        """`rows` as a DataFrame (a local relation)."""
        return from_arrow(self.spark, name, self.rows(name))

    def events(self, first: int, until: int) -> DataFrame:
        """`event_rows` as a DataFrame (a local relation)."""
        return from_arrow(self.spark, "partition_events", self.event_rows(first, until))

    def event_rows(self, first: int, until: int) -> pa.Table:
        """The cluster's events at offsets [first, until) at the pinned version: those of
        the incident open at the increment's start, which the incidents are swept with.
        Held from the increment before (`keep_events`) while `partition_events` is still at
        that commit, else read and then held."""
        tag = self.lake.pinned_tag("partition_events")
        got = self.held.events

        def fresh() -> pa.Table:
            return self._lake_rows("partition_events",
                                   [("offset", ">=", first), ("offset", "<", until)],
                                   lambda: self._events(first, until))

        if got is not None and got[0] == tag and got[1] <= first:
            rows = _offsets(got[2], first, until)
            if self.check:
                _same("partition_events", self.cluster_id, tag, rows, fresh())
        else:
            rows = fresh()
            self.held.events = (tag, first, rows)
        return rows

    def log_records(self, first: int, until: int) -> DataFrame:
        """The cluster's `records` rows of the log (not a snapshot) at offsets [first,
        until) at the pinned version: those an open transaction held back last time, which
        the increment that closes it reads again. By delta-rs (Delta skips the other files
        by their offset statistics), a local relation; through Spark where delta-rs cannot
        answer exactly."""
        filters: list[tuple[str, str, object]] = [
            ("offset", ">=", first), ("offset", "<", until), ("source", "=", "log")]
        rows = self._lake_rows("records", filters, lambda: self.read("records").filter(
            (F.col("offset") >= first) & (F.col("offset") < until)
            & (F.col("source") == "log")))
        return from_arrow(self.spark, "records", rows)

    def keep_events(self, version: int | None, new: pa.Table | None, first: int | None,
                    since: int) -> None:
        """Hold the cluster's events from `first` on (the start of the incident open after
        this increment; None: none is) once this increment committed its events `new` at
        `version` (None: it had none to commit) and its log starts at offset `since`."""
        tag = (self.lake.pinned_tag("partition_events") if version is None
               else self._tag_after("partition_events", version))
        got, pinned = self.held.events, self.lake.pinned_tag("partition_events")
        if first is None or tag is None or new is None:
            self.held.events = None
            return
        rows = as_rows(new, "partition_events")
        if got is not None and got[0] == pinned and got[1] <= first:
            before = _offsets(got[2], first, since)
        elif first >= since:  # the incident began in this increment: its events are new
            before = rows.schema.empty_table()
        else:
            self.held.events = None
            return
        self.held.events = (tag, first, pa.concat_tables([before, _offsets(rows, first, None)]))

    def _events(self, first: int, until: int) -> DataFrame:
        return self.read("partition_events").filter(
            (F.col("offset") >= first) & (F.col("offset") < until))

    def _tag_after(self, name: str, version: int) -> Tag | None:
        """The tag of this increment's commit of `name` at `version` when it directly
        follows the pinned version of the same table or created it (None: another commit
        came between, and what the increment knows of the table may not be all of it)."""
        pinned = self.lake.pinned_tag(name)
        if pinned is None and version == 0:  # created by this commit: its id is new
            now = self.latest.tag(name)
            return None if now is None else (now[0], version)
        if pinned is not None and version == pinned[1] + 1:
            return pinned[0], version
        return None

    def keep(self, name: str, version: int, after: Rows) -> None:
        """Hold the slice of `name` after this increment's commit of it at `version`
        (`after`: the table's rows of the cluster after it, or what makes them, filtered
        to the slice). Only when that commit directly follows the pinned version of the
        same table, or created it: with any other commit between, the rows are read again
        next time. Rows Spark made (a large increment's DataFrame) are not held either:
        collecting them would run their plan again (a first ingest of the 24-hour `large`
        log spent about 18 of its 325 s on it, loaded), where the next increment, if any,
        reads the slice at its pinned version by delta-rs; nor are rows in files a large
        increment's tasks wrote (`lake.written`)."""
        tag = self._tag_after(name, version)
        rows = None if tag is None else after() if callable(after) else after
        if tag is None or not isinstance(rows, pa.Table):
            with _LOCK:
                self.held.slices.pop(name, None)
            return
        assert rows is not None
        where = SLICES[name]
        if where:  # a boolean column: the slice's rows (the others went to history)
            rows = rows.filter(pc.fill_null(rows[where], False))
        rows = as_rows(rows, name)
        with _LOCK:
            self.held.slices[name] = (tag, rows)

    def _fresh(self, name: str) -> pa.Table:
        """The cluster's slice of `name` at the pinned version, read from the lake."""
        where = SLICES[name]
        return self._lake_rows(name, [(where, "=", True)] if where else [],
                               lambda: self._spark_slice(name))

    def _spark_slice(self, name: str) -> DataFrame:
        where = SLICES[name]
        df = self.read(name)
        return df.filter(where) if where else df

    def _compare(self, name: str, held: pa.Table) -> None:
        _same(name, self.cluster_id, self.lake.pinned_tag(name), held, self._fresh(name))

    def _lake_rows(self, name: str, filters: list[tuple[str, str, object]],
                   spark_read: Callable[[], DataFrame]) -> pa.Table:
        return _lake_rows(self.lake, self.cluster_id, name, self.lake.pinned_tag(name),
                          filters, spark_read)
