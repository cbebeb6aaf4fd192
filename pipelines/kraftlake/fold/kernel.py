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

Spark distributes the rule, it does not re-express it: `write_files` repartitions the rows
by partition key, sorts them, and calls `fold_batches` through `mapInArrow`; the cluster
context (min.insync.replicas and metadata.version histories, topic names) is a broadcast
value. Each task writes its timeline, event and interval rows as those tables' data files and
hands back their add actions (`lake.written`). A small increment folds its rows on the driver
instead (`run_on_driver`), with the same `fold_batches` a task runs.
Kafka refuses a partition record of an unknown topic and a delete of a partition that does
not exist, so do these rules: silver keeps only rows of live topics, and here a delete of a
missing partition changes nothing, a change to one is an orphan.

Rows stay columns on the way in and out: an input batch's columns are made Python lists once
and read by row number (`_Input`), output rows are appended as one tuple per row and made
Arrow arrays once per batch (`_Rows`), and what an output row repeats of its input row is
taken from the input batch (`_Window`); what many rows share is converted once (a partition's
key, an event's states, which are timeline rows of the same batch). A dict per input and
per output row cost more than Kafka's rules themselves (issue 47); the rules still see one
partition's rows in order, as plain Python. Python's cycle collector is paused while a batch
is folded (`_collector_paused`): the fold makes no cycles, and its full collections over the
batch's live objects were a third of its time.
"""

from __future__ import annotations

import gc
import json
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from functools import partial
from itertools import compress, pairwise
from operator import is_not
from types import SimpleNamespace
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
from pyspark import Broadcast
from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql import types as T
from pyspark.sql.pandas.types import to_arrow_schema, to_arrow_type

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
from ..lake.arrow_files import records
from ..lake.schema import table_rows, table_schema
from ..lake.written import Target, Written
from .context import ClusterContext, History
from .silver import KEY

SEED, OPEN_INTERVAL, CHANGE = 0, 1, 2  # `_role` of an input row; seeds sort first
ORDER = [*KEY, "_role", "offset", "seq"]  # the order `fold_batches` reads its input in
# input rows a kernel task gets at most (`tasks`): a round figure, which keeps the 8 tasks
# the 24-hour `large` log had on two cores; the week's log gets 44, as fast as its 8 were
ROWS_PER_TASK = 250_000
OUTPUTS = ("timeline", "event", "interval", "gone", "orphan")
STATE = list(STATE_COLUMNS)
PARTITION = ("cluster_id", "topic_id", "partition_id", "topic_name")  # `Part`, in this order
# the output kinds with columns of their own: each kind's table
TABLES = {"timeline": "partition_timeline", "event": "partition_events",
          "interval": "partition_intervals"}


def output_schema() -> T.StructType:
    """`out` (one of OUTPUTS), the partition (`PARTITION`), and per kind with columns of its own
    a struct of its table's other columns, null in the other kinds' rows (`part` reads one
    kind's rows back as its table's columns).

    The batches `fold_batches` yields, each of one kind: a struct per kind, not the union
    of the three tables' columns side by side, whose rows of one kind held some thirty null
    columns of the others (a null struct is one null); `part_arrow` takes a kind's columns
    out of it."""
    fields = [T.StructField("out", T.StringType()), *_partition_fields()]
    for kind, table in TABLES.items():
        fields.append(T.StructField(kind, T.StructType([
            T.StructField(f.name, f.dataType) for f in table_schema(table).spark.fields
            if f.name not in PARTITION])))
    return T.StructType(fields)


def _partition_fields() -> list[T.StructField]:
    """The PARTITION columns, typed as the tables hold them."""
    types = {f.name: f.dataType for f in table_schema("partition_events").spark.fields}
    return [T.StructField(name, types[name]) for name in PARTITION]


def part(out: DataFrame, kind: str) -> DataFrame:
    """The kernel's rows of one kind (OUTPUTS), as the partition and its table's columns."""
    rows = out.filter(F.col("out") == kind)
    return rows.select(*PARTITION, f"{kind}.*") if kind in TABLES else rows.select(*PARTITION)


def part_arrow(out: pa.Table, kind: str) -> pa.Table:
    """`part` of the driver's Arrow output (`run_on_driver`), without Spark."""
    rows = out.filter(pc.equal(out["out"], kind))
    if kind not in TABLES:
        return rows.select(list(PARTITION))
    own = pa.Table.from_struct_array(rows.column(kind).combine_chunks()) if rows.num_rows \
        else pa.schema(list(out.schema.field(kind).type)).empty_table()
    return pa.Table.from_arrays([*(rows.column(c) for c in PARTITION), *own.columns],
                                names=[*PARTITION, *own.column_names])


# ---------------------------------------------------------------- Arrow in


class _Input:
    """Input rows as columns, read by row number: each column of a batch is made a Python
    list once (`to_pylist`, timestamps as integer microseconds), never a dict per row. The
    one dict per row left is the record's fields the rules take (`fields`, `_fields`)."""

    def __init__(self, columns: dict[str, list[Any]], base: int) -> None:
        self.columns = columns
        self.base = base  # the window's number of row 0 (`_Window`)
        self.cluster_id = columns["cluster_id"]
        self.topic_id = columns["topic_id"]
        self.partition_id = columns["partition_id"]
        self.role = columns["_role"]
        self.offset = columns["offset"]
        self.seq = columns["seq"]
        self.timestamp = columns["timestamp"]
        self.record_type = columns["record_type"]
        self.is_reset = columns["is_reset"]
        self.is_delete = columns["is_delete"]
        self.leader = columns["leader"]
        self.leader_recovery_state = columns["leader_recovery_state"]
        self.anchor = columns.get("_anchor")  # only when the increment reconciles snapshots
        # a seed's own columns
        self.recovering_since_offset = columns["recovering_since_offset"]
        self.recovering_since_ts = columns["recovering_since_ts"]
        self.uncertain_since = columns["uncertain_since"]
        # an open interval's
        self.kind = columns["kind"]
        self.start_offset = columns["start_offset"]
        self.start_seq = columns["start_seq"]
        self.start_ts = columns["start_ts"]
        self.fields = columns["_fields"]

    def __len__(self) -> int:
        return len(self.role)

    def key(self, i: int) -> tuple[Any, Any, Any]:
        return self.cluster_id[i], self.topic_id[i], self.partition_id[i]


def _input(batch: pa.RecordBatch, base: int) -> _Input:
    n = batch.num_rows
    columns = {name: [None] * n if c.null_count == n else
               (c.cast(pa.int64()) if pa.types.is_timestamp(c.type) else c).to_pylist()
               for name, c in zip(batch.schema.names, batch.columns, strict=True)
               if name not in _NOT_READ}
    columns["_fields"] = _fields(batch)
    return _Input(columns, base)


# columns the fold does not read by row: state columns it reads only as the record's fields
# (`_fields`), and what output rows take from the input batches as they are (`_Window`)
_NOT_READ = frozenset(STATE) - {"leader", "leader_recovery_state"} | {"source"}


def _fields(batch: pa.RecordBatch) -> list[dict[str, Any]]:
    """Each row's state columns that are set: a PartitionRecord's or a change record's
    fields, as `PartitionRegistration.from_record` and `merge` take them. Made a column at
    a time from the rows each column has a value in: a change sets one or two of the eleven,
    and asking every column of every row cost more than the rest of reading it."""
    fields: list[dict[str, Any]] = [{} for _ in range(batch.num_rows)]
    for name in STATE:
        column = batch.column(name)
        if not column.null_count:
            rows: Iterable[int] = range(batch.num_rows)
        elif column.null_count == len(column):
            continue
        else:
            rows = pc.indices_nonzero(column.is_valid()).to_pylist()
            column = column.drop_null()
        for i, value in zip(rows, column.to_pylist(), strict=True):
            fields[i][name] = value
    return fields


def _partitions(batches: Iterable[pa.RecordBatch], window: _Window
                ) -> Iterator[tuple[_Input, int, int]]:
    """Each partition key's rows, as (columns, first row, end row), from key-ordered batches,
    each batch added to `window`. Spark cuts a task's sorted rows into batches of a fixed
    count, so a key's rows may go on in the next batch: the last key of a batch is held
    until a batch starts with another (its rows are consecutive in the window too)."""
    held: _Input | None = None
    for batch in batches:
        if not batch.num_rows:
            continue
        rows = _input(batch, window.add(batch))
        bounds = _key_bounds(rows)
        if held is not None:
            if held.key(0) == rows.key(0):  # the held key goes on: its rows joined
                for name, values in held.columns.items():
                    values.extend(rows.columns[name][:bounds[1]])
                bounds = bounds[1:]
            if len(bounds) == 1:  # the whole batch was the held key's
                continue
            yield held, 0, len(held)
        yield from ((rows, lo, hi) for lo, hi in pairwise(bounds[:-1]))  # all but the last
        held = _Input({name: values[bounds[-2]:] for name, values in rows.columns.items()},
                      rows.base + bounds[-2])
    if held is not None:
        yield held, 0, len(held)


class _Window:
    """The input batches output rows may still name, their rows numbered across every batch
    of the task (`add`), and rows of the states carried across unknown offsets (`gap`),
    which no input row holds, numbered -1, -2, ...

    An output column that is a column of its input row (a timeline row's validity start,
    seq, record type and source; an event's offset, seq, time and record type) is taken from
    these batches by row number (`take`), not made Python values and converted back (some
    3 % of the fold: `benchmarks/kernel_python.py`)."""

    def __init__(self) -> None:
        self.batches: list[pa.RecordBatch] = []
        self.start = 0  # the number of the first row of batches[0]
        self.end = 0  # the number the next batch's first row gets
        self.gaps: list[tuple[int, int, int | None]] = []  # (offset, seq, timestamp)

    def add(self, batch: pa.RecordBatch) -> int:
        """Adds `batch`; the number of its first row."""
        base = self.end
        self.batches.append(batch)
        self.end += batch.num_rows
        return base

    def gap(self, offset: int, timestamp: int | None) -> int:
        """The number of a new gap state's row (`_carry_across`): offset, seq 0, time,
        record type Unknown, source `gap`."""
        self.gaps.append((offset, 0, timestamp))
        return -len(self.gaps)

    def take(self, rows: Sequence[int], columns: Iterable[str]) -> dict[str, pa.Array]:
        """`columns` of the numbered rows."""
        at = pa.array(rows, pa.int64())
        gaps = self.gaps
        if gaps:  # row -k is the k-th gap, after the batches' rows
            at = pc.if_else(pc.less(at, 0), pc.subtract(self.end - 1, at), at)
        at = pc.subtract(at, self.start)
        out = {}
        for name in columns:
            chunks = [b.column(name) for b in self.batches]
            if gaps:
                chunks.append(self._gap_column(name, chunks[0].type))
            out[name] = pa.concat_arrays(chunks).take(at) if len(chunks) > 1 \
                else chunks[0].take(at)
        return out

    def _gap_column(self, name: str, type_: pa.DataType) -> pa.Array:
        if name == "record_type":
            return pa.repeat(pa.scalar(UNKNOWN_RECORD, type_), len(self.gaps))
        if name == "source":
            return pa.repeat(pa.scalar(GAP_SOURCE, type_), len(self.gaps))
        i = ("offset", "seq", "timestamp").index(name)
        values = pa.array([g[i] for g in self.gaps], pa.int64())
        return values.cast(type_)

    def release(self, before: int) -> None:
        """Every output row naming rows before `before` was made: their batches go, and the
        gaps (a gap's row is made with its partition's)."""
        while self.batches and self.start + self.batches[0].num_rows <= before:
            self.start += self.batches.pop(0).num_rows
        self.gaps = []


def _key_bounds(rows: _Input) -> list[int]:
    """The row numbers where a partition key starts, and the end."""
    c, t, p = rows.cluster_id, rows.topic_id, rows.partition_id
    return [0, *(i for i in range(1, len(p))
                 if p[i] != p[i - 1] or t[i] != t[i - 1] or c[i] != c[i - 1]), len(p)]


# ---------------------------------------------------------------- Arrow out


# the state columns of a partition that has none (before its creation, after its deletion)
_NO_STATE: Any = SimpleNamespace(**dict.fromkeys(STATE))
Part = tuple[str, str, int, str | None]


class _Rows:
    """One kind of output row (`out`), gathered until a batch is written: a tuple per row,
    `values` in order, made columns once per batch (a row appended as one tuple costs a
    fraction of a list append per column).

    What is the same for many rows is not converted once per row: a partition's rows of a
    kind are consecutive (`_fold_partition` folds one partition at a time), so its key and
    topic name are kept once per partition (`close`) and repeated in Arrow; an event's
    states before and after are timeline rows of the same batch (`_State.row`), so their
    columns are taken from the timeline's arrays (`taken`: column -> (column holding the
    `_State`, timeline column)). Columns read off a per-row object (a timeline row's from
    its `_State` and its `PartitionRegistration`) are read once the batch is written, all of
    an object's at once (`spread`: column holding the object -> (the columns it gives, a
    getter of their values as a tuple, or None when the object is that tuple)); columns in
    `runs` mostly hold the object the row before holds, and are converted once per run of
    one object (`_by_runs`). Columns that are their input row's are taken from the input
    batches (`inputs`: column -> (column holding the row's number in the `_Window`, input
    column)). Columns of the output schema not here are null."""

    def __init__(self, out: str, values: Iterable[str],
                 spread: dict[str, tuple[Sequence[str], Callable[[Any], tuple[Any, ...]] | None]]
                 | None = None,
                 taken: dict[str, tuple[str, str]] | None = None,
                 inputs: dict[str, tuple[str, str]] | None = None,
                 runs: Iterable[str] = ()) -> None:
        self.out = out
        self.runs = frozenset(runs)
        self.names = tuple(values)
        self.spread = spread or {}
        self.taken = taken or {}
        self.inputs = inputs or {}
        self.rows: list[tuple[Any, ...]] = []
        self.parts: list[Part] = []  # the partition of each run of rows
        self.ends: list[int] = []  # the row count where each run ends

    def __len__(self) -> int:
        return len(self.rows)

    def close(self, part: Part) -> None:
        """The rows added since the last `close` are `part`'s."""
        n = len(self.rows)
        if n > (self.ends[-1] if self.ends else 0):
            self.parts.append(part)
            self.ends.append(n)

    def batch(self, schema: pa.Schema, timeline: pa.StructArray | None, window: _Window
              ) -> pa.RecordBatch:
        """The gathered rows as a batch of `schema` (`output_schema`): `out`, the partition,
        the struct of this kind (the others null); the rows start again empty. `timeline`:
        the timeline's struct of the same batch of rows (`taken` columns read it); `window`:
        the input rows they name (`inputs` columns)."""
        n = len(self.rows)
        columns: dict[str, Any] = dict(zip(self.names, zip(*self.rows, strict=True),
                                           strict=True))
        for src, (names, get) in self.spread.items():
            objects = columns[src] if get is None else map(get, columns[src])
            columns.update(zip(names, zip(*objects, strict=True), strict=True))
        by_row: dict[str, list[tuple[str, str]]] = {}
        for name, (src, column) in self.inputs.items():
            by_row.setdefault(src, []).append((name, column))
        for src, wanted in by_row.items():
            got = window.take(columns[src], {column for _name, column in wanted})
            columns.update((name, got[column]) for name, column in wanted)
        ends, parts = pa.array(self.ends, pa.int32()), self.parts
        self.rows, self.parts, self.ends = [], [], []
        rows_of: dict[str, pa.Array] = {}  # a `taken` source's timeline row numbers
        arrays = []
        for f in schema:
            if f.name == "out":
                arrays.append(pa.repeat(pa.scalar(self.out, f.type), n))
            elif f.name in PARTITION:
                i = PARTITION.index(f.name)
                arrays.append(pc.run_end_decode(pa.RunEndEncodedArray.from_arrays(
                    ends, pa.array([p[i] for p in parts], f.type))))
            elif f.name == self.out:
                fields = [f.type.field(i) for i in range(f.type.num_fields)]
                arrays.append(pa.StructArray.from_arrays(
                    [self._array(columns, c, n, timeline, rows_of) for c in fields],
                    fields=fields))
            else:
                arrays.append(pa.nulls(n, f.type))
        return pa.RecordBatch.from_arrays(arrays, schema=schema)

    def _array(self, columns: dict[str, Any], f: pa.Field, n: int,
               timeline: pa.StructArray | None, rows_of: dict[str, pa.Array]) -> pa.Array:
        """Column `f` of the n gathered rows (null when this kind has none)."""
        if f.name in self.taken:
            src, name = self.taken[f.name]
            assert timeline is not None  # a row that names a state comes with the state's
            if src not in rows_of:
                rows_of[src] = pa.array([None if s is None else s.row for s in columns[src]],
                                        pa.int32())
            return timeline.field(name).take(rows_of[src])
        if f.name not in columns:
            return pa.nulls(n, f.type)
        values = columns[f.name]
        if f.name in self.inputs:
            return values if values.type == f.type else values.cast(f.type)
        if f.name in self.runs:
            return _by_runs(values, f.type)
        return pa.array(values, pa.int64()).cast(f.type) if pa.types.is_timestamp(f.type) \
            else pa.array(values, f.type)


def _by_runs(values: Sequence[Any], type_: pa.DataType) -> pa.Array:
    """`pa.array(values, type_)` for values most of which are the object the value before
    is: each run of one object converted once and repeated. A partition's replicas and
    replica directories (three 22-character strings a row) are tuples `merge` passes on from
    state to state, and its empty ELRs the one empty tuple; converted row by row they cost
    as much as the other state columns together."""
    n = len(values)
    starts = list(compress(range(1, n), map(is_not, values[1:], values[:-1])))
    firsts = pa.array([values[0], *(values[i] for i in starts)], type_)
    ends = pa.array([*starts, n], pa.int32())
    return pc.run_end_decode(pa.RunEndEncodedArray.from_arrays(ends, firsts))


_EVENT_VALUES = ("row", "event_type", "detection", "elr_added", "elr_removed",
                 "last_known_elr_added", "last_known_elr_removed", "min_isr",
                 "recovery_started_offset", "recovery_duration_ms",
                 "uncertain_since", "before", "after")  # `add_event`'s tuple, in this order
_INTERVAL_VALUES = ("kind", "start_offset", "start_seq", "start_ts", "end_offset", "end_ts",
                    "is_open", "duration_ms")  # `add_interval`'s
# an event's columns of its input row (the `_Window`'s number of which is its "row")
_EVENT_INPUT = {name: ("row", name) for name in ("offset", "seq", "timestamp", "record_type")}
# a timeline row's columns of its own `_State` (`_State.timeline_values`, in this order), and
# of its input row (the seed's or the change's; `src`)
_TIMELINE_OWN = ("src", "recovering_since_offset", "recovering_since_ts", "uncertain_since",
                 "valid_to_offset", "valid_to_ts", "is_current")
_TIMELINE_INPUT = {"valid_from_offset": ("src", "offset"), "valid_from_ts": ("src", "timestamp"),
                   **{name: ("src", name) for name in ("seq", "record_type", "source")}}
# state columns a partition's states mostly share (passed on by `merge` as they were)
_RUN_COLUMNS = ("replicas", "directories", "adding_replicas", "removing_replicas",
                "eligible_leader_replicas", "last_known_elr")
# an event's states, before and after (columns prev_* and new_*)
_EVENT_STATE = ("leader", "isr", "eligible_leader_replicas", "last_known_elr",
                "leader_recovery_state", "replicas")


class _Output:
    """The kernel's output rows of a batch, per kind (OUTPUTS)."""

    def __init__(self, window: _Window) -> None:
        self.window = window  # the input rows the output rows name
        # a timeline row is one of the partition's `_State`s, read when the batch is written:
        # a state is closed after it was made, and `_intervals` reads the same states
        self.timeline = _Rows("timeline", ["state", "reg"], {
            "state": (_TIMELINE_OWN, _State.timeline_values),
            "reg": (PartitionRegistration._fields, None)}, inputs=_TIMELINE_INPUT,
            runs=_RUN_COLUMNS)
        self.event = _Rows("event", _EVENT_VALUES, taken={
            **{"prev_" + name: ("before", name) for name in _EVENT_STATE},
            **{"new_" + name: ("after", name) for name in _EVENT_STATE}}, inputs=_EVENT_INPUT)
        self.interval = _Rows("interval", _INTERVAL_VALUES)
        self.gone = _Rows("gone", [])
        self.orphan = _Rows("orphan", [])
        self.kinds = (self.timeline, self.event, self.interval, self.gone, self.orphan)

    def __len__(self) -> int:  # asked after every partition: kept cheap
        return len(self.timeline.rows) + len(self.event.rows) + len(self.interval.rows) \
            + len(self.gone.rows) + len(self.orphan.rows)

    def close(self, part: Part) -> None:
        """The rows added since the last `close` are `part`'s (`_Rows.close`)."""
        for rows in self.kinds:
            rows.close(part)

    def batches(self, schema: pa.Schema) -> Iterator[pa.RecordBatch]:
        """One record batch per kind of output row gathered (a kind's rows hold only its
        table's columns, `out` and the partition included; the others are nulls). The
        timeline's goes first: the events' states are taken from it."""
        timeline = None
        for rows in self.kinds:
            if len(rows):
                batch = rows.batch(schema, timeline, self.window)
                if rows is self.timeline:
                    timeline = batch.column("timeline")
                yield batch

    def add_states(self, states: list[_State]) -> None:
        """The partition's states as timeline rows, each told its row number."""
        for row, st in enumerate(states, len(self.timeline.rows)):
            st.row = row
        self.timeline.rows.extend((st, st.reg) for st in states)

    def add_event(self, r: _Input, i: int, event: str, detection: str | None,
                  before: _State | None, after: _State | None, min_isr: int | None,
                  since: tuple[int, int] | None, uncertain: int | None) -> None:
        """A `partition_events` row of input row i; `before` / `after` the states around it
        (None: no state), timeline rows of the same batch; `uncertain`: the state before
        was carried across unknown offsets from there on."""
        b = _NO_STATE if before is None else before.reg
        a = _NO_STATE if after is None else after.reg
        recovered = event == "recovery_completed" and since is not None
        # an unclean election names the recovery it belongs to (`since`: see _fold_partition)
        linked = recovered or (event == "unclean_election" and since is not None)
        be, ae = b.eligible_leader_replicas, a.eligible_leader_replicas
        bl, al = b.last_known_elr, a.last_known_elr
        self.event.rows.append((
            r.base + i, event, detection,
            _NOTHING if be == ae else _added(ae, be), _NOTHING if be == ae else _added(be, ae),
            _NOTHING if bl == al else _added(al, bl), _NOTHING if bl == al else _added(bl, al),
            None if after is None else partition_min_isr(min_isr, len(a.replicas)),
            since[0] if linked and since is not None else None,
            _ms(since[1], r.timestamp[i]) if recovered and since is not None else None,
            uncertain, before, after))

    def add_interval(self, kind: str, start: tuple[int, int, int | None],
                     end: tuple[int, int | None] | None) -> None:
        self.interval.rows.append((kind, *start, end and end[0], end and end[1],
                                   end is None, _ms(start[2], end and end[1])))


# ---------------------------------------------------------------- one partition


@dataclass(slots=True)
class _State:
    """A state of the partition's timeline here: a `timeline` row once the partition is
    folded (`_Output.timeline` reads its columns), and what `_intervals` judges."""

    src: int  # its input row (`_Window`: the seed's, the change's or the gap's)
    offset: int
    seq: int
    timestamp: int | None
    reg: PartitionRegistration
    seed: bool
    min_isr: int | None
    recovering_since_offset: int | None
    recovering_since_ts: int | None
    uncertain_since: int | None
    to: tuple[int, int | None] | None = None  # (offset, ts) of what ended it
    deleted: bool = False  # the partition ended there
    row: int | None = None  # its row in the timeline rows gathered (`_Output.add_states`)

    def timeline_values(self) -> tuple[Any, ...]:
        """Its timeline row's own columns (`_TIMELINE_OWN`), once it is closed or not."""
        to = self.to
        return (self.src, self.recovering_since_offset, self.recovering_since_ts,
                self.uncertain_since,
                None if to is None else to[0], None if to is None else to[1], to is None)


def _step_kind(r: _Input, i: int, before: PartitionRegistration | None) -> str:
    if r.is_delete[i]:
        return DELETED
    if r.is_reset[i]:
        if r.seq[i] != 0:
            return SNAPSHOT
        return CREATED if before is None else RESET
    return ELR_CLEARED if r.record_type[i] == CLEAR_ELR_RECORD else CHANGED


_NOTHING: tuple[int, ...] = ()  # no members added (or removed)


def _added(new: Sequence[int] | None, old: Sequence[int] | None) -> Sequence[int]:
    """Members of `new` not in `old`, sorted (None: no state, no members)."""
    if not new:
        return []
    return sorted(set(new) - set(old or ()))


def _ms(start_us: int | None, end_us: int | None) -> int | None:
    """Milliseconds between two microsecond timestamps (None while either is)."""
    if start_us is None or end_us is None:
        return None
    return int((end_us - start_us) / 1000)


def _fold_partition(r: _Input, lo: int, hi: int, ctx: ClusterContext, out: _Output) -> None:
    """Every output row of one partition, rows lo..hi of `r`, in (role, offset, seq) order."""
    name = ctx.topic_names.get(r.topic_id[lo])
    part: Part = (r.cluster_id[lo], r.topic_id[lo], r.partition_id[lo], name)
    state: PartitionRegistration | None = None
    since: tuple[int, int] | None = None  # (offset, ts) RECOVERING began
    states: list[_State] = []  # the partition's timeline here, seed first
    open_starts: dict[str, tuple[int, int, int | None]] = {}
    last_delete = False
    uncertain: int | None = None  # carried across unknown offsets from there on
    gaps = iter(ctx.unknown)
    gap = next(gaps, None)
    # the cluster facts in force, asked again only past the point they may change at
    min_isr: int | None = None
    mv: int | None = None
    min_isr_until = mv_until = (-1, 0)
    # the columns read at every change, as locals (an attribute lookup each time is not free)
    roles, offsets, seqs, timestamps, fields = r.role, r.offset, r.seq, r.timestamp, r.fields
    base, anchors = r.base, r.anchor
    for i in range(lo, hi):
        role = roles[i]
        if role == OPEN_INTERVAL:
            open_starts[r.kind[i]] = (r.start_offset[i], r.start_seq[i], r.start_ts[i])
            continue
        if role == SEED:
            state = PartitionRegistration.from_record(r.fields[i])
            if state.leader_recovery_state == RECOVERING:
                since = (r.recovering_since_offset[i], r.recovering_since_ts[i])
            uncertain = r.uncertain_since[i]
            states.append(_State(base + i, offsets[i], seqs[i], timestamps[i], state,
                                 True, None, r.recovering_since_offset[i],
                                 r.recovering_since_ts[i], uncertain))
            continue
        off, seq, ts = offsets[i], seqs[i], timestamps[i]
        while gap is not None and gap[0] <= off:
            if state is not None:
                uncertain = _carry_across(gap, states, ctx, name, since, uncertain,
                                         out.window)
            gap = next(gaps, None)
        if anchors is not None and anchors[i] and uncertain is None:
            continue  # a check snapshot's state: reconciled against, not applied
        kind = _step_kind(r, i, state)
        if kind == DELETED:
            if state is None:
                continue  # only a partition that exists can end
            _close(states[-1], off, ts, deleted=True)
            if seq == 0:
                out.add_event(r, i, "partition_deleted", r.record_type[i], states[-1], None,
                              None, None, uncertain)
            state, since, last_delete, uncertain = None, None, True, None
            continue
        if kind in (CHANGED, ELR_CLEARED) and state is None:
            out.orphan.rows.append(())
            continue
        if kind == ELR_CLEARED:
            assert state is not None  # an orphan went above
            if not state.elr_clear_changes:
                continue  # Kafka writes nothing for it: no step
            new = state.clear_elr()
        elif kind == CHANGED:
            assert state is not None  # an orphan went above
            new, _problem = state.merge(fields[i])
        else:
            new = PartitionRegistration.from_record(fields[i])
        if (off, seq) >= min_isr_until:
            min_isr, min_isr_until = ctx.min_isr_span(name, off, seq)
        before_since, before_uncertain = since, uncertain
        if kind not in (CHANGED, ELR_CLEARED):
            uncertain = None  # a full state (PartitionRecord, snapshot) re-anchors it
        if new.leader_recovery_state != RECOVERING:
            since = None
        elif state is None or state.leader_recovery_state != RECOVERING:
            since = (off, ts)
        after = _State(base + i, off, seq, ts, new, False, min_isr,
                       since and since[0], since and since[1], uncertain)
        if seq == 0:
            if (off, seq) >= mv_until:
                mv, mv_until = ctx.mv_span(off, seq)
            leader, lrs = r.leader[i], r.leader_recovery_state[i]
            leader_field = leader if kind == CHANGED and leader is not None \
                else NO_LEADER_CHANGE
            lrs_field = lrs if kind == CHANGED and lrs is not None else LRS_NO_CHANGE
            before = None if state is None else states[-1]  # `state`'s row
            for event, detection in step_events(
                    kind, state, new, min_isr=min_isr, metadata_version=mv,
                    leader_field=leader_field, lrs_field=lrs_field):
                # recovery_completed closes the recovery in force before the step; an unclean
                # election belongs to the one in force after it (the one it starts, or for
                # `already_recovering` the one going on), or to the one it ends
                out.add_event(r, i, event, detection, before, after, min_isr,
                              before_since if event == "recovery_completed" else
                              since or before_since, before_uncertain)
        if state is not None:  # after a deletion the last state is closed already
            states[-1].to = (off, ts)  # `_close`
        states.append(after)
        state, last_delete = new, False
    while gap is not None:  # unknown offsets after the partition's last change here
        if state is not None:
            uncertain = _carry_across(gap, states, ctx, name, since, uncertain,
                                         out.window)
        gap = next(gaps, None)
    if last_delete:
        out.gone.rows.append(())
    if states and not (states[0].seed and states[0].to is None):  # a seed alone: as was
        out.add_states(states)
        _intervals(states, open_starts, ctx, name, out)
    out.close(part)


def _carry_across(gap: tuple[int, int, int | None], states: list[_State],
                  ctx: ClusterContext, name: str | None, since: tuple[int, int] | None,
                  uncertain: int | None, window: _Window) -> int:
    """The partition's last state carried across unknown offsets [lo, hi) (a damaged batch
    that may have held changes of any partition): it ends at `lo`, and the same state goes
    on from `lo` as a row of record type Unknown and source `gap`, marked uncertain from the
    first unknown offset on (Kafka's replay would have applied whatever those offsets held;
    nothing here can). Returns that offset. The row's time is the damaged batch's, or the
    last known state's when its header could not be read."""
    lo, _hi, ts = gap
    last = states[-1]
    ts = last.timestamp if ts is None else ts
    _close(last, lo, ts)
    uncertain = lo if uncertain is None else uncertain
    states.append(_State(window.gap(lo, ts), lo, 0, ts, last.reg, False,
                         ctx.min_isr(name, lo, 0), since and since[0], since and since[1],
                         uncertain))
    return uncertain


def _close(st: _State, offset: int, ts: int | None, deleted: bool = False) -> None:
    """End state `st` at (offset, ts); `deleted`: the partition ends there (no state follows
    until it is created again, which starts a timeline and trouble runs of its own)."""
    st.to = (offset, ts)
    st.deleted = deleted


def _intervals(states: list[_State],
               open_starts: dict[str, tuple[int, int, int | None]],
               ctx: ClusterContext, name: str | None, out: _Output) -> None:
    """Maximal runs of consecutive states in each trouble kind. A run that includes the
    first state continues the interval the lake holds open for that kind (its start); a
    deletion ends every run (a partition created again starts from nothing)."""
    bad = [trouble_kinds(s.reg, ctx.min_isr(name, s.offset, s.seq) if s.seed else s.min_isr)
           for s in states]
    found = set().union(*bad)
    for kind in KINDS:
        if kind not in found:
            continue
        start: tuple[int, int, int | None] | None = None
        end: tuple[int, int | None] | None = None
        for i, s in enumerate(states):
            if kind in bad[i]:
                if start is None:
                    start = open_starts.get(kind) if i == 0 and kind in open_starts else (
                        s.offset, s.seq, s.timestamp)
                end = s.to
                if not s.deleted:
                    continue
            if start is not None:
                out.add_interval(kind, start, end)
                start = None
        if start is not None:
            out.add_interval(kind, start, end)


# ---------------------------------------------------------------- Spark's side


def empty_context(default_min_isr: int) -> ClusterContext:
    """The context of a cluster with no topic and no config known yet."""
    return ClusterContext({}, {}, History(), History(), default_min_isr)


def fold_batches(contexts: dict[str, ClusterContext], schema: pa.Schema,
                 batches: Iterable[pa.RecordBatch], batch_rows: int = 20_000
                 ) -> Iterator[pa.RecordBatch]:
    """`_fold_partition` over input batches sorted by partition key (then role, offset,
    seq), to output batches of `schema` of about `batch_rows` rows. A cluster without a
    context (no topic, no config known) gets an empty one.

    Python's cycle collector is paused while a batch is folded and made (`_collector_paused`),
    resumed before it is handed on."""
    empty = empty_context(1)
    window = _Window()
    out = _Output(window)
    partitions = _partitions(batches, window)
    more = True
    while more:
        with _collector_paused():
            folded = _fold_until(batch_rows, partitions, contexts, empty, out)
            ready = list(out.batches(schema))
            more = folded is not None
            if folded is not None:
                window.release(folded)
        yield from ready


def _fold_until(batch_rows: int, partitions: Iterator[tuple[_Input, int, int]],
                contexts: dict[str, ClusterContext], empty: ClusterContext,
                out: _Output) -> int | None:
    """Folds `partitions` until `out` holds `batch_rows` rows, returning the window's
    number of the first input row not folded, or until none is left (None)."""
    for rows, lo, hi in partitions:
        _fold_partition(rows, lo, hi, contexts.get(rows.cluster_id[lo], empty), out)
        if len(out) >= batch_rows:
            return rows.base + hi
    return None


@contextmanager
def _collector_paused() -> Iterator[None]:
    """Python's cycle collector off for the block (on again after it, if it was on).

    The fold allocates millions of objects that live until their batch is made (input
    lists, states, rows) and makes no reference cycles: refcounting frees all of it. The
    collector, counting those allocations, ran a full collection over every live object
    some 30 times per 300,000 changes, a third of the fold's CPU time (benchmarks/
    kernel_python.py); paused, it has nothing to find once it resumes."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


@dataclass(frozen=True)
class _Literal:
    """A value every input row of a role holds (`_CHANGE_INPUT` ...), of Spark type `type_`."""

    value: Any
    type_: T.DataType


# The kernel's input columns per `_role`: each column from a column of that role's table
# (name) or a literal. The rows of the three roles are unioned by column name, a column a
# role does not name is null; `input_rows` builds it in Spark, `input_arrow` in Arrow.
_CHANGE_INPUT: dict[str, str | _Literal] = {
    **{c: c for c in KEY}, "_role": _Literal(CHANGE, T.IntegerType()),
    **{c: c for c in ("offset", "seq", "timestamp", "record_type", "source", "is_reset",
                      "is_delete", *STATE)}}
_SEED_INPUT: dict[str, str | _Literal] = {
    **{c: c for c in KEY}, "_role": _Literal(SEED, T.IntegerType()),
    "offset": "valid_from_offset", "seq": "seq", "timestamp": "valid_from_ts",
    "record_type": "record_type", "source": "source",
    "is_reset": _Literal(True, T.BooleanType()), "is_delete": _Literal(False, T.BooleanType()),
    **{c: c for c in (*STATE, "recovering_since_offset", "recovering_since_ts",
                      "uncertain_since")}}
_OPEN_INPUT: dict[str, str | _Literal] = {
    **{c: c for c in KEY}, "_role": _Literal(OPEN_INTERVAL, T.IntegerType()),
    **{c: c for c in ("kind", "start_offset", "start_seq", "start_ts")}}


def _spark_columns(columns: dict[str, str | _Literal]) -> list[Column]:
    return [F.col(src).alias(name) if isinstance(src, str)
            else F.lit(src.value).cast(src.type_).alias(name) for name, src in columns.items()]


def input_rows(changes: DataFrame, seeds: DataFrame, open_intervals: DataFrame,
               anchors: DataFrame | None = None) -> DataFrame:
    """The kernel's input, one row per change, seed and open interval, each marked with its
    `_role`, in no particular order (`write_files` groups and sorts them). `anchors`: full states
    (`partition_changes` rows) applied only to a partition whose state is uncertain."""
    rows = changes.select(*_spark_columns(_CHANGE_INPUT))
    if anchors is not None:
        rows = rows.unionByName(anchors.select(*_spark_columns(_CHANGE_INPUT),
                                               F.lit(True).alias("_anchor")),
                                allowMissingColumns=True)
    return rows.unionByName(seeds.select(*_spark_columns(_SEED_INPUT)),
                            allowMissingColumns=True).unionByName(
        open_intervals.select(*_spark_columns(_OPEN_INPUT)), allowMissingColumns=True)


def input_arrow(changes: pa.Table, seeds: pa.Table, open_intervals: pa.Table) -> pa.Table:
    """`input_rows` of rows the driver holds as Arrow (`partition_changes`,
    `partition_current` and `partition_intervals` rows, in their tables' columns), made
    without Spark: a small increment's changes and seeds are Arrow on the driver already, and
    unioning them as DataFrames to collect them again was a Spark job of its own."""
    parts = []
    for rows, columns, table in ((changes, _CHANGE_INPUT, "partition_changes"),
                                 (seeds, _SEED_INPUT, "partition_current"),
                                 (open_intervals, _OPEN_INPUT, "partition_intervals")):
        rows = table_rows(rows, table)
        parts.append(pa.table({name: rows.column(src) if isinstance(src, str) else pa.repeat(
            pa.scalar(src.value, to_arrow_type(src.type_)), rows.num_rows)
            for name, src in columns.items()}))
    return pa.concat_tables(parts, promote_options="permissive")


def _arrow_output_schema(spark: SparkSession) -> pa.Schema:
    return to_arrow_schema(output_schema(), timezone=spark.conf.get("spark.sql.session.timeZone"))


def run_on_driver(spark: SparkSession, changes: DataFrame, seeds: DataFrame,
                  open_intervals: DataFrame, contexts: dict[str, ClusterContext],
                  anchors: DataFrame | None = None) -> pa.Table:
    """The kernel's rows (`output_schema`) for `changes` (partition_changes rows), `seeds`
    (partition_current rows of the partitions they touch) and `open_intervals`
    (partition_intervals rows with no end, of the same partitions), `contexts` per cluster id
    (`fold.context.cluster_contexts`), folded on the driver: the input is collected as Arrow
    (one Spark job), ordered, and folded by the same `fold_batches` each task runs.

    For a small increment (a stream's micro-batch, an hourly ingest): its few thousand rows
    fold in milliseconds, where the distributed fold pays a shuffle and a wave of Python
    tasks."""
    return _fold_on_driver(spark, input_rows(changes, seeds, open_intervals, anchors).toArrow(),
                           contexts)


def run_on_driver_arrow(spark: SparkSession, changes: pa.Table, seeds: pa.Table,
                        open_intervals: pa.Table, contexts: dict[str, ClusterContext]
                        ) -> pa.Table:
    """`run_on_driver` of rows the driver holds as Arrow already (`input_arrow`): no Spark
    job at all."""
    return _fold_on_driver(spark, input_arrow(changes, seeds, open_intervals), contexts)


def _fold_on_driver(spark: SparkSession, every: pa.Table, contexts: dict[str, ClusterContext]
                    ) -> pa.Table:
    ordered = every.sort_by([(c, "ascending") for c in ORDER])
    schema = _arrow_output_schema(spark)
    batches = list(fold_batches(contexts, schema, ordered.to_batches()))
    # no rows: one empty chunk per column, not none (pyspark cannot make a frame of those)
    return pa.Table.from_batches(batches, schema) if batches else schema.empty_table()


@dataclass(frozen=True)
class KernelFiles:
    """What the kernel's tasks wrote and handed back (`write_files`): per kind with a table
    of its own (TABLES) its files, the partitions deleted (`gone`: PARTITION columns), and
    the rows per output kind and event type (`counts`: (kind, event type or None) -> rows)."""

    written: dict[str, Written]
    gone: pa.Table
    counts: dict[tuple[str, str | None], int]

    def gone_frame(self, spark: SparkSession) -> DataFrame:
        """`gone` as a DataFrame (a local relation)."""
        rows = self.gone if self.gone.num_rows else self.gone.schema.empty_table()
        return spark.createDataFrame(rows, T.StructType(_partition_fields()))


def _written_schema() -> T.StructType:
    """A row a writing task hands back: `out` "file" (`table` is a kind of TABLES, `add` the
    file's add action as JSON), "count" (`rows` of `event_type`), or "gone" / "orphan" (the
    partition)."""
    return T.StructType([T.StructField("out", T.StringType()), *_partition_fields(),
                         T.StructField("table", T.StringType()),
                         T.StructField("add", T.StringType()),
                         T.StructField("event_type", T.StringType()),
                         T.StructField("rows", T.LongType())])


def _write_batches(bc: Broadcast[dict[str, ClusterContext]], schema: pa.Schema,
                   written: pa.Schema, targets: dict[str, Target],
                   batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
    """What each writing task runs: its input folded (`fold_batches`), each kind's rows
    written to its table's files as they come (`Target.files`), and handed back instead of
    them: each file's add action, the deleted and orphan partitions, the events per type.
    A batch of output holds one kind of row (`_Output.batches`)."""
    files = {kind: target.files() for kind, target in targets.items()}
    events: Counter[str] = Counter()
    for batch in fold_batches(bc.value, schema, batches):
        kind = batch.column(0)[0].as_py()
        if kind not in files:  # gone, orphan: the partition alone
            yield pa.RecordBatch.from_arrays(
                [batch.column(n) if n in batch.schema.names else pa.nulls(len(batch), f.type)
                 for n, f in zip(written.names, written, strict=True)], schema=written)
            continue
        rows = table_rows(part_arrow(pa.Table.from_batches([batch]), kind), TABLES[kind])
        files[kind].write(rows)
        if kind == "event":
            events.update(dict(zip(*(c.to_pylist() for c in pc.value_counts(
                rows.column("event_type")).flatten()), strict=True)))
    adds = [(kind, json.dumps(add)) for kind, w in files.items() for add in w.close()]
    out = {"out": ["file"] * len(adds) + ["count"] * len(events),
           "table": [k for k, _a in adds] + [None] * len(events),
           "add": [a for _k, a in adds] + [None] * len(events),
           "event_type": [None] * len(adds) + list(events),
           "rows": [None] * len(adds) + list(events.values())}
    n = len(adds) + len(events)
    if n:
        yield pa.RecordBatch.from_arrays([pa.array(out[f.name], f.type) if f.name in out
                                          else pa.nulls(n, f.type) for f in written],
                                         schema=written)


def write_files(spark: SparkSession, changes: DataFrame, seeds: DataFrame,
                open_intervals: DataFrame, contexts: dict[str, ClusterContext],
                targets: dict[str, Target], anchors: DataFrame | None = None,
                rows: int = 0) -> KernelFiles:
    """The kernel's rows of `run_on_driver`'s inputs, folded by Spark's tasks (`tasks(spark,
    rows)` of them; `rows`: about how many changes there are), each task writing the
    timeline, event and interval rows it makes as those tables' data files (`targets`: kind
    -> where, `Lake.files_target`) and handing back only their add actions, the deleted and
    orphan partitions and the counts. One Spark job, and the rows never pass through the
    JVM: a large increment's kernel output was a work frame of every row, written by the JVM
    and read back once per table to be written again."""
    every = input_rows(changes, seeds, open_intervals, anchors)
    ordered = every.repartition(tasks(spark, rows), *KEY).sortWithinPartitions(*ORDER)
    bc = spark.sparkContext.broadcast(contexts)
    written = _written_schema()
    tz = spark.conf.get("spark.sql.session.timeZone")
    got = ordered.mapInArrow(partial(_write_batches, bc, _arrow_output_schema(spark),
                                     to_arrow_schema(written, timezone=tz), targets),
                             written).toArrow()
    outs = got.column("out").to_pylist()
    tables, adds = got.column("table").to_pylist(), got.column("add").to_pylist()
    types, counted = got.column("event_type").to_pylist(), got.column("rows").to_pylist()
    per_kind: dict[str, list[dict[str, Any]]] = {kind: [] for kind in targets}
    counts: Counter[tuple[str, str | None]] = Counter()
    for out, table, add, event_type, n in zip(outs, tables, adds, types, counted, strict=True):
        if out == "file":
            action = json.loads(add)
            per_kind[table].append(action)
            if table != "event":
                counts[(table, None)] += records(action)
        elif out == "count":
            counts[("event", event_type)] += n
        else:
            counts[(out, None)] += 1
    gone = got.filter(pc.equal(got.column("out"), "gone")).select(list(PARTITION))
    return KernelFiles({kind: targets[kind].written(a) for kind, a in per_kind.items()},
                       gone, dict(counts))


def tasks(spark: SparkSession, rows: int) -> int:
    """How many tasks fold about `rows` input rows: whole waves over the cores Spark has,
    enough of them that no task gets more than ROWS_PER_TASK, and never fewer than
    `spark.sql.shuffle.partitions`. That setting alone, a fixed count, left the cores of a
    large cluster idle and gave each task of a week's log over a million changes."""
    cores = max(1, spark.sparkContext.defaultParallelism)
    waves = -(-rows // (cores * ROWS_PER_TASK))
    least = int(spark.conf.get("spark.sql.shuffle.partitions") or 200)  # unset: Spark's
    return max(least, cores * waves)
