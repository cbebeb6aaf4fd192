"""The per-partition kernel: silver partition changes -> timeline, events, intervals.

One partition's changes, in offset order, after its seed (the state `partition_current`
held, and the intervals still open for it), are folded by plain Python with Kafka's rules
from `kraft/`: `PartitionRegistration.from_record` / `merge` / `clear_elr` apply a record,
`kraft.events.step_events` names the events of each step, `kraft.troubles.trouble_kinds`
the troubles of each state. One pass emits every gold row of the partition:

* `timeline`: every new state, with its validity (closed by the next state or by the
  partition's deletion; open and `is_current` when last), and the seed once it is closed.
  The seed's key (valid_from_offset, seq) is the one `partition_current` holds, which is
  the timeline row the previous increment left current: the closed seed replaces it
  (`jobs/increment.py`, a replacement of the cluster's current rows);
* `event`: `partition_events` rows;
* `interval`: runs of consecutive timeline states in one trouble kind (a run that goes on
  from the seed keeps the start of the interval the lake holds open);
* `gone`: the partition was deleted (its `partition_current` row goes);
* `orphan`: a change to a partition that does not exist (counted, not folded).

Offsets a damaged batch took with it (`ClusterContext.unknown`) end every live state there:
the same state goes on from the first unknown offset as a row of source `gap`, and it and
every state derived from it carry `uncertain_since` until a full state re-anchors the
partition: a PartitionRecord, or a check snapshot's state (input rows with `_anchor` set,
applied to uncertain partitions only; the others are only reconciled against it).

Spark distributes the rule, it does not re-express it: `run` repartitions the rows by
partition key, sorts them, and calls `fold_rows` through `mapInArrow`; the cluster context
(min.insync.replicas and metadata.version histories, topic names) is a broadcast value.
A small increment folds its rows on the driver instead (`run_on_driver`), with the same
`fold_batches` a task runs.
Kafka refuses a partition record of an unknown topic and a delete of a partition that does
not exist, so do these rules: silver keeps only rows of live topics, and here a delete of a
missing partition changes nothing, a change to one is an orphan.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from functools import partial
from operator import itemgetter
from typing import Any

import pyarrow as pa
from pyspark import Broadcast
from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql import types as T
from pyspark.sql.pandas.types import to_arrow_schema

from ..kraft.configs import partition_min_isr
from ..kraft.events import CHANGED, CREATED, DELETED, ELR_CLEARED, RESET, SNAPSHOT, step_events
from ..kraft.partition import (
    LRS_NO_CHANGE,
    NO_LEADER_CHANGE,
    RECOVERING,
    STATE_COLUMNS,
    PartitionRegistration,
)
from ..kraft.records import CLEAR_ELR_RECORD, GAP_SOURCE, UNKNOWN_RECORD
from ..kraft.troubles import KINDS, trouble_kinds
from ..lake.schema import table_schema
from .context import ClusterContext, History
from .silver import KEY

SEED, OPEN_INTERVAL, CHANGE = 0, 1, 2  # `_role` of an input row; seeds sort first
ORDER = [*KEY, "_role", "offset", "seq"]  # the order `fold_rows` reads its input in
OUTPUTS = ("timeline", "event", "interval", "gone", "orphan")
STATE = list(STATE_COLUMNS)
_TABLES = ("partition_timeline", "partition_events", "partition_intervals")


def output_schema() -> T.StructType:
    """`out` (one of OUTPUTS) and the union of the three tables' columns: each output row
    fills the columns of its table (`lake.delta.conform` selects them)."""
    fields = [T.StructField("out", T.StringType())]
    seen = {"out"}
    for name in _TABLES:
        for f in table_schema(name).spark.fields:
            if f.name not in seen:
                seen.add(f.name)
                fields.append(T.StructField(f.name, f.dataType))
    return T.StructType(fields)


# ---------------------------------------------------------------- one partition


def _state_of(row: dict[str, Any]) -> PartitionRegistration:
    return PartitionRegistration.from_record({k: row[k] for k in STATE if row[k] is not None})


_NO_STATE = dict.fromkeys(STATE)


def _step_kind(row: dict[str, Any], before: PartitionRegistration | None) -> str:
    if row["is_delete"]:
        return DELETED
    if row["is_reset"]:
        if row["seq"] != 0:
            return SNAPSHOT
        return CREATED if before is None else RESET
    return ELR_CLEARED if row["record_type"] == CLEAR_ELR_RECORD else CHANGED


def _added(new: list[int] | None, old: list[int] | None) -> list[int]:
    """Members of `new` not in `old`, sorted (None: no state, no members)."""
    if not new:
        return []
    return sorted(set(new) - set(old or ()))


def _event_row(base: dict[str, Any], row: dict[str, Any], event: str, detection: str | None,
               pb: dict[str, Any], pa_: dict[str, Any], min_isr: int | None,
               since: tuple[int, int] | None, uncertain: int | None) -> dict[str, Any]:
    """A `partition_events` row; `pb` / `pa_` the state columns before and after;
    `uncertain`: the state before was carried across unknown offsets from there on."""
    b_elr, a_elr = pb["eligible_leader_replicas"], pa_["eligible_leader_replicas"]
    b_lk, a_lk = pb["last_known_elr"], pa_["last_known_elr"]
    replicas = pa_["replicas"]
    recovered = event == "recovery_completed" and since is not None
    # an unclean election names the recovery it belongs to (`since`: see fold_partition)
    linked = recovered or (event == "unclean_election" and since is not None)
    return {**base, "out": "event", "offset": row["offset"], "seq": row["seq"],
            "timestamp": row["timestamp"], "event_type": event, "detection": detection,
            "record_type": row["record_type"],
            "prev_leader": pb["leader"], "new_leader": pa_["leader"],
            "prev_isr": pb["isr"], "new_isr": pa_["isr"],
            "prev_eligible_leader_replicas": pb["eligible_leader_replicas"],
            "new_eligible_leader_replicas": pa_["eligible_leader_replicas"],
            "prev_last_known_elr": pb["last_known_elr"],
            "new_last_known_elr": pa_["last_known_elr"],
            "elr_added": _added(a_elr, b_elr), "elr_removed": _added(b_elr, a_elr),
            "last_known_elr_added": _added(a_lk, b_lk),
            "last_known_elr_removed": _added(b_lk, a_lk),
            "prev_leader_recovery_state": pb["leader_recovery_state"],
            "new_leader_recovery_state": pa_["leader_recovery_state"],
            "prev_replicas": pb["replicas"], "new_replicas": pa_["replicas"],
            "min_isr": None if replicas is None else partition_min_isr(min_isr, len(replicas)),
            "recovery_started_offset": since[0] if linked and since is not None else None,
            "recovery_duration_ms": _ms(since[1], row["timestamp"])
            if recovered and since is not None else None,
            "uncertain_since": uncertain}


def _ms(start_us: int | None, end_us: int | None) -> int | None:
    """Milliseconds between two microsecond timestamps (None while either is)."""
    if start_us is None or end_us is None:
        return None
    return int((end_us - start_us) / 1000)


def _fold_partition(rows: list[dict[str, Any]], ctx: ClusterContext) -> Iterator[dict[str, Any]]:
    """Every output row of one partition; `rows` in (role, offset, seq) order."""
    first = rows[0]
    name = ctx.topic_names.get(first["topic_id"])
    base = {"cluster_id": first["cluster_id"], "topic_id": first["topic_id"],
            "partition_id": first["partition_id"], "topic_name": name}
    state: PartitionRegistration | None = None
    cols = _NO_STATE  # the columns of `state`, computed once per state
    since: tuple[int, int] | None = None  # (offset, ts) RECOVERING began
    states: list[dict[str, Any]] = []  # the partition's timeline here (`_entry`), seed first
    open_starts: dict[str, tuple[int, int, int]] = {}
    last_delete = False
    uncertain: int | None = None  # carried across unknown offsets from there on
    gaps = iter(ctx.unknown)
    gap = next(gaps, None)
    for row in rows:
        role = row["_role"]
        if role == OPEN_INTERVAL:
            open_starts[row["kind"]] = (row["start_offset"], row["start_seq"], row["start_ts"])
            continue
        if role == SEED:
            state = _state_of(row)
            cols = state.as_dict(directories=True)
            if state.leader_recovery_state == RECOVERING:
                since = (row["recovering_since_offset"], row["recovering_since_ts"])
            uncertain = row["uncertain_since"]
            states.append(_entry(row, state, cols, True, None, row["recovering_since_offset"],
                                 row["recovering_since_ts"], uncertain))
            continue
        off, seq = row["offset"], row["seq"]
        while gap is not None and gap[0] <= off:
            if state is not None:
                uncertain = _carry_across(gap, states, ctx, name, since, uncertain)
            gap = next(gaps, None)
        if row.get("_anchor") and uncertain is None:
            continue  # a check snapshot's state: reconciled against, not applied
        kind = _step_kind(row, state)
        if kind == DELETED:
            if state is None:
                continue  # only a partition that exists can end
            _close(states[-1], row, deleted=True)
            if seq == 0:
                yield _event_row(base, row, "partition_deleted", row["record_type"], cols,
                                 _NO_STATE, None, None, uncertain)
            state, cols, since, last_delete, uncertain = None, _NO_STATE, None, True, None
            continue
        if kind in (CHANGED, ELR_CLEARED) and state is None:
            yield {**base, "out": "orphan", "offset": off, "seq": seq,
                   "record_type": row["record_type"]}
            continue
        if kind == ELR_CLEARED:
            assert state is not None  # an orphan went above
            if not state.elr_clear_changes:
                continue  # Kafka writes nothing for it: no step
            new = state.clear_elr()
        elif kind == CHANGED:
            assert state is not None  # an orphan went above
            new, _problem = state.merge(
                {k: row[k] for k in STATE if row[k] is not None})
        else:
            new = _state_of(row)
        min_isr = ctx.min_isr(name, off, seq)
        new_cols = new.as_dict(directories=True)
        before_since, before_uncertain = since, uncertain
        if kind not in (CHANGED, ELR_CLEARED):
            uncertain = None  # a full state (PartitionRecord, snapshot) re-anchors it
        if new.leader_recovery_state != RECOVERING:
            since = None
        elif state is None or state.leader_recovery_state != RECOVERING:
            since = (off, row["timestamp"])
        if seq == 0:
            leader_field = row["leader"] if kind == CHANGED and row["leader"] is not None \
                else NO_LEADER_CHANGE
            lrs_field = row["leader_recovery_state"] if kind == CHANGED and \
                row["leader_recovery_state"] is not None else LRS_NO_CHANGE
            for event, detection in step_events(
                    kind, state, new, min_isr=min_isr, metadata_version=ctx.mv(off, seq),
                    leader_field=leader_field, lrs_field=lrs_field):
                # recovery_completed closes the recovery in force before the step; an unclean
                # election belongs to the one in force after it (the one it starts, or for
                # `already_recovering` the one going on), or to the one it ends
                yield _event_row(base, row, event, detection, cols, new_cols, min_isr,
                                 before_since if event == "recovery_completed" else
                                 since or before_since, before_uncertain)
        if state is not None:  # after a deletion the last state is closed already
            _close(states[-1], row)
        states.append(_entry(row, new, new_cols, False, min_isr, since and since[0],
                             since and since[1], uncertain))
        state, cols, last_delete = new, new_cols, False
    while gap is not None:  # unknown offsets after the partition's last change here
        if state is not None:
            uncertain = _carry_across(gap, states, ctx, name, since, uncertain)
        gap = next(gaps, None)
    if last_delete:
        yield {**base, "out": "gone"}
    if states and not (states[0]["_seed"] and "_to" not in states[0]):  # a seed alone: as was
        yield from (_timeline_row(base, s) for s in states)
        yield from _intervals(base, states, open_starts, ctx, name)


def _entry(row: dict[str, Any], state: PartitionRegistration, cols: dict[str, Any], seed: bool,
           min_isr: int | None, since_offset: int | None, since_ts: int | None,
           uncertain: int | None) -> dict[str, Any]:
    """A state of the partition's timeline, as `_timeline_row` and `_intervals` read it."""
    return {"offset": row["offset"], "seq": row["seq"], "timestamp": row["timestamp"],
            "record_type": row["record_type"], "source": row["source"], "_state": state,
            "_cols": cols, "_seed": seed, "_min_isr": min_isr,
            "recovering_since_offset": since_offset,
            "recovering_since_ts": since_ts, "uncertain_since": uncertain}


def _carry_across(gap: tuple[int, int, int | None], states: list[dict[str, Any]],
                  ctx: ClusterContext, name: str | None, since: tuple[int, int] | None,
                  uncertain: int | None) -> int:
    """The partition's last state carried across unknown offsets [lo, hi) (a damaged batch
    that may have held changes of any partition): it ends at `lo`, and the same state goes
    on from `lo` as a row of record type Unknown and source `gap`, marked uncertain from the
    first unknown offset on (Kafka's replay would have applied whatever those offsets held;
    nothing here can). Returns that offset. The row's time is the damaged batch's, or the
    last known state's when its header could not be read."""
    lo, _hi, ts = gap
    last = states[-1]
    row = {"offset": lo, "seq": 0, "timestamp": last["timestamp"] if ts is None else ts,
           "record_type": UNKNOWN_RECORD, "source": GAP_SOURCE}
    _close(last, row)
    uncertain = lo if uncertain is None else uncertain
    states.append(_entry(row, last["_state"], last["_cols"], False, ctx.min_isr(name, lo, 0),
                         since and since[0], since and since[1], uncertain))
    return uncertain


def _close(st: dict[str, Any], by: dict[str, Any], deleted: bool = False) -> None:
    """End state `st` at row `by`; `deleted`: the partition ends there (no state follows
    until it is created again, which starts a timeline and trouble runs of its own)."""
    st["_to"] = (by["offset"], by["timestamp"])
    st["_deleted"] = deleted


def _timeline_row(base: dict[str, Any], s: dict[str, Any]) -> dict[str, Any]:
    to = s.get("_to")
    return {**base, "out": "timeline", "valid_from_offset": s["offset"], "seq": s["seq"],
            "valid_from_ts": s["timestamp"], "valid_to_offset": to and to[0],
            "valid_to_ts": to and to[1], "is_current": to is None,
            "record_type": s["record_type"], "source": s["source"],
            **s["_cols"],
            "recovering_since_offset": s["recovering_since_offset"],
            "recovering_since_ts": s["recovering_since_ts"],
            "uncertain_since": s["uncertain_since"]}


def _intervals(base: dict[str, Any], states: list[dict[str, Any]],
               open_starts: dict[str, tuple[int, int, int]], ctx: ClusterContext,
               name: str | None) -> Iterator[dict[str, Any]]:
    """Maximal runs of consecutive states in each trouble kind. A run that includes the
    first state continues the interval the lake holds open for that kind (its start); a
    deletion ends every run (a partition created again starts from nothing)."""
    bad = [trouble_kinds(s["_state"], ctx.min_isr(name, s["offset"], s["seq"]) if s["_seed"]
                         else s["_min_isr"]) for s in states]
    for kind in KINDS:
        start: tuple[int, int, int] | None = None
        end: tuple[int, int] | None = None
        for i, s in enumerate(states):
            if kind in bad[i]:
                if start is None:
                    start = open_starts.get(kind) if i == 0 and kind in open_starts else (
                        s["offset"], s["seq"], s["timestamp"])
                end = s.get("_to")
                if not s.get("_deleted"):
                    continue
            if start is not None:
                yield _interval_row(base, kind, start, end)
                start = None
        if start is not None:
            yield _interval_row(base, kind, start, end)


def _interval_row(base: dict[str, Any], kind: str, start: tuple[int, int, int],
                  end: tuple[int, int] | None) -> dict[str, Any]:
    return {**base, "out": "interval", "kind": kind, "start_offset": start[0],
            "start_seq": start[1], "start_ts": start[2], "end_offset": end and end[0],
            "end_ts": end and end[1], "is_open": end is None,
            "duration_ms": _ms(start[2], end and end[1])}


# ---------------------------------------------------------------- Arrow in, Arrow out


def _rows(batches: Iterable[pa.RecordBatch]) -> Iterator[dict[str, Any]]:
    """Rows of Arrow batches as dicts; timestamps as integer microseconds."""
    for b in batches:
        cols = [(c.cast(pa.int64()) if pa.types.is_timestamp(c.type) else c).to_pylist()
                for c in b.columns]
        names = b.schema.names
        for values in zip(*cols, strict=True):
            yield dict(zip(names, values, strict=True))


def _batches(rows: list[dict[str, Any]], schema: pa.Schema) -> Iterator[pa.RecordBatch]:
    """One record batch per kind of output row; a kind's rows hold only its table's columns
    (`out` and the partition included), the others are nulls."""
    by_kind: dict[str, list[dict[str, Any]]] = {}
    for r in rows:
        by_kind.setdefault(r["out"], []).append(r)
    for rs in by_kind.values():
        names = [f.name for f in schema if f.name in rs[0]]
        # the rows' values as columns, transposed by itemgetter and zip in C: a Python loop
        # per column and row took a fifth of the kernel's time
        values = dict(zip(names, zip(*map(itemgetter(*names), rs), strict=True), strict=True))
        arrays = []
        for f in schema:
            if f.name not in values:
                arrays.append(pa.nulls(len(rs), f.type))
            elif pa.types.is_timestamp(f.type):
                arrays.append(pa.array(values[f.name], pa.int64()).cast(f.type))
            else:
                arrays.append(pa.array(values[f.name], f.type))
        yield pa.RecordBatch.from_arrays(arrays, schema=schema)


def empty_context(default_min_isr: int) -> ClusterContext:
    """The context of a cluster with no topic and no config known yet."""
    return ClusterContext({}, {}, History(), History(), default_min_isr)


def fold_rows(rows: Iterable[dict[str, Any]], contexts: dict[str, ClusterContext]
              ) -> Iterator[dict[str, Any]]:
    """`_fold_partition` over rows sorted by partition key (then role, offset, seq). A cluster
    without a context (no topic, no config known) gets an empty one."""
    empty = empty_context(1)
    group: list[dict[str, Any]] = []
    key = None
    for row in rows:
        k = (row["cluster_id"], row["topic_id"], row["partition_id"])
        if k != key and group:
            yield from _fold_partition(group, contexts.get(group[0]["cluster_id"], empty))
            group = []
        key = k
        group.append(row)
    if group:
        yield from _fold_partition(group, contexts.get(group[0]["cluster_id"], empty))


def _fold_batches(bc: Broadcast[dict[str, ClusterContext]], schema: pa.Schema,
                  batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
    """What each Spark task runs: its key-ordered input batches folded (the contexts come
    as a broadcast value)."""
    return fold_batches(bc.value, schema, batches)


def fold_batches(contexts: dict[str, ClusterContext], schema: pa.Schema,
                 batches: Iterable[pa.RecordBatch], batch_rows: int = 20_000
                 ) -> Iterator[pa.RecordBatch]:
    """`fold_rows` from key-ordered input batches to output batches of `schema`."""
    out: list[dict[str, Any]] = []
    for r in fold_rows(_rows(batches), contexts):
        out.append(r)
        if len(out) >= batch_rows:
            yield from _batches(out, schema)
            out = []
    if out:
        yield from _batches(out, schema)


def input_rows(changes: DataFrame, seeds: DataFrame, open_intervals: DataFrame,
               anchors: DataFrame | None = None) -> DataFrame:
    """The kernel's input, one row per change, seed and open interval, each marked with its
    `_role`, in no particular order (`run` groups and sorts them). `anchors`: full states
    (`partition_changes` rows) applied only to a partition whose state is uncertain."""
    cols: list[Column | str] = [*KEY, F.lit(CHANGE).alias("_role"), "offset", "seq",
                                "timestamp", "record_type", "source", "is_reset", "is_delete",
                                *STATE]
    rows = changes.select(*cols)
    if anchors is not None:
        rows = rows.unionByName(anchors.select(*cols, F.lit(True).alias("_anchor")),
                                allowMissingColumns=True)
    seed = seeds.select(*KEY, F.lit(SEED).alias("_role"),
                        F.col("valid_from_offset").alias("offset"), "seq",
                        F.col("valid_from_ts").alias("timestamp"), "record_type", "source",
                        F.lit(True).alias("is_reset"), F.lit(False).alias("is_delete"),
                        *STATE, "recovering_since_offset", "recovering_since_ts",
                        "uncertain_since")
    opened = open_intervals.select(*KEY, F.lit(OPEN_INTERVAL).alias("_role"), "kind",
                                   "start_offset", "start_seq", "start_ts")
    return rows.unionByName(seed, allowMissingColumns=True).unionByName(
        opened, allowMissingColumns=True)


def _arrow_output_schema(spark: SparkSession) -> pa.Schema:
    return to_arrow_schema(output_schema(), timezone=spark.conf.get("spark.sql.session.timeZone"))


def run_on_driver(spark: SparkSession, changes: DataFrame, seeds: DataFrame,
                  open_intervals: DataFrame, contexts: dict[str, ClusterContext],
                  anchors: DataFrame | None = None) -> pa.Table:
    """`run`'s rows, folded here instead of by Spark's tasks: the input is collected as
    Arrow (one Spark job), ordered, and folded by the same `fold_batches` each task runs.

    For a small increment (a stream's micro-batch, an hourly ingest): its few thousand rows
    fold in milliseconds, where the distributed fold pays a shuffle, a wave of Python tasks
    and a write of its output before anything reads it."""
    every = input_rows(changes, seeds, open_intervals, anchors).toArrow()
    ordered = every.sort_by([(c, "ascending") for c in ORDER])
    schema = _arrow_output_schema(spark)
    batches = list(fold_batches(contexts, schema, ordered.to_batches()))
    # no rows: one empty chunk per column, not none (pyspark cannot make a frame of those)
    return pa.Table.from_batches(batches, schema) if batches else schema.empty_table()


def run(spark: SparkSession, changes: DataFrame, seeds: DataFrame, open_intervals: DataFrame,
        contexts: dict[str, ClusterContext], anchors: DataFrame | None = None) -> DataFrame:
    """The kernel's output rows (`output_schema`) for `changes` (partition_changes rows),
    `seeds` (partition_current rows of the partitions they touch) and `open_intervals`
    (partition_intervals rows with no end, of the same partitions); `contexts`: per cluster id
    (`fold.context.cluster_contexts`)."""
    every = input_rows(changes, seeds, open_intervals, anchors)
    n = int(spark.conf.get("spark.sql.shuffle.partitions") or 200)  # unset: Spark's default
    ordered = every.repartition(n, *KEY).sortWithinPartitions(*ORDER)
    bc = spark.sparkContext.broadcast(contexts)
    return ordered.mapInArrow(partial(_fold_batches, bc, _arrow_output_schema(spark)),
                              output_schema())
