"""incidents: partition events grouped by what caused them (the grouping rule is in the README,
"Incidents: the grouping rule"; this docstring says how it is computed).

1. Broker outages (`broker_outages`): per broker, from the `brokers` table walked in log
   order by plain Python on the driver (`outage_runs`; the table is small), a run of
   records after which a broker that had been in service (registered, unfenced, not in
   controlled shutdown) is out of it; the cause is the record that began the run
   (`broker_fenced`, `broker_controlled_shutdown`, `broker_unregistered`, or
   `broker_restarted`: a new registration of a broker that was in service, i.e. it lost its
   session). Kafka's controller writes the partition changes a fence forces (ISR shrinks,
   leaders moved away) in the same write just *before* the fence record (docs/semantics.md
   T25), so an outage starts at the first such change dropping that broker within
   `SAME_WRITE_MS` before it. The outages go to every task as a broadcast value; each task
   hands back at most one such change per outage among its events (`_near_drops`), the
   earliest of which moves the outage's start.
2. Troubles: broker outages and the partition intervals of kinds `TROUBLE_KINDS` (offline,
   under min ISR, recovering, reassigning, under-replicated); `single_isr` is a subset of
   under-replicated.
3. An incident is a connected component of troubles on the offset axis: a trouble that
   starts while another one is still open (or at the offset where it ends) belongs to the
   same incident. It starts with its first trouble and ends when the last one ends (null
   while any is open): that end is the time to full recovery. Its cause is its first broker
   outage if it has one that started soon enough after the incident's first trouble
   (leaders drop a silent follower from their ISRs after replica.lag.time.max.ms, and the
   controller fences it at the session timeout, so the shrinks a crash causes can come
   first, but by at most `kraft.timing`'s window, taken from the log's configs in force at
   the outage), else its first trouble: a trouble that began earlier than that before every
   outage of its incident is its own cause. Each cluster's troubles are swept in start
   order by plain Python (`sweep_of_cluster`), which Spark runs once per cluster id.
4. The incident's events are the partition events whose offset lies in [start, end]. The
   incidents are few (about a hundred a day of the simulator's busiest cluster) and go to
   every task as a broadcast value; each task finds the incident of each of its events by
   bisection over their starts (incidents do not overlap), not by a join, and each
   incident's events are then counted together (`_counted`).

Incremental: an increment passes the troubles it created or closed, the troubles still open
in the lake, the incident still open (at most one per cluster: troubles open at the same
time are one incident) and the events from that incident's start on. The open incident
becomes a trouble from its start to `since_offset` (the increment's first offset), so every
trouble carried over joins it; its id is its start, so the new row replaces the open one (same key).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from functools import partial
from itertools import groupby
from typing import TypeAlias

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from pyspark import Broadcast
from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.pandas.types import from_arrow_schema

from .kraft.brokers import broker_state, in_service
from .kraft.records import REGISTER_BROKER_RECORD, UNREGISTER_BROKER_RECORD
from .kraft.timing import window_at, window_history
from .kraft.troubles import OFFLINE, REASSIGNING, RECOVERING_KIND, UNDER_MIN_ISR, UNDER_REPLICATED
from .lake.delta import chunked
from .lake.schema import table_schema
from .lake.work import collect_together

# the worst first: of troubles starting at one offset, the first named is the cause
TROUBLE_KINDS = (OFFLINE, UNDER_MIN_ISR, RECOVERING_KIND, REASSIGNING, UNDER_REPLICATED)
INTERVAL_KEY = list(table_schema("partition_intervals").key)
SAME_WRITE_MS = 1000
# incidents' columns as this module makes them: all but `unknown_offsets`, which the
# increment adds (it knows what its source could not read)
COLUMNS = [c for c in table_schema("incidents").names if c != "unknown_offsets"]
_OPEN_END = 2**63 - 1  # the end offset of an open trouble, for ordering only
# a broker outage; `window_ms`: how long before its start a trouble it caused can start
_OUTAGE_ARROW = pa.schema([("cluster_id", pa.string()), ("broker_id", pa.int32()),
                           ("cause", pa.string()), ("start_offset", pa.int64()),
                           ("start_ts", pa.timestamp("us", tz="UTC")), ("end_offset", pa.int64()),
                           ("end_ts", pa.timestamp("us", tz="UTC")), ("window_ms", pa.int64())])
EVENT_COLUMNS = ["cluster_id", "offset", "event_type", "topic_id", "partition_id",
                 "topic_name"]
# an incident as its sweep and its counts make it (`_with_counts`): the table's columns but
# those derived after it (`duration_ms` from the two timestamps, `is_open` from the end,
# `unknown_offsets` by the increment, which knows what its source could not read)
_OUT_ARROW = pa.schema([f.with_nullable(True) for f in table_schema("incidents").arrow
                        if f.name not in ("duration_ms", "is_open", "unknown_offsets")])
# what `_counted` adds to an incident: its events' counts, by the incident's key
_COUNTS = ("partitions_affected", "event_types", "event_partitions", "events",
           "unclean_elections", "data_loss_partitions")
_COUNT_ARROW = pa.schema([_OUT_ARROW.field("cluster_id"), _OUT_ARROW.field("start_offset"),
                          *(_OUT_ARROW.field(name) for name in _COUNTS)])
# what `sweep_of_cluster` finds: an incident but its events' counts
_SWEPT_ARROW = pa.schema([f for f in _OUT_ARROW if f.name not in _COUNTS])
# an event in an incident (`_tagged`): EVENT_COLUMNS and the incident's start
_TAGGED_ARROW = pa.schema([
    *(table_schema("partition_events").arrow.field(c).with_nullable(True) for c in EVENT_COLUMNS),
    pa.field("start_offset", pa.int64())])
_INT_ARRAY = "array<int>"
# rows a driver-side sweep takes as they are: a DataFrame, or Arrow rows the driver holds
Frame: TypeAlias = DataFrame | pa.Table


def duration_ms(start: Column, end: Column) -> Column:
    """Milliseconds between two timestamps (null while the end is)."""
    return ((end.cast("double") - start.cast("double")) * 1000).cast("long")


def _micros(table: pa.Table, name: str) -> pa.ChunkedArray:
    """A timestamp column as microseconds since the epoch (nulls stay null)."""
    return table.column(name).cast(pa.int64())


_BATCH_ROWS = 1_000_000  # events looked at together on the driver: bounds its memory
# a broker dropped by an event: the event's cluster, offset and time (µs, null: unknown)
DROP_ARROW = pa.schema([("cluster_id", pa.string()), ("broker", pa.int32()),
                        ("offset", pa.int64()), ("us", pa.int64())])
DROP_EVENT_COLUMNS = ["cluster_id", "offset", "timestamp", "prev_isr", "new_isr",
                      "prev_leader", "new_leader"]
# an outage's first drop in the same controller write (`_near_drops`), by its row number
_NEAR_ARROW = pa.schema([("run", pa.int64()), ("offset", pa.int64()), ("us", pa.int64())])


def _batch_drops(batch: pa.RecordBatch) -> pa.Table:
    """A broker is dropped by an event whose `prev_isr` holds it and `new_isr` does not, or
    whose previous leader it was (a real broker id) and the new leader is another or none:
    (cluster, broker, offset, µs) of each such pair of `batch`.

    By Arrow's and numpy's kernels over the lists' elements, not a Python loop per event:
    a first ingest hands over every event of the cluster (two million for a day of the
    simulator's `large` cluster, thirteen million for its week), which the loop took 10-20 s
    a day of."""

    def members(column: str) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(row, broker, both as one key) of every element of the column's lists."""
        lists = batch.column(column)
        rows = pc.list_parent_indices(lists).to_numpy().astype(np.int64)
        brokers = pc.list_flatten(lists).to_numpy(zero_copy_only=False).astype(np.int64)
        return rows, brokers, (rows << 32) | (brokers & 0xFFFFFFFF)

    rows_p, brokers_p, keys_p = members("prev_isr")
    kept = np.sort(members("new_isr")[2])  # in row order already: a cheap sort
    at = np.minimum(np.searchsorted(kept, keys_p), max(len(kept) - 1, 0))
    gone = kept[at] != keys_p if len(kept) else np.ones(len(keys_p), bool)
    prev, new = batch.column("prev_leader"), batch.column("new_leader")
    moved = pc.and_(pc.greater_equal(prev, 0),
                    pc.invert(pc.fill_null(pc.equal(prev, new), False)))
    led = pc.indices_nonzero(pc.fill_null(moved, False)).to_numpy().astype(np.int64)
    rows = pa.array(np.concatenate([rows_p[gone], led]))
    brokers = pa.concat_arrays([pa.array(brokers_p[gone].astype(np.int32)),
                                pc.take(prev, pa.array(led)).cast(pa.int32())])
    return pa.table([pc.take(batch.column("cluster_id"), rows), brokers,
                     pc.take(batch.column("offset"), rows),
                     pc.take(batch.column("timestamp"), rows).cast(pa.int64())],
                    schema=DROP_ARROW)


def outage_runs(windows: dict[str, list[tuple[int, int, int]]], brokers: pa.Table
                ) -> pa.Table:
    """The broker outages (`_OUTAGE_ARROW`) of step 1 of the module docstring as the broker
    records alone place them: their starts are moved back by `_near_drops`.

    `brokers`: rows of the brokers table, of every broker involved from its first record on;
    `windows`: cluster id -> `kraft.timing.window_history` of its ConfigRecords (none: Kafka's
    defaults). Each broker's records are walked in log order through `kraft.brokers`: an
    outage begins at a record leaving the broker out of service after it had been in it,
    and ends at the record putting it back (None while it lasts)."""
    ts_col = brokers.schema.get_field_index("timestamp")  # as µs, like the events' times
    rows = sorted(brokers.set_column(ts_col, "timestamp", _micros(brokers, "timestamp"))
                  .to_pylist(), key=lambda r: (r["cluster_id"], r["broker_id"], r["offset"],
                                               r["seq"]))
    out: dict[str, list] = {c: [] for c in _OUTAGE_ARROW.names}
    for (cid, broker), mine in groupby(rows, key=lambda r: (r["cluster_id"], r["broker_id"])):
        history = windows.get(cid) or window_history([])
        state: dict = {}
        served = False
        runs: list[list] = []  # [cause, start offset, start µs, end offset, end µs]
        for r in mine:
            state = broker_state(r, state)
            now = in_service(state)
            out_run = bool(runs) and runs[-1][3] is None
            if out_run and now:
                runs[-1][3:] = [r["offset"], r["timestamp"]]  # back in service: the run ends
            elif served and not now and not out_run:
                kind = r["record_type"]
                restarted = kind == REGISTER_BROKER_RECORD and r["seq"] == 0
                cause = ("broker_unregistered" if kind == UNREGISTER_BROKER_RECORD
                         else "broker_restarted" if restarted
                         else "broker_controlled_shutdown" if state.get("ics")
                         else "broker_fenced")
                runs.append([cause, r["offset"], r["timestamp"], None, None])
            served = served or now
        for cause, start, start_us, end, end_us in runs:
            for name, value in zip(_OUTAGE_ARROW.names, (
                    cid, broker, cause, start, start_us, end, end_us, window_at(history, start)),
                                   strict=True):
                out[name].append(value)
    return pa.table(out, schema=_OUTAGE_ARROW)


def _near_drops(runs: pa.Table, events: pa.RecordBatch) -> pa.Table:
    """Each outage's first drop (`_NEAR_ARROW`) among `events`: a change dropping its broker
    at an offset before the outage's start and at most `SAME_WRITE_MS` before its time (the
    same controller write). `runs`: the outages (cluster_id, broker_id, start_offset,
    start_us: µs, run: their row number); an outage or a drop without a time has none."""
    drops = _batch_drops(events).filter(pc.is_valid(pc.field("us")))
    if not drops.num_rows or not runs.num_rows:
        return _NEAR_ARROW.empty_table()
    near = drops.join(runs, keys=["cluster_id", "broker"], right_keys=["cluster_id", "broker_id"],
                      join_type="inner", use_threads=False).filter(
        (pc.field("offset") < pc.field("start_offset"))
        & (pc.field("us") >= pc.field("start_us") - SAME_WRITE_MS * 1000))
    return _first_per_run(near.select(_NEAR_ARROW.names).cast(_NEAR_ARROW))


def _first_per_run(near: pa.Table) -> pa.Table:
    """Of `_NEAR_ARROW` rows, each run's first drop: the lowest offset, then the earliest."""
    near = near.sort_by([(c, "ascending") for c in _NEAR_ARROW.names])
    run = near.column("run").to_numpy()
    first = np.concatenate([[True], run[1:] != run[:-1]]) if len(run) else np.zeros(0, bool)
    return near.filter(pa.array(first))


def _first_drops(runs: pa.Table, events: Iterable[pa.RecordBatch]) -> pa.Table:
    """Each outage's first drop among all of `events` (`_near_drops`, `_first_per_run`)."""
    return _first_per_run(pa.concat_tables([_NEAR_ARROW.empty_table(), *(
        _near_drops(runs, b) for b in events)]))


def _near_batches(runs: Broadcast[pa.Table], batches: Iterator[pa.RecordBatch]
                  ) -> Iterator[pa.RecordBatch]:
    """What each Spark task runs over its share of the events (`broker_outages`): each
    outage's first drop among them."""
    yield from _first_drops(runs.value, batches).to_batches()


def _outage_keys(outages: pa.Table) -> pa.Table:
    """What `_near_drops` looks an outage up by: its cluster, broker, start (its time as µs)
    and row number."""
    return pa.table({"cluster_id": outages.column("cluster_id"),
                     "broker_id": outages.column("broker_id"),
                     "start_offset": outages.column("start_offset"),
                     "start_us": _micros(outages, "start_ts"),
                     "run": pa.array(np.arange(outages.num_rows, dtype=np.int64))})


def _moved(runs: pa.Table, near: pa.Table) -> pa.Table:
    """The outages (`_OUTAGE_ARROW`) with the start of each that has a first drop (`near`,
    one row per run at most) moved back to that drop."""
    at = np.full(runs.num_rows, -1, np.int64)
    at[near.column("run").to_numpy()] = np.arange(near.num_rows)
    taken = pa.array(at, mask=at < 0)
    start = pc.coalesce(near.column("offset").take(taken), runs.column("start_offset"))
    start_ts = pc.coalesce(near.column("us").take(taken).cast(pa.timestamp("us", tz="UTC")),
                           runs.column("start_ts"))
    return runs.set_column(runs.schema.get_field_index("start_offset"), "start_offset", start) \
        .set_column(runs.schema.get_field_index("start_ts"), "start_ts", start_ts)


def broker_outages(brokers: Frame, events: Frame,
                   windows: dict[str, list[tuple[int, int, int]]], *,
                   on_driver: bool = False) -> DataFrame:
    """Broker outages (`_OUTAGE_ARROW`, the window from `kraft.timing`).

    `brokers`: rows of the brokers table for every broker involved, from its first record on
    (the table is small: one row per broker state change); `events`: partition_events rows
    (those in the same controller write as a broker record move its outage's start);
    `windows`: cluster id -> its `kraft.timing.window_history`, as the kernel's context
    collected it (`fold.context`; a cluster without one: Kafka's defaults); `on_driver`:
    a small increment's few rows, looked at on the driver (only then may `events` be Arrow).

    The outages are found on the driver from the broker records (`outage_runs`); their
    first drops where the events are, by Spark's tasks (`_near_batches`), each task handing
    back at most one row per outage: a first ingest's millions of events are neither
    shuffled nor gathered in one worker.
    """
    ev = events.select(list(DROP_EVENT_COLUMNS))
    frames = {"brokers": brokers, "events": ev} if on_driver else {"brokers": brokers}
    got = _on_driver(frames)
    runs = outage_runs(windows, got["brokers"])
    keys = _outage_keys(runs)
    if not runs.num_rows:
        near = _NEAR_ARROW.empty_table()
    elif on_driver:
        near = _first_drops(keys, got["events"].to_batches(_BATCH_ROWS))
    else:
        assert isinstance(ev, DataFrame)
        shared = ev.sparkSession.sparkContext.broadcast(keys)
        near = _first_per_run(ev.mapInArrow(partial(_near_batches, shared),
                                            from_arrow_schema(_NEAR_ARROW)).toArrow())
    spark = SparkSession.active()
    return spark.createDataFrame(chunked(_moved(runs, near)), from_arrow_schema(_OUTAGE_ARROW))


def _on_driver(frames: dict[str, Frame]) -> dict[str, pa.Table]:
    """Each frame's rows as Arrow: Arrow tables as they are, the DataFrames collected
    together in one Spark job (none when there are none)."""
    spark_made = {n: df for n, df in frames.items() if isinstance(df, DataFrame)}
    got = collect_together(spark_made) if spark_made else {}
    return {n: got[n] if isinstance(df, DataFrame) else df for n, df in frames.items()}


def _troubles(intervals: DataFrame, outages: DataFrame, open_incident: DataFrame | None,
              since_offset: int | None) -> DataFrame:
    cols = ["cluster_id", "start_offset", "start_ts", "end_offset", "end_ts", "cause",
            "cause_broker", "brokers", "prio", "window_ms"]
    part = intervals.filter(F.col("kind").isin(*TROUBLE_KINDS)).select(
        "cluster_id", "start_offset", "start_ts", "end_offset", "end_ts",
        F.col("kind").alias("cause"), F.lit(None).cast("int").alias("cause_broker"),
        F.array().cast(_INT_ARRAY).alias("brokers"),
        # troubles starting at one offset: the worst first (TROUBLE_KINDS' order)
        F.array_position(F.array(*map(F.lit, TROUBLE_KINDS)), F.col("kind")).cast("int")
        .alias("prio"),
        F.lit(None).cast("long").alias("window_ms"))
    brk = outages.select("cluster_id", "start_offset", "start_ts", "end_offset", "end_ts",
                         "cause", F.col("broker_id").alias("cause_broker"),
                         F.array("broker_id").alias("brokers"), F.lit(0).alias("prio"),
                         "window_ms")
    t = part.unionByName(brk)
    if open_incident is not None:
        if since_offset is None:
            raise ValueError("an open incident needs the increment's first offset")
        t = t.unionByName(open_incident.select(
            "cluster_id", "start_offset", "start_ts",
            F.lit(since_offset).cast("long").alias("end_offset"),
            F.lit(None).cast("timestamp").alias("end_ts"), "cause", "cause_broker",
            "brokers", F.lit(-1).alias("prio"), F.lit(0).cast("long").alias("window_ms")))
    return t.select(*cols)


def incidents(intervals: DataFrame, outages: DataFrame, events: Frame, *,
              open_incident: DataFrame | None = None, since_offset: int | None = None,
              on_driver: bool = False) -> DataFrame:
    """incidents rows (COLUMNS), see the module docstring.

    `intervals`: partition_intervals rows; `outages`: `broker_outages` (starts moved back to
    the same controller write, each with its attribution window); `events`:
    partition_events rows from the earliest start on;
    `open_incident`: the lake's incident with a null end, with `since_offset`.

    Each cluster's troubles are swept in one Python call (`sweep_of_cluster`), which Spark
    runs once per cluster id; the incidents it finds are few and come to the driver. Their
    events are then found where the events are, by Spark's tasks (`_tagged_batches`: each
    event's incident by bisection over the incidents' starts), and counted once per
    incident (`_counted`), so that no worker holds a cluster's events at once (a week of a
    busy cluster: thirteen million). `on_driver` (a small increment's few rows): the same
    functions over both sides as Arrow (`_on_driver`; only then may `events` be Arrow).
    """
    t = _troubles(intervals, outages, open_incident, since_offset)
    ev = events.select(list(EVENT_COLUMNS))
    spark = t.sparkSession
    if on_driver:
        got = _on_driver({"troubles": t, "events": ev})
        swept = pa.concat_tables([_SWEPT_ARROW.empty_table(), *(
            sweep_of_cluster(mine) for _cid, mine in _clusters(got["troubles"]))])
        counts = _counted_all(_tagged(_ranges(swept), got["events"]))
    else:
        swept = chunked(t.groupBy("cluster_id").applyInArrow(
            sweep_of_cluster, from_arrow_schema(_SWEPT_ARROW)).toArrow())
        counts = _COUNT_ARROW.empty_table()
        assert isinstance(ev, DataFrame)
        if swept.num_rows:  # no incident: no event to look at
            ranges = spark.sparkContext.broadcast(_ranges(swept))
            counts = chunked(ev.mapInArrow(partial(_tagged_batches, ranges),
                                           from_arrow_schema(_TAGGED_ARROW))
                             .groupBy("cluster_id", "start_offset")
                             .applyInArrow(_counted, from_arrow_schema(_COUNT_ARROW))
                             .toArrow())
    out = spark.createDataFrame(chunked(_with_counts(swept, counts)),
                                from_arrow_schema(_OUT_ARROW))
    return out.withColumns({"duration_ms": duration_ms(F.col("start_ts"), F.col("end_ts")),
                            "is_open": F.col("end_offset").isNull()}).select(*COLUMNS)


def sweep_of_cluster(troubles: pa.Table) -> pa.Table:
    """The incidents of one cluster (`_SWEPT_ARROW`: all but their events' counts):
    `_troubles` rows swept in start order (steps 2-3 of the module docstring).

    A trouble starting after every earlier one has ended opens a new incident; otherwise it
    joins the open one, whose reach is the latest end seen so far. Of troubles starting at
    one offset the worst comes first (`prio`); among equals the order is by time, cause and
    broker (nulls first, as Spark orders them), so the first trouble and the cause do not
    depend on the order Spark delivered the rows in.

    The order and the reach are Arrow's and numpy's (a sort, a running maximum: a trouble
    never ends before it starts, so the latest end so far is the open incident's); each
    incident's troubles are then read as Python values one incident at a time. A week's
    first ingest sweeps millions of troubles, which as Python values all at once took 2.6 GB
    of one worker.
    """
    n = troubles.num_rows
    if not n:
        return _SWEPT_ARROW.empty_table()
    ranked = troubles.take(pc.sort_indices(troubles, sort_keys=[
        (name, "ascending", "at_start")
        for name in ("start_offset", "prio", "start_ts", "cause", "cause_broker")]))
    start = ranked.column("start_offset").to_numpy()
    reach = np.maximum.accumulate(pc.fill_null(ranked.column("end_offset"), _OPEN_END)
                                  .to_numpy())
    opens = np.flatnonzero(np.concatenate([[True], start[1:] > reach[:-1]]))
    cid = troubles.column("cluster_id")[0].as_py()
    out: dict[str, list] = {c: [] for c in _SWEPT_ARROW.names}
    for lo, hi in zip(opens, [*opens[1:], n], strict=True):
        g = ranked.slice(lo, hi - lo)
        g_start = g.column("start_offset").to_pylist()
        end = g.column("end_offset").to_pylist()
        start_us = _micros(g, "start_ts").to_pylist()
        end_us = _micros(g, "end_ts").to_pylist()
        broker = g.column("cause_broker").to_pylist()
        window = g.column("window_ms").to_pylist()
        rows = range(hi - lo)
        last = max(rows, key=lambda i: (_OPEN_END if end[i] is None else end[i],
                                        end_us[i] is not None, end_us[i] or 0))
        t0 = start_us[0]
        # the cause: the first outage that began at most its window after the first trouble
        by = next((i for i in rows if broker[i] is not None and (
            start_us[i] is None or window[i] is None or t0 is None
            or start_us[i] - window[i] * 1000 <= t0)), None)
        closed = end[last] is not None
        out["cluster_id"].append(cid)
        out["start_offset"].append(g_start[0])
        out["start_ts"].append(t0)
        out["end_offset"].append(end[last] if closed else None)
        out["end_ts"].append(end_us[last] if closed else None)
        out["cause"].append(g.column("cause")[0 if by is None else by].as_py())
        out["cause_broker"].append(None if by is None else broker[by])
        out["brokers"].append(sorted({b for bs in g.column("brokers").to_pylist()
                                      for b in bs or ()}))
        out["incident_id"].append(f"incident-{g_start[0]}")
    return pa.table(out, schema=_SWEPT_ARROW)


def _clusters(rows: pa.Table) -> Iterator[tuple[str, pa.Table]]:
    """(cluster id, its rows) of each cluster `rows` hold."""
    ids = rows.column("cluster_id")
    for cid in pc.unique(ids).to_pylist():
        yield cid, rows.filter(pc.equal(ids, cid))


# cluster id -> (its incidents' starts, ascending; their ends, `_OPEN_END` while open)
_Ranges = dict[str, tuple[np.ndarray, np.ndarray]]


def _ranges(swept: pa.Table) -> _Ranges:
    """Each cluster's incidents as sorted arrays, for `_tagged` (incidents never overlap)."""
    out: _Ranges = {}
    for cid, mine in _clusters(swept):
        mine = mine.sort_by("start_offset")
        out[cid] = (mine["start_offset"].to_numpy(),
                    pc.fill_null(mine["end_offset"], _OPEN_END).to_numpy())
    return out


def _tagged(ranges: _Ranges, events: pa.Table) -> pa.Table:
    """The events that lie in an incident, [start, end] (step 4 of the module docstring),
    with its start (`_TAGGED_ARROW`); the others are left out."""
    parts = [_TAGGED_ARROW.empty_table()]
    for cid, mine in _clusters(events):
        if cid not in ranges:
            continue
        starts, ends = ranges[cid]
        offsets = mine.column("offset").to_numpy()
        at = np.searchsorted(starts, offsets, "right") - 1
        inside = (at >= 0) & (offsets <= ends[np.maximum(at, 0)])
        parts.append(mine.filter(pa.array(inside))
                     .append_column("start_offset", pa.array(starts[at[inside]]))
                     .select(_TAGGED_ARROW.names).cast(_TAGGED_ARROW))
    return pa.concat_tables(parts)


def _tagged_batches(ranges: Broadcast[_Ranges], batches: Iterator[pa.RecordBatch]
                    ) -> Iterator[pa.RecordBatch]:
    """What each Spark task runs over its share of the events (`incidents`)."""
    for batch in batches:
        yield from _tagged(ranges.value, pa.Table.from_batches([batch])).to_batches()


def _counted_all(tagged: pa.Table) -> pa.Table:
    """`_counted` of each incident's events, on the driver."""
    tagged = tagged.sort_by([("cluster_id", "ascending"), ("start_offset", "ascending")])
    keys = pa.table([tagged["cluster_id"], tagged["start_offset"]], names=["c", "s"])
    bounds = keys.group_by(["c", "s"], use_threads=False).aggregate([("s", "count")])
    parts, lo = [_COUNT_ARROW.empty_table()], 0
    for n in bounds["s_count"].to_pylist():
        parts.append(_counted(tagged.slice(lo, n)))
        lo += n
    return pa.concat_tables(parts)


def _counted(events: pa.Table) -> pa.Table:
    """One incident's row of counts (`_COUNT_ARROW`) from its events (`_TAGGED_ARROW`): by
    Arrow's kernels, not a Python object per event (an incident of a first ingest can hold
    millions of them)."""
    part = pc.binary_join_element_wise(
        events.column("topic_id"), pc.cast(events.column("partition_id"), pa.string()), ":")
    per_type = pa.table({"t": events.column("event_type"), "p": part}).group_by("t").aggregate(
        [("p", "count_distinct")]).sort_by("t")
    unclean = events.filter(pc.equal(events.column("event_type"), "unclean_election"))
    return pa.table({
        "cluster_id": [events.column("cluster_id")[0].as_py()],
        "start_offset": [events.column("start_offset")[0].as_py()],
        "partitions_affected": [pc.count_distinct(part).as_py()],
        "event_types": [per_type.column("t").to_pylist()],
        "event_partitions": [per_type.column("p_count_distinct").to_pylist()],
        "events": [events.num_rows],
        "unclean_elections": [unclean.num_rows],
        "data_loss_partitions": [sorted({
            f"{name or tid}:{pid}" for name, tid, pid in zip(
                *(unclean.column(c).to_pylist() for c in ("topic_name", "topic_id",
                                                          "partition_id")), strict=True)})],
    }, schema=_COUNT_ARROW)


def _with_counts(swept: pa.Table, counts: pa.Table) -> pa.Table:
    """The incidents (`_OUT_ARROW`): each swept row with its events' counts (none: zeros
    and empty lists)."""
    got = {(c, s): i for i, (c, s) in enumerate(zip(counts["cluster_id"].to_pylist(),
                                                    counts["start_offset"].to_pylist(),
                                                    strict=True))}
    at = pa.array([got.get(k) for k in zip(swept["cluster_id"].to_pylist(),
                                           swept["start_offset"].to_pylist(), strict=True)],
                  pa.int64())
    none = {"partitions_affected": 0, "event_types": [], "event_partitions": [], "events": 0,
            "unclean_elections": 0, "data_loss_partitions": []}
    columns = {name: swept[name] for name in _SWEPT_ARROW.names}
    for name, empty in none.items():
        taken = counts[name].take(at)
        columns[name] = pc.if_else(pc.is_null(at), pa.scalar(empty, taken.type), taken)
    return pa.table([columns[f.name] for f in _OUT_ARROW], schema=_OUT_ARROW)
