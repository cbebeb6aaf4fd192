"""One increment of source rows -> every lake table, exactly once.

Both `kraftlake ingest` (one increment per cluster and run) and every micro-batch of
`kraftlake stream` go through `process_increment`. Each table write carries the Delta
transaction id (app_id, version); a table that already committed that id is skipped, so a
job killed at any instant and re-run with the same input writes exactly the missing tables.

Write order matters for that argument, and the commits come in two steps that keep it:
1. every table computed from the seed as pinned at the start and from this increment's own
   frames, all at once (`commit_concurrently`): `partition_events` first (what someone
   watching a stream waits for), records, quarantine, brokers, configs, partition_changes,
   the timeline, reconciliation, intervals, incidents; none reads another;
2. `partition_current` (the seed of the next increment), after everything derived from the
   old seed; `topics` after it, because the gold layer needs the topics alive *before* the
   increment, which a re-run can only read back while `topics` has not committed yet (once
   `partition_current` has, gold is not recomputed: its counts come back from that commit's
   metadata); `ingest_progress` last.

A quiet increment (no record any silver table is made of: an idle controller's NoOps) can
change bronze alone, so it commits `records`, `quarantine` and `ingest_progress` only.
"""

from __future__ import annotations

import datetime as dt
import json
import threading
import time
from collections import Counter
from collections.abc import Callable, Sequence
from concurrent.futures import FIRST_EXCEPTION, ThreadPoolExecutor, wait
from dataclasses import dataclass, field
from typing import Any, TypeVar

import pyarrow as pa
import pyarrow.compute as pc
from pyspark.sql import Column, DataFrame, Row, SparkSession
from pyspark.sql import functions as F

from ..fold import kernel
from ..fold.context import cluster_contexts
from ..fold.reconcile import check_points, reconcile, snapshot_states
from ..fold.silver import (
    KEY,
    brokers_of,
    committed,
    configs_of,
    is_relevant,
    partition_changes,
    relevant,
    snapshot_removals,
    topics_of,
    transaction_markers,
)
from ..incidents import INTERVAL_KEY, broker_outages, incidents
from ..kraft.records import (
    BROKER_TYPES,
    CONFIG_TYPES,
    FAN_OUT_TYPES,
    TOPIC_TYPES,
    TRANSACTION_MARKERS,
)
from ..lake.cut import CUT_EXCLUDED
from ..lake.delta import Lake, conform, from_arrow
from ..lake.schema import table_names, table_rows, table_schema
from ..lake.work import Work, collect_together
from ..lake.written import Written
from ..quality.record_checks import check_records
from ..sources.decode import with_fields
from ..sources.decode_tasks import Planned, decode_to_files
from ..uris import join
from .progress import IncrementResult, furthest
from .seed import Rows, Seed, as_rows, forget, progress

# The tables in the order of their commits (module docstring): the commit stage's,
# `partition_events` to `incidents`, are under way together.
TOGETHER = ("partition_events", "records", "quarantine", "brokers", "configs", "partition_changes",
        "partition_timeline", "snapshot_reconciliation", "partition_intervals", "incidents")
ORDER = [*TOGETHER, "partition_current", "topics", "ingest_progress"]
# the tables an increment's gold step commits: gold's, and the partition changes it reads
MADE_WITH_GOLD = [t for t in ORDER
                  if table_schema(t).layer == "gold" or t == "partition_changes"]
# even when empty: markers (`partition_current`: gold is done; a quiet increment has no gold)
ALWAYS_COMMITTED = ("partition_current", "ingest_progress")
GOLD_COUNTS = ("changes", "timeline", "events", "orphans", "mismatches")

# Threads committing the tables of one stage (`commit_concurrently`). A commit is mostly the
# driver's work (planning, writing the Delta log entry, bringing the snapshot up to date),
# during which the executors idle; with several tables in flight one table's commit overlaps
# another's tasks. 1: one table after another.
COMMIT_THREADS = 3

# Fault injection for the restart tests: the name of a table after whose commit an increment
# stops, leaving the lake exactly as a job killed at that point would.
FAIL_AFTER: str | None = None


class InjectedFailure(RuntimeError):
    """Raised at the FAIL_AFTER point."""


def progress_rows(lake: Lake, cluster_id: str) -> list[dict]:
    """Every `ingest_progress` row of a cluster (all its jobs): read once per run or
    micro-batch (`seed.progress`), then asked with `last_of` and `furthest`."""
    return progress(lake, cluster_id)


def cluster_progress(lake: Lake, cluster_id: str) -> dict | None:
    """`furthest` of the cluster's progress rows, read now."""
    return furthest(progress_rows(lake, cluster_id))


class _Stages:
    """Progress messages that also time the increment: a stage ("silver: ...") lasts from its
    message to the next one. Spark is lazy, so a stage's time includes the computing its
    first action triggers, which is what a reader of the figures wants to know. Each stage
    also names the Spark jobs it runs (`describe`): Spark's UI and event log show them."""

    def __init__(self, say, seconds: dict[str, float], spark: SparkSession, job: str) -> None:
        self.say, self.seconds, self.spark, self.job = say, seconds, spark, job
        self.name: str | None = None
        self.t0 = 0.0

    def __call__(self, msg: str) -> None:
        self.close()
        self.name, self.t0 = msg.split(":", 1)[0], time.perf_counter()
        self.describe(self.name)
        self.say(msg)

    def describe(self, what: str | None) -> None:
        """Name the Spark jobs the calling thread starts from now on (a thread's own;
        None: no name)."""
        self.spark.sparkContext.setLocalProperty(
            "spark.job.description",
            None if what is None else f"kraftlake {self.job}: {what}")  # type: ignore[arg-type]

    def close(self) -> None:
        if self.name is not None:
            took = time.perf_counter() - self.t0
            self.seconds[self.name] = round(self.seconds.get(self.name, 0.0) + took, 2)
            self.name = None


def process_increment(spark: SparkSession, lake: Lake, src: DataFrame | Planned,
                      cluster_id: str,
                      app_id: str, version: int, *, prev: dict | None,
                      driver_fold_max: int, min_isr_default: int = 1,
                      snapshot_high: int | None = None, local: bool = False,
                      log=None, on_events: Callable[[IncrementResult], None] | None = None
                      ) -> IncrementResult:
    """Write one increment of `kraft-metadata` source rows (one cluster) into the lake.

    `prev`: where the lake stood for the cluster before this increment (`furthest` of its
    progress rows), which the caller read to plan the increment. `driver_fold_max`: an
    increment of at most this many records that silver is made of is folded on the driver
    (`kernel.run_on_driver`), a larger one by Spark's tasks (`ingest.driver_fold_max_records`).
    `src`: the source rows, or the ranges Spark's tasks decode into files (`Planned`).
    `local`: `src` is rows the driver decoded (`sources.driver`), a local relation; the
    increment's work frames stay on the driver too (`Work`). `on_events(res)`: called once
    this increment has committed its `partition_events` (`res.event_counts` are theirs),
    before the rest of the increment is done (a stream's live event counters); not called
    when they were committed by an earlier run.
    """
    res = IncrementResult(cluster_id, app_id, version)
    say = _Stages(log or (lambda _msg: None), res.stage_seconds, spark,
                  f"{cluster_id} increment {version}")
    if lake.committed("ingest_progress", app_id, version):
        res.skipped = list(ORDER)
        return res
    work = Work(spark, lake.root, app_id, version, local=local)
    try:
        _Increment(spark, lake, src, res, prev, say, work, min_isr_default=min_isr_default,
                   snapshot_high=snapshot_high, driver_fold_max=driver_fold_max,
                   on_events=on_events).run()
        work.clear()  # only after ingest_progress committed: a killed run rewrites it
        return res
    except BaseException:
        forget(lake, cluster_id)
        raise
    finally:
        say.close()
        say.describe(None)


@dataclass
class _Decoded:
    """What one pass over the source says of the increment: how many of its records each
    later stage has to look at, which decides the stages it runs."""

    snapshot_high: int | None  # the highest snapshot end offset read
    relevant: int  # records some silver table is made of (and transaction markers)
    checks: int  # records of check snapshots (reconciled, not applied)
    resets: int  # records of reset snapshots (full state: removals of partitions missing)
    reaching: int  # records that reach partitions known before (RemoveTopic, ClearElr)
    topic_records: int  # TopicRecords and RemoveTopicRecords: a topic's life may change
    markers: int  # transaction markers: records may be held back or aborted


@dataclass
class _Silver:
    """The increment's silver frames, computed once (`Work.frames`)."""

    records: DataFrame  # every record of the source (bronze)
    invalid: DataFrame  # records breaking a record-level invariant (also quarantined)
    done: DataFrame  # the relevant records that took effect (`fold.silver.committed`)
    old_topics: DataFrame  # the cluster's topics before the increment
    topics: DataFrame  # the cluster's topics after it
    topics_changed: bool  # the increment holds topic records (else `topics` is the old)
    brokers: DataFrame  # the increment's broker rows
    configs: pa.Table  # the increment's config rows
    changes: DataFrame | None  # partition_changes rows (None: gold was written already)
    changes_files: Written | None  # the files `changes` was read back from (None: a work
    # frame, or Arrow on the driver), which the table's commit adds
    read_back: int  # records of an open transaction read back from bronze
    brokers_n: int  # broker records (one row each)
    configs_n: int  # config records (one row each)
    topic_records: int  # topic records: `topics` may change


@dataclass
class _Kernel:
    """The kernel's inputs and output of one increment, read by the later gold writes."""

    spark: SparkSession
    changes: DataFrame  # partition_changes rows (a work frame)
    out: DataFrame | None  # the driver's rows (`fold.kernel.output_schema`)
    open_iv: DataFrame  # the cluster's intervals open at the increment's start
    intervals: int  # interval rows the kernel emitted
    windows: dict[str, list[tuple[int, int, int]]]  # attribution windows (fold.context)
    arrow: pa.Table | None = None  # the driver's output as Arrow (None: Spark's tasks')
    files: kernel.KernelFiles | None = None  # what Spark's tasks wrote (None: the driver's)
    _rows: dict[str, pa.Table] = field(default_factory=dict, repr=False)  # `rows`, made

    def part(self, kind: str) -> DataFrame:
        """The kernel's rows of one kind (`fold.kernel.OUTPUTS`): the partition and, for a
        kind with a table, the table's columns; read back from the tasks' files."""
        if self.files is None:
            assert self.out is not None
            return kernel.part(self.out, kind)
        if kind in kernel.TABLES:
            return self.files.written[kind].files_frame(self.spark)
        assert kind == "gone", kind  # orphans are only counted
        return self.files.gone_frame(self.spark)

    def rows(self, kind: str) -> pa.Table:
        """The driver's output rows of one kind with a table of its own, in its table's
        schema (only when the kernel ran on the driver); made once, read by several
        commits (the timeline's by its own and by `partition_current`'s)."""
        assert self.arrow is not None
        if kind not in self._rows:
            self._rows[kind] = table_rows(kernel.part_arrow(self.arrow, kind),
                                          kernel.TABLES[kind])
        return self._rows[kind]


class _Increment:
    """The stages of one increment, in order (`run`): what the source holds, silver, the
    kernel, the commit of every table made from them, `partition_current`,
    `topics`, `ingest_progress`. Every input is read as of the increment's start (`seed`):
    a table committed meanwhile (by this very increment) does not change what a later
    stage reads."""

    def __init__(self, spark: SparkSession, lake: Lake, src: DataFrame | Planned,
                 res: IncrementResult, prev: dict | None, say: _Stages, work: Work, *,
                 min_isr_default: int, snapshot_high: int | None,
                 driver_fold_max: int,
                 on_events: Callable[[IncrementResult], None] | None = None) -> None:
        self.spark, self.lake, self.res, self.prev = spark, lake, res, prev
        self.given = src
        self.src: DataFrame  # the source rows, as `decode` (the first stage) leaves them
        # the records as `records`' files, written by the tasks that decoded them (None:
        # the rows of `src`, written at the commit)
        self.records_files: Written | None = None
        self.say, self.work, self.on_events = say, work, on_events
        self.min_isr_default, self.snapshot_high = min_isr_default, snapshot_high
        self.driver_fold_max = driver_fold_max
        self.seed = Seed(spark, lake, res.cluster_id)
        # a transaction open at the end of the cluster's previous increment
        self.pending_from: int | None = prev.get("pending_txn_from") if prev else None
        # a small increment's events, and (`swept`: its incidents were found on the driver)
        # the start of the incident open after it (None: none is): the events the next
        # increment's incidents read (`Seed.events`)
        self.new_events: pa.Table | None = None
        # a small increment's partition_current rows, collected with the other tables'
        self.current_new: pa.Table | DataFrame | None = None
        self.swept = False
        self.open_first: int | None = None

    def run(self) -> None:
        """Every stage of the increment in order, its results in `res`. A quiet increment commits
        bronze alone; a re-run whose gold committed already (`partition_current` holds its
        transaction id) commits the tables gold is not made of (`commit_after_gold`); `topics` only
        when topic records were read; `ingest_progress` always, last."""
        x = self.decode()
        records = self.src.filter(F.col("row_kind") == "record")
        # Every record stays in bronze; those breaking a record-level invariant are also
        # quarantined with the reason and kept out of silver and gold (nothing is dropped).
        checked, invalid = check_records(records)
        if self.quiet(x):
            # A quiet increment (a controller's NoOps, most of what an idle cluster
            # writes): no record any silver table is made of, no snapshot, no transaction
            # open before it, so no table but bronze can change. It has no gold, so no
            # `partition_current` marker either: a re-run of it (the same input) is quiet
            # again and never asks whether gold was done.
            self.say("commit: records, quarantine (no record of partition, broker, topic "
                     "or config)")
            self.commit_concurrently(self.bronze(_Once(lambda: self.collect(
                self.bronze_rows(records, invalid)))))
        else:
            gold_done = self.lake.committed("partition_current", self.res.app_id,
                                            self.res.version)
            s = self.silver(x, records, checked, invalid, gold=not gold_done)
            if gold_done:
                self.commit_after_gold(s)
            else:
                k = self.kernel(x, s)
                self.commit(x, s, k)
                self.current(k)
            if s.topic_records:  # the cluster's topics as the increment leaves them
                self.write("topics", s.topics, "replace",
                           slice_={"cluster_id": self.res.cluster_id}, after=s.topics)
        self.progress()

    # ------------------------------------------------------------------ stages

    def decode(self) -> _Decoded:
        """One pass over the source: its offsets, the header of its last batch, and how
        many records of each kind later stages look at."""
        self.say("decode: read and decode the source")
        res = self.res
        tasks_wrote: Written | None = None
        if isinstance(self.given, Planned):
            # Every stage reads the decoded source: decoded once by Spark's tasks, which
            # write it as a work frame and the records as `records`' files themselves
            # (unless a killed run committed them)
            planned = self.given
            target = None if self.lake.committed("records", res.app_id, res.version) \
                else self.lake.files_target("records", self.work.dir)
            got = decode_to_files(self.spark, planned, self.work.dir, target)
            self.src = not_held(got.frame, planned.behind)
            tasks_wrote = got.records
        elif not self.work.local:  # a large kafka-dump-log text: the same, by the JVM
            self.src = self.work.frame("source", self.given)
        else:
            self.src = self.given
        src = self.src
        is_record = F.col("row_kind") == "record"
        log_offset = F.when(is_record & (F.col("source") == "log"), F.col("offset"))
        (lo, hi, res.end_batch_crc, res.end_batch_epoch, res.records, snap_hi, n_relevant,
         n_checks, n_resets, n_reaching, n_topics, n_markers,
         n_lossy, res.newest_us) = _aggregate(src.agg(
            F.min(log_offset), F.max(log_offset), F.max_by("batch_crc", log_offset),
            F.max_by("epoch", log_offset), F.count(F.when(is_record, 1)),
            F.max("snapshot_end_offset"), F.count(F.when(is_relevant(), 1)),
            F.count(F.when(is_record & (F.col("snapshot_role") == "check"), 1)),
            F.count(F.when(is_record & (F.col("snapshot_role") == "reset"), 1)),
            F.count(F.when(is_record & F.col("record_type").isin(*FAN_OUT_TYPES), 1)),
            F.count(F.when(is_record & F.col("record_type").isin(*TOPIC_TYPES), 1)),
            F.count(F.when(is_record & F.col("record_type").isin(*TRANSACTION_MARKERS), 1)),
            F.count(F.when(_lossy(), 1)),
            F.max(F.unix_micros(F.when(log_offset.isNotNull(), F.col("timestamp"))))))
        if tasks_wrote is not None and tasks_wrote.rows == res.records:
            # the tasks' files hold every record they decoded: the increment's, unless
            # `not_held` dropped some (a stream resumed behind an ingest); then `records` is
            # written from the frame, and the files, never committed, are left to VACUUM
            self.records_files = tasks_wrote
        if self.snapshot_high is None:
            self.snapshot_high = snap_hi
        res.start_offset = lo
        res.end_offset = None if hi is None else hi + 1
        if n_lossy:
            res.unknown = unknown_ranges(src)
        return _Decoded(snap_hi, n_relevant, n_checks, n_resets, n_reaching, n_topics,
                       n_markers)

    def quiet(self, x: _Decoded) -> bool:
        return (not x.relevant and x.snapshot_high is None and self.pending_from is None
                and not self.res.unknown)

    def bronze_rows(self, records: DataFrame, invalid: DataFrame) -> dict[str, DataFrame]:
        """The rows of `records` and `quarantine` (every source row that is no decodable
        record, and the invalid records)."""
        return {"records": records, "quarantine": _problems(self.src).unionByName(invalid)}

    def bronze(self, rows: Callable[[], dict[str, DataFrame | pa.Table]]
               ) -> dict[str, Callable[[], object]]:
        """The commits of `records` and `quarantine` (`rows()`: theirs, `bronze_rows`)."""
        res = self.res

        def quarantine() -> None:
            res.quarantined = self.write("quarantine", rows()["quarantine"])

        return {"records": lambda: self.write("records", self.records_files or rows()["records"],
                                              count=res.records),
                "quarantine": quarantine}

    def silver(self, x: _Decoded, records: DataFrame, checked: DataFrame,
               invalid: DataFrame, *, gold: bool) -> _Silver:
        """Committed records, the cluster's topics, brokers and configs, and (`gold`: the
        gold tables are still to be written) partition changes: computed once, together
        with the answers the later stages need (`Work.frames`: on the driver, one Spark
        job)."""
        self.say("silver: partition changes")
        res, seed = self.res, self.seed
        # records held back by an open transaction last time are read again from bronze
        read_back, rel_in = 0, checked
        pend = self.pending_from
        if pend is not None and res.start_offset is not None and pend < res.start_offset:
            read_back = res.start_offset - pend  # an offset is one record
            back = with_fields(seed.log_records(pend, res.start_offset))
            rel_in = checked.unionByName(back.withColumn("row_kind", F.lit("record")),
                                         allowMissingColumns=True)
        rel = relevant(rel_in)
        # records read back begin with a Begin; without markers, every record took effect
        found = transaction_markers(rel).toArrow() if x.markers or read_back else None
        done, pending = committed(rel, found)
        res.pending_txn_from = pending.get(res.cluster_id)
        frames = {}
        changes_files: Written | None = None
        if self.work.local:  # a filter of a few rows: in the job below
            frames["committed"] = done
        else:  # every later frame reads it: computed once, first
            done = self.work.frame("committed", done)
        effective = _effective(done)
        old_topics = seed.slice("topics")
        # records read back may hold topic records; without any the topics stay as they were
        topic_records = bool(x.topic_records or read_back)
        live = old_topics.filter(F.col("deleted_offset").isNull()).select(
            "cluster_id", "topic_id")
        topics = _topics_after(old_topics, topics_of(effective, live)) if topic_records \
            else old_topics
        names = topics.select("cluster_id", "topic_id", "topic_name", "deleted_offset")
        # the partitions known before the increment are joined only where a record reaches
        # them: a RemoveTopic or ClearElr record (or records read back, uncounted) or a
        # reset snapshot
        known = seed.slice("partition_current").select(*KEY)
        if topic_records:
            frames["topics"] = topics
        if gold:
            changes = partition_changes(done, known if x.reaching or read_back else None,
                                        names, live, topic_records=topic_records)
            if x.resets:
                changes = changes.unionByName(snapshot_removals(done, known),
                                              allowMissingColumns=True)
            changes = conform(changes, "partition_changes")
            # a large increment's rows are written once, as the table's own files (none a
            # re-run finds committed already): the kernel reads them back, the commit adds
            # them
            if not self.work.local and not self.lake.committed(
                    "partition_changes", res.app_id, res.version):
                changes_files = self.lake.write_files("partition_changes", changes)
            if changes_files is None:
                frames["partition_changes"] = changes
        # How many records each small silver table is made of: a broker or config record
        # is one row of its table; topic records only say whether `topics` may change.
        counts = effective.agg(*[
            F.count(F.when(F.col("record_type").isin(*types), 1)).alias(name)
            for name, types in (("brokers", BROKER_TYPES), ("configs", CONFIG_TYPES),
                                ("topics", TOPIC_TYPES))])
        answers = {"counts": counts, "configs": configs_of(effective),
                   "invalid": invalid.filter(F.col("state_unknown")).select(
                       "offset", "end_offset")}
        made, got = self.work.frames(frames, answers)
        if "committed" in made:
            done = made["committed"]
            effective = _effective(done)
        n = got["counts"].to_pylist()[0]
        # a record kept out of silver by a record-level check: what it changed is unknown
        res.unknown = sorted({*res.unknown, *((r["offset"], r["end_offset"], None)
                                              for r in got["invalid"].to_pylist())})
        return _Silver(records, invalid, done, old_topics, made.get("topics", topics),
                       topic_records, brokers_of(effective), got["configs"],
                       made.get("partition_changes") if changes_files is None
                       else changes_files.files_frame(self.spark), changes_files, read_back,
                       n["brokers"], n["configs"], n["topics"])

    def kernel(self, x: _Decoded, s: _Silver) -> _Kernel:
        """The kernel over the partition changes, continuing from the current states and
        open intervals the lake held at the start.

        The kernel's output is computed once: by Spark's tasks, which write the timeline's,
        events' and intervals' files themselves (`kernel.write_files`, `lake.written`), or as
        Arrow on the driver (`kernel.run_on_driver`, without a Spark job when its inputs are
        Arrow on the driver already: `run_on_driver_arrow`); every gold table is made of
        it. When states are
        uncertain (unknown offsets in this increment or carried from an earlier one) and
        the source holds a check snapshot, the snapshot's states are the kernel's anchors
        (`_anchors`)."""
        self.say("kernel: timeline, events, intervals")
        res, seed, spark = self.res, self.seed, self.spark
        cid, changes = res.cluster_id, s.changes
        assert changes is not None  # made by `silver` whenever gold is to be written
        rows = x.relevant + s.read_back  # records silver is made of: about the kernel's input
        on_driver = 0 < rows <= self.driver_fold_max
        cur_df = seed.slice("partition_current")
        open_iv = seed.slice("partition_intervals")
        names = s.topics.select("cluster_id", "topic_id", "topic_name", "deleted_offset")
        contexts = cluster_contexts(self.configs(s), self.topics_rows(s, names),
                                    self.min_isr_default)
        anchors = None
        if x.checks and res.start_offset is not None and (res.unknown or not cur_df.filter(
                F.col("uncertain_since").isNotNull()).isEmpty()):
            known = cur_df.select(*KEY).unionByName(changes.select(*KEY)).distinct()
            anchors = _anchors(s.done, known, names, s.old_topics.filter(
                F.col("deleted_offset").isNull()).select("cluster_id", "topic_id"),
                res.start_offset)
        if res.unknown:
            contexts.setdefault(cid, kernel.empty_context(self.min_isr_default)).unknown = \
                res.unknown
        carried = bool(res.unknown) or anchors is not None  # every live partition's seed
        table: pa.Table | None = None
        files: kernel.KernelFiles | None = None
        if on_driver and self.work.local and not carried:
            # the partitions the increment changes, every input Arrow on the driver already:
            # picked and folded there without a Spark job
            touched = self.work.arrow["partition_changes"]
            table = kernel.run_on_driver_arrow(spark, touched, *self.touched_slices(touched),
                                               contexts)
        else:
            seeds, opened = self.kernel_seeds(changes, cur_df, open_iv, carried)
            if on_driver:
                table = kernel.run_on_driver(spark, changes, seeds, opened, contexts, anchors)
            else:  # the tasks write the tables' files (`lake.written`)
                work_dir = join(self.work.dir, "kernel")
                files = kernel.write_files(
                    spark, changes, seeds, opened, contexts,
                    {kind: self.lake.files_target(t, work_dir)
                     for kind, t in kernel.TABLES.items()}, anchors, rows=rows)
                counts = files.counts
        out: DataFrame | None = None
        if table is not None:
            out = spark.createDataFrame(table, kernel.output_schema())
            types = pc.struct_field(table.column("event"), "event_type").to_pylist()
            counts = dict(Counter((o, t if o == "event" else None) for o, t in zip(
                table.column("out").to_pylist(), types, strict=True)))
        res.timeline = counts.get(("timeline", None), 0)
        res.orphans = counts.get(("orphan", None), 0)
        res.event_counts = {e: n for (o, e), n in counts.items() if o == "event" and e}
        res.events = sum(res.event_counts.values())
        return _Kernel(spark, changes, out, open_iv, counts.get(("interval", None), 0),
                       {c: ctx.windows for c, ctx in contexts.items()}, table, files)

    def touched_slices(self, touched: pa.Table) -> tuple[pa.Table, pa.Table]:
        """The held current states and open intervals of the partitions `touched` (the
        increment's partition changes, Arrow on the driver) changes."""
        return (_of_partitions(self.seed.rows("partition_current"), touched),
                _of_partitions(self.seed.rows("partition_intervals"), touched))

    def kernel_seeds(self, changes: DataFrame, cur_df: DataFrame, open_iv: DataFrame,
                     carried: bool) -> tuple[DataFrame, DataFrame]:
        """What a kernel given DataFrames continues from, of `cur_df` (the cluster's current
        states) and `open_iv` (its open intervals): every live partition's when states are
        `carried` across unknown offsets or anchored, else those of the partitions the
        increment changes, picked on the driver when its changes are Arrow there, else by
        Spark."""
        if carried:
            return cur_df, open_iv
        if self.work.local:
            cur, iv = self.touched_slices(self.work.arrow["partition_changes"])
            return (from_arrow(self.spark, "partition_current", cur),
                    from_arrow(self.spark, "partition_intervals", iv))
        touched = changes.select(*KEY).distinct()
        return cur_df.join(touched, KEY, "left_semi"), open_iv.join(touched, KEY, "left_semi")

    def topics_rows(self, s: _Silver, names: DataFrame) -> pa.Table:
        """The cluster's topics after the increment as Arrow: collected with silver on the
        driver, held when the increment changed none, else one Spark job."""
        if s.topics_changed:
            got = self.work.arrow.get("topics")
            return names.toArrow() if got is None else got
        return self.seed.rows("topics")

    def commit(self, x: _Decoded, s: _Silver, k: _Kernel) -> None:
        """Every table computed from the pinned seed and this increment's frames: none
        reads another's commit, so they commit together (`commit_concurrently`),
        `partition_events` first (what someone watching a stream waits for), then the
        slowest."""
        self.say("commit: events, records, quarantine, brokers, configs, partition changes, "
                 "timeline, reconciliation, intervals, incidents")
        res, seed = self.res, self.seed
        cid = res.cluster_id
        # asked before this run writes: a run stopped after that commit wrote them already
        rerun = self.lake.committed("partition_intervals", res.app_id, res.version)
        # a small increment's events are the kernel's Arrow rows, written and committed
        # first, while the other tables' rows are collected (`_Once`: by the first commit
        # task that needs them, the others wait for it); a large one's, the files its tasks
        # wrote
        events: Written | pa.Table = k.files.written["event"] if k.files is not None \
            else k.rows("event")
        if isinstance(events, pa.Table):
            self.new_events = events  # held for the next increment's incidents
        rows = _Once(lambda: self.gold_rows(k, s))

        def changes() -> None:
            """`partition_changes`: the Arrow rows silver collected on the driver, else the
            files silver wrote (or the work frame), counted by its commit (or by a scan,
            when a re-run finds it committed)."""
            arrow = self.work.arrow.get("partition_changes")
            if arrow is not None:
                res.changes = arrow.num_rows
                self.write("partition_changes", arrow, count=res.changes)
                return
            # a large increment's rows are counted by the commit that adds them (its
            # metrics), not by a scan of their own; a re-run that finds them committed
            # counts them
            written = self.write("partition_changes", s.changes_files or k.changes)
            res.changes = k.changes.count() if "partition_changes" in res.skipped \
                else written

        def timeline() -> None:
            new = rows()["partition_timeline"]
            self.write("partition_timeline", new, "replace", count=res.timeline, after=new,
                       slice_={"cluster_id": cid, "is_current": True})

        def reconciliation() -> None:
            if x.checks:
                self.reconciliation(conform(k.part("timeline"), "partition_timeline"))

        def intervals() -> None:
            new = rows()["partition_intervals"]
            self.write("partition_intervals", new, "replace", count=k.intervals, after=new,
                       slice_={"cluster_id": cid, "is_open": True})

        def incidents_() -> None:
            self.incidents(rows, k, rerun)

        self.commit_concurrently({
            "partition_events": lambda: self.write("partition_events", events,
                                                   count=res.events),
            "incidents": incidents_, "partition_timeline": timeline,
            "partition_changes": changes, "snapshot_reconciliation": reconciliation,
            "partition_intervals": intervals, **self.bronze(rows), **self.small_tables(s, rows)})
        self.current_new = rows().get("partition_current")
        if self.swept and res.start_offset is not None:  # what the next one's incidents read
            seed.keep_events(res.table_versions.get("partition_events"), self.new_events,
                             self.open_first, res.start_offset)

    def all_arrow(self, k: _Kernel) -> bool:
        """The increment's frames and the kernel's rows are Arrow on the driver (decoded and
        folded there): its replaced slices and incidents are made there without Spark."""
        return self.work.local and k.arrow is not None

    def gold_rows(self, k: _Kernel, s: _Silver) -> dict[str, DataFrame | pa.Table]:
        """The rows the commit stage writes that are not the kernel's events: the timeline's
        and the intervals' replaced slices, bronze, brokers and (when a state changed)
        `partition_current`. Only current states and open intervals are ever closed: the
        cluster's current (open) slice is replaced, what the increment closes is added to the
        history in the same commit. A small increment's replacements are made on the driver
        from the kernel's Arrow and the held slices (no Spark job), the rest collected in one
        job (`collect`)."""
        seed = self.seed
        cur = self.current_rows(k)
        slices: dict[str, DataFrame | pa.Table | Written]
        if self.all_arrow(k):
            slices = {"partition_timeline": _replacement(
                          seed.rows("partition_timeline"), k.rows("timeline"),
                          table_schema("partition_timeline").key),
                      "partition_intervals": _replacement(
                          seed.rows("partition_intervals"), k.rows("interval"), INTERVAL_KEY)}
            if cur is not None:
                slices["partition_current"] = cur
            return {**slices, **self.collect({**self.bronze_rows(s.records, s.invalid),
                                              "brokers": s.brokers})}
        if k.files is not None:  # written by the kernel's tasks, with the open rows kept
            slices = {"partition_timeline": self.kept(
                          k, "timeline", table_schema("partition_timeline").key),
                      "partition_intervals": self.kept(k, "interval", INTERVAL_KEY)}
        else:
            slices = {"partition_timeline": _replacement(
                          seed.slice("partition_timeline"),
                          conform(k.part("timeline"), "partition_timeline"),
                          table_schema("partition_timeline").key),
                      "partition_intervals": _replacement(
                          k.open_iv, conform(k.part("interval"), "partition_intervals"),
                          INTERVAL_KEY)}
        return {**slices, **self.collect({
            **self.bronze_rows(s.records, s.invalid), "brokers": s.brokers,
            **({} if cur is None else {"partition_current": cur})})}

    def kept(self, k: _Kernel, kind: str, key: Sequence[str]) -> Written:
        """The rows the kernel's tasks wrote of one kind, with the rows of the slice it
        replaces (`Lake.replace`) that none of them replaces: the open rows of partitions the
        increment left alone, Arrow on the driver (`Seed.rows`), written by the driver in the
        same commit. Only their keys are read back from the tasks' files."""
        assert k.files is not None
        table = kernel.TABLES[kind]
        old = self.seed.rows(table)
        written = k.files.written[kind]
        if not old.num_rows:
            return written
        new = written.files_frame(self.spark).select(*key).toArrow()
        return written.with_rest(_replacement(old, new, key, only_old=True))

    def collect(self, frames: dict[str, DataFrame]) -> dict[str, DataFrame | pa.Table]:
        """Rows of several tables (table -> frame): a small increment's as Arrow, all from
        one Spark job (`collect_together`), which the driver then writes
        (`lake.arrow_files`); a large increment's frames as they are, written by Spark."""
        if not self.work.local:
            return dict(frames)
        return dict(collect_together({n: conform(df, n) for n, df in frames.items()}))

    def commit_after_gold(self, s: _Silver) -> None:
        """The commit stage of a re-run whose gold committed (`partition_current` holds its
        transaction id): the tables gold is not made of, and gold's counts read back."""
        res = self.res
        res.skipped += MADE_WITH_GOLD
        _restore_gold_counts(res, self.lake.commit_metadata("partition_current", res.app_id,
                                                            res.version))
        rows = _Once(lambda: self.collect({**self.bronze_rows(s.records, s.invalid),
                                           "brokers": s.brokers}))
        self.commit_concurrently({**self.bronze(rows), **self.small_tables(s, rows)})

    def small_tables(self, s: _Silver, rows: Callable[[], dict[str, DataFrame | pa.Table]]
                     ) -> dict[str, Callable[[], object]]:
        """The commits of `brokers` (its rows in `rows()`, as `collect` left them) and
        `configs` (the increment's rows appended)."""
        return {"brokers": lambda: self.write("brokers", rows()["brokers"], count=s.brokers_n,
                                              after=lambda: self.brokers_after(rows)),
                "configs": lambda: self.write("configs", s.configs, count=s.configs_n,
                                              after=lambda: self.configs(s))}

    def brokers_after(self, rows: Callable[[], dict[str, DataFrame | pa.Table]]
                      ) -> pa.Table | DataFrame:
        """The cluster's brokers rows after the increment: those held, then its own (Arrow
        when `collect` left them so)."""
        brokers = rows()["brokers"]
        if isinstance(brokers, pa.Table):
            return pa.concat_tables([self.seed.rows("brokers"), as_rows(brokers, "brokers")])
        return self.seed.slice("brokers").unionByName(brokers)

    def configs(self, s: _Silver) -> pa.Table:
        """The cluster's configs rows after the increment: those held, then its own."""
        return pa.concat_tables([self.seed.rows("configs"), as_rows(s.configs, "configs")])

    def reconciliation(self, tl: DataFrame) -> None:
        """`snapshot_reconciliation`: each check snapshot's states against the timeline's
        states valid at its offset."""
        res, src = self.res, self.src
        points = check_points(src)
        lo, hi = _aggregate(points.agg(F.min("snapshot_end_offset"),
                                       F.max("snapshot_end_offset")))
        if lo is None:
            return
        # only states valid at some check point (or ending at one: the state a snapshot
        # re-anchored, `reconcile`); literal bounds let Delta skip the files of older
        # history by their statistics, so the cost does not grow with the history, and
        # keep only a few of a first ingest's states (those the kernel just wrote)
        valid = (F.col("valid_from_offset") <= hi - 1) & (
            F.col("valid_to_offset").isNull() | (F.col("valid_to_offset") >= lo - 1))
        new = tl.filter(valid)
        if self.seed.pin("partition_timeline") is None:  # the lake's first states
            old = new
        else:
            old = self.seed.read("partition_timeline").filter(valid)
            if res.timeline:  # rows rewritten by this increment replace the old ones
                key = [*KEY, "valid_from_offset", "seq"]
                old = old.join(tl.select(*key), key, "left_anti").unionByName(new)
        m = self.work.frame("snapshot_reconciliation", conform(
            reconcile(snapshot_states(src), points, old), "snapshot_reconciliation"))
        res.mismatches = m.count()
        self.write("snapshot_reconciliation", m, "upsert", count=res.mismatches)

    def incidents(self, rows: Callable[[], dict[str, DataFrame | pa.Table]], k: _Kernel,
                  rerun: bool) -> None:
        """`incidents`: the cluster's open incident replaced by the increment's rows.

        Inputs grow with the increment, not the lake: the intervals this increment wrote
        and those still open at its start (`rows()`, as the commit of `partition_intervals`
        has them), the incident still open at its start (only open rows are replaced), the
        events from that incident's start on (Delta skips older files by their offset
        statistics) and the cluster's broker records (silver, one row per broker state
        change). A small increment's (`local`) are Arrow on the driver, where the held rows
        and the kernel's meet without a Spark job; the sweep's troubles and the incidents'
        rows cost one job each."""
        res, seed, spark = self.res, self.seed, self.spark
        since = res.start_offset
        if since is None:  # no log record: nothing can open or close
            return
        local = self.work.local  # the rows are few: outages and incidents on the driver
        troubles: DataFrame | pa.Table
        if rerun:  # a run stopped after that commit: the table holds the increment's spans
            troubles = seed.read("partition_intervals").filter(
                F.col("is_open") | (F.col("end_offset") >= since))
        else:  # what the table will hold: open at the start or ended in this increment
            troubles = rows()["partition_intervals"]
        if isinstance(troubles, pa.Table):
            troubles = from_arrow(spark, "partition_intervals", troubles)
        elif isinstance(troubles, Written):
            troubles = conform(troubles.frame(spark), "partition_intervals")
        held = seed.rows("incidents")  # the cluster's open incident (at most one)
        open_inc = from_arrow(spark, "incidents", held)
        first = pc.min(held["start_offset"]).as_py()
        unknown_before = pc.max(held["unknown_offsets"]).as_py()
        before = first is not None and first < since  # the open incident's events so far
        events: DataFrame | pa.Table
        if self.all_arrow(k):  # the kernel's, and the events held
            assert self.new_events is not None  # set by `commit` from the kernel's Arrow
            events = pa.concat_tables([seed.event_rows(first, since), self.new_events]) \
                if before else self.new_events
        else:
            events = conform(k.part("event"), "partition_events")
            if before:
                events = seed.events(first, since).unionByName(events)
        outages = broker_outages(self.brokers_after(rows), events, k.windows,
                                 on_driver=local).filter(
            (F.col("start_offset") >= since) | F.col("end_offset").isNull()
            | (F.col("end_offset") >= since))
        inc = incidents(troubles, outages, events,
                        open_incident=open_inc if first is not None else None,
                        since_offset=since, on_driver=local)
        inc = self.work.frame("incidents", conform(
            _with_unknown(inc, open_inc if unknown_before else None, res.unknown),
            "incidents"))
        key = table_schema("incidents").key
        if local:  # collected once: replaced, written by the driver, and held
            made = table_rows(self.work.arrow["incidents"], "incidents")
            new: DataFrame | pa.Table = _replacement(held, made, key)
            n = made.num_rows
            self.swept, self.open_first = True, pc.min(new.filter(pc.fill_null(
                new["is_open"], False))["start_offset"]).as_py()
        else:
            new, n = _replacement(open_inc, inc, key), inc.count()
        self.write("incidents", new, "replace", count=n, after=new,
                   slice_={"cluster_id": res.cluster_id, "is_open": True})

    def current(self, k: _Kernel) -> None:
        """`partition_current`, the marker that gold is done: the cluster's rows replaced
        when the increment changed a state, else a commit of no rows (the marker alone)."""
        self.say("current: partition_current")
        res = self.res
        rows = self.current_new if self.current_new is not None else self.current_rows(k)
        if rows is None:  # no state changed (a partition deleted has a timeline row too)
            self.write("partition_current", None, "replace", slice_={"cluster_id": res.cluster_id},
                       metadata=_gold_counts(res), after=self.seed.slice("partition_current"))
            return
        self.write("partition_current", rows, "replace", slice_={"cluster_id": res.cluster_id},
                   metadata=_gold_counts(res), after=rows)

    def current_rows(self, k: _Kernel) -> DataFrame | None:
        """The cluster's `partition_current` rows after the increment (None: it changed no
        state): the states it left current replace those of their partitions, the
        partitions it deleted are left out."""
        if not self.res.timeline:
            return None
        if self.all_arrow(k):
            tl = k.rows("timeline")
            return _replacement(self.seed.rows("partition_current"),
                                table_rows(tl.filter(tl["is_current"]), "partition_current"),
                                KEY, kernel.part_arrow(k.arrow, "gone").select(KEY))
        new = conform(k.part("timeline").filter("is_current"), "partition_current")
        return _replacement(self.seed.slice("partition_current"), new, KEY,
                            k.part("gone").select(*KEY))

    def progress(self) -> None:
        """The increment's `ingest_progress` row, its last commit.

        Its `table_versions` say where a consistent read of the cluster stands
        (`lake.cut`): each table at the version of this increment's commit, or, for a
        table it did not write (nothing to write, or committed by a run it completes), at
        the version pinned at its start, which holds every earlier increment of the
        cluster and nothing of a later one."""
        self.say("progress: ingest_progress")
        res, prev, seed = self.res, self.prev, self.seed
        versions = {t: seed.pin(t) for t in table_names() if t not in CUT_EXCLUDED}
        versions.update(res.table_versions)
        snapshot_high = self.snapshot_high
        row = pa.table({
            "cluster_id": [res.cluster_id], "app_id": [res.app_id], "version": [res.version],
            "start_offset": [res.start_offset],
            "end_offset": [res.end_offset if res.end_offset is not None else
                           (prev["end_offset"] if prev else 0)],
            "snapshot_high": [snapshot_high if snapshot_high is not None else
                              (prev["snapshot_high"] if prev else None)],
            "pending_txn_from": [res.pending_txn_from],
            **_end_batch(res, prev),
            "records": [res.records], "changes": [res.changes], "events": [res.events],
            "table_versions": pa.array([sorted((t, v) for t, v in versions.items()
                                               if v is not None)],
                                       pa.map_(pa.string(), pa.int64())),
            "newest_record_ts": pa.array([_newest(res.newest_us, prev)],
                                         pa.timestamp("us", tz="UTC"))})
        self.write("ingest_progress", row, after=lambda: pa.concat_tables(
            [seed.rows("ingest_progress"), as_rows(row, "ingest_progress")]))

    # ------------------------------------------------------------------ commits

    def commit_concurrently(self, tasks: dict[str, Callable[[], object]]) -> None:
        """Run the commits of one stage (table -> task) on `COMMIT_THREADS` threads, each with
        a session of its own for merges (`Lake.own_session`) and naming its Spark jobs after
        its table. The first failure stops the stage: commits not started are dropped, those
        under way finish, and the failure is raised, so a failed stage leaves some of its
        tables committed and others not, which a re-run completes (each table's transaction
        id says whether it holds this increment)."""
        def named(name: str, task: Callable[[], object]) -> Callable[[], object]:
            def run() -> object:
                self.say.describe(f"commit {name}")
                return task()
            return run

        runs = [named(n, t) for n, t in tasks.items()]
        if COMMIT_THREADS <= 1:
            for run in runs:
                run()
            return
        self.lake.spark  # noqa: B018  (resolved here: a new thread has no active session)
        with ThreadPoolExecutor(COMMIT_THREADS, thread_name_prefix="kraftlake-commit",
                                initializer=self.lake.own_session) as pool:
            futures = [pool.submit(run) for run in runs]
            wait(futures, return_when=FIRST_EXCEPTION)
            for f in futures:
                f.cancel()  # those not started yet, after a failure
            for f in futures:
                if not f.cancelled():
                    f.result()  # the first failure, once the commits under way are done

    def write(self, name: str, data: pa.Table | DataFrame | None, how: str = "append",
              count: int | None = None, after: Rows | None = None, **kw) -> int:
        """Commit `data` to `name` once per (app id, version); the rows written (0: skipped).

        Nothing to write is no commit (a Delta commit costs most of a second, and most
        increments leave several tables unchanged); a re-run finds the same nothing. Only
        `partition_current` and `ingest_progress` always commit: their transaction ids mark
        how far an increment got (see the module docstring). `count`: the rows of `data`
        when the caller has counted them already (asking again is one more Spark job).
        `after`: the cluster's rows of a table the next increment continues from, as the
        commit leaves them (held for it: `Seed.keep`). A small increment's frame (`local`)
        is collected as Arrow first and written by the driver.
        """
        res, lake = self.res, self.lake
        app_id, version = res.app_id, res.version
        if lake.committed(name, app_id, version):
            res.skipped.append(name)
            return 0
        if (self.work.local and how != "upsert" and isinstance(data, DataFrame)
                and count != 0):
            # a small increment's rows, collected once: the driver writes their files
            # (`lake.arrow_files`), and the same rows are held for the next increment
            rows = conform(data, name).toArrow()
            after, data, count = (rows if after is data else after), rows, rows.num_rows
        if name not in ALWAYS_COMMITTED and _is_empty(data, count):
            if name == FAIL_AFTER:
                raise InjectedFailure(f"stopped after {name} (nothing to commit)")
            return 0
        t0 = time.perf_counter()
        if how == "append":
            lake.append(name, data, app_id, version, **kw)
        elif how == "replace":
            lake.replace(name, data, app_id=app_id, version=version,
                         read_version=self.seed.pin(name), **kw)
        else:
            lake.upsert(name, data, app_id, version, **kw)
        res.commit_seconds[name] = round(time.perf_counter() - t0, 2)
        if name == FAIL_AFTER:
            raise InjectedFailure(f"stopped after the commit of {name}")
        res.table_versions[name], m = lake.commit_of(name, app_id, version)
        if after is not None:
            self.seed.keep(name, res.table_versions[name], after)
        if name == "partition_events" and self.on_events is not None:
            self.on_events(res)
        return m.get("numOutputRows", m.get("numTargetRowsInserted", 0))


class _Once:
    """A value computed by the first thread that asks for it; the others wait for it."""

    def __init__(self, make: Callable[[], dict[str, DataFrame | pa.Table]]) -> None:
        self._make, self._lock = make, threading.Lock()
        self._value: dict[str, DataFrame | pa.Table] | None = None

    def __call__(self) -> dict[str, DataFrame | pa.Table]:
        with self._lock:
            if self._value is None:
                self._value = self._make()
            return self._value


def not_held(rows: DataFrame, at: dict | None) -> DataFrame:
    """The source rows of an increment that the lake does not hold yet for the cluster
    (`at`: its progress row, `furthest`; None: it holds nothing).

    Normally all of them. A stream restarted after a batch ingest (or an ingest that
    finished the stream's stopped micro-batch) resumes from its own checkpoint, behind what
    the lake holds: those offsets and snapshots are not ingested twice.
    """
    if at is None:
        return rows
    end = int(at["end_offset"] or 0)
    snap = -1 if at["snapshot_high"] is None else int(at["snapshot_high"])
    # a snapshot's rows carry its end offset - 1 as their offset: a snapshot Kafka wrote
    # behind the stream's position is new to the lake all the same
    keep = F.when(F.col("snapshot_end_offset").isNotNull(), F.col("snapshot_end_offset") > snap
                  ).otherwise(F.col("offset").isNull() | (F.col("offset") >= end))
    return rows.filter(keep)


def _problems(src: DataFrame) -> DataFrame:
    """The source's rows that are no decodable record (a damaged batch, an undecodable
    record), as `quarantine` rows, each once."""
    problems = src.filter((F.col("row_kind") != "record") | F.col("error").isNotNull()).select(
        "cluster_id", F.coalesce("source_file", F.lit("")).alias("source_file"),
        F.when(F.col("row_kind") == "record", F.lit(-1)).otherwise(
            F.coalesce("byte_position", F.lit(-1))).alias("byte_position"),
        "offset", "end_offset",
        F.when(F.col("row_kind") == "record", F.lit("undecodable")).otherwise(
            F.coalesce("problem_kind", "row_kind")).alias("kind"),
        F.coalesce("error", F.lit("")).alias("reason"), F.col("value").alias("raw"),
        "state_unknown")
    return problems.dropDuplicates(["cluster_id", "source_file", "byte_position", "kind",
                                    "offset"])


def _lossy() -> Column:
    """A damaged region that may have held state (`codec.damage`), or offsets the input
    lacks (a `gap`: retention, a missing segment), placed in the log."""
    return (F.col("row_kind").isin("problem", "gap") & F.col("state_unknown")
            & (F.col("source") == "log") & F.col("offset").isNotNull())


def unknown_ranges(src: DataFrame) -> list[tuple[int, int, int | None]]:
    """The log offsets the source's damaged regions and gaps took with them, in order:
    [lo, hi) and the region's time in microseconds (None when its header could not be read,
    and for a gap, which has no bytes).

    A region spans from its base offset to the end its header claims (a gap: the offsets
    it lacks), or, when the header cannot be believed, to the next offset the source did
    read. Offsets the source read
    anyway (another copy, a segment that overlaps) are known, so a region whose every offset
    was read costs nothing. Damage is rare and its rows few: a few small Spark jobs only
    when there is some."""
    out = []
    log = src.filter((F.col("row_kind") == "record") & (F.col("source") == "log"))
    for p in src.filter(_lossy()).select("offset", "end_offset",
                                      F.unix_micros("timestamp").alias("ts")).collect():
        lo, hi = p["offset"], p["end_offset"]
        if hi is None:
            hi = _aggregate(log.filter(F.col("offset") > lo).agg(F.min("offset")))[0]
            if hi is None:
                hi = lo + 1  # nothing read after it: at least its own base offset is gone
        known = log.filter((F.col("offset") >= lo) & (F.col("offset") < hi)).count()
        if known < hi - lo:
            out.append((lo, hi, p["ts"]))
    return sorted(out)


def _end_batch(res: IncrementResult, prev: dict | None) -> dict[str, list[int | None]]:
    """The progress row's header of the batch holding its end offset - 1: the one this
    increment read last, or the previous row's when it read no log record."""
    if res.end_offset is None and prev is not None:
        return {c: [prev.get(c)] for c in ("end_batch_crc", "end_batch_epoch")}
    return {"end_batch_crc": [res.end_batch_crc], "end_batch_epoch": [res.end_batch_epoch]}


def _newest(us: int | None, prev: dict | None) -> int | None:
    """`newest_record_ts` (microseconds) after an increment whose newest log record is at
    `us`: the newer of it and the previous row's (an increment of snapshots or of older
    records leaves it as it was; a row written before kraftlake kept it counts as none)."""
    before = None if prev is None else prev.get("newest_record_ts")
    if before is not None:  # an Arrow row's time is UTC-aware, a Spark row's naive UTC
        before = (before.replace(tzinfo=dt.UTC) - _EPOCH) // dt.timedelta(microseconds=1)
    return max((t for t in (us, before) if t is not None), default=None)


_EPOCH = dt.datetime(1970, 1, 1, tzinfo=dt.UTC)


def _aggregate(frame: DataFrame) -> Row:
    """The one row of an aggregate without grouping (Spark answers one even for no rows)."""
    row = frame.first()
    assert row is not None
    return row


def _is_empty(data: pa.Table | DataFrame | Written, count: int | None) -> bool:
    """`data` has no rows; `count` is its row count when the caller knows it already."""
    if count is not None:
        return count == 0
    if isinstance(data, Written):
        return data.rows == 0
    return data.num_rows == 0 if isinstance(data, pa.Table) else data.isEmpty()


def _gold_counts(res: IncrementResult) -> dict[str, str]:
    """What gold wrote, kept in the `partition_current` commit for a re-run that skips gold."""
    counts = {f"kraftlake.{k}": str(getattr(res, k)) for k in GOLD_COUNTS}
    counts["kraftlake.event_counts"] = json.dumps(res.event_counts, sort_keys=True)
    return counts


def _restore_gold_counts(res: IncrementResult, meta: dict[str, str] | None) -> None:
    if not meta:  # committed by a kraftlake that kept no counts: they stay unknown (0)
        return
    for k in GOLD_COUNTS:
        setattr(res, k, int(meta.get(f"kraftlake.{k}", 0)))
    res.event_counts = json.loads(meta.get("kraftlake.event_counts", "{}"))


def _anchors(done: DataFrame, known: DataFrame, topic_names: DataFrame,
             live: DataFrame, since: int | None) -> DataFrame:
    """The check snapshots' states as kernel input (`partition_changes` rows, not written):
    each snapshot PartitionRecord a full state at the snapshot's end offset - 1, and a
    removal for a known partition the snapshot does not hold. The kernel applies them only
    to partitions whose state is uncertain, which they re-anchor; Kafka's own snapshot is
    the one thing that can say what the unknown offsets did. Only snapshots inside the
    increment's log range (from `since` on): one Kafka wrote behind what the lake already
    folded is reconciled against, not applied over newer states. A snapshot is an image and
    holds no RemoveTopicRecord or ClearElrRecord, so nothing is fanned out of it
    (`fold.silver.partition_changes`' `known` None)."""
    check = done.filter((F.col("snapshot_role") == "check")
                        & (F.col("snapshot_end_offset") - 1 >= F.lit(since))).withColumn(
        "snapshot_role", F.lit("reset"))  # read as the full state it is
    return partition_changes(check, None, topic_names, live).unionByName(
        snapshot_removals(check, known), allowMissingColumns=True)


def _with_unknown(inc: DataFrame, before: DataFrame | None,
                  unknown: list[tuple[int, int, int | None]]) -> DataFrame:
    """`unknown_offsets` of each incident: the increment's unknown offsets inside its span,
    plus those the open incident it continues had counted (`before`, when it had any)."""
    end = F.coalesce(F.col("end_offset") + 1, F.lit(2**62))
    count = F.lit(0).cast("long")
    for lo, hi, _ts in unknown:
        count += F.greatest(F.lit(0), F.least(F.lit(hi), end)
                            - F.greatest(F.col("start_offset"), F.lit(lo)))
    if before is not None:
        inc = inc.join(before.select("cluster_id", "incident_id",
                                     F.col("unknown_offsets").alias("_before")),
                       ["cluster_id", "incident_id"], "left")
        count += F.coalesce("_before", F.lit(0))
    return inc.withColumn("unknown_offsets", count)


def _effective(done: DataFrame) -> DataFrame:
    """The committed records that change state: the log's, and a reset snapshot's."""
    return done.filter((F.col("source") == "log") | (F.col("snapshot_role") == "reset"))


def _topics_after(old: DataFrame, new: DataFrame) -> DataFrame:
    """The cluster's topics after the increment: `old` (before it) updated by `new` (its
    topic records). The name and creation stay the first seen; the deletion is the
    newest, deleted_offset too: a topic deleted by an earlier increment and re-created
    under the same name must not inherit the old topic's configs (`fold.context`)."""
    merged = (old.alias("o").join(new.alias("n"), ["cluster_id", "topic_id"], "full_outer")
              .select("cluster_id", "topic_id",
                      *[F.coalesce(f"o.{c}", f"n.{c}").alias(c) for c in
                        ["topic_name", "created_offset", "created_ts"]],
                      *[F.coalesce(f"n.{c}", f"o.{c}").alias(c) for c in
                        ["deleted_offset", "deleted_ts"]]))
    return conform(merged, "topics")


def _of_partitions(rows: pa.Table, changes: pa.Table) -> pa.Table:
    """The rows of `rows` (one cluster's) whose partition `changes` touches."""
    partition = ("topic_id", "partition_id")
    touched = set(_keys(changes, partition))
    return rows.filter(pa.array([k in touched for k in _keys(rows, partition)], pa.bool_()))


_Slice = TypeVar("_Slice", DataFrame, pa.Table)


def _replacement(old: _Slice, new: _Slice, key: Sequence[str],
                 gone: _Slice | None = None, only_old: bool = False) -> _Slice:
    """A slice's rows after an increment (`Lake.replace`): the `old` rows that no `new` row
    (nor a `gone` key) replaces, and every `new` row (`only_old`: only the old ones, of
    Arrow rows; `new` may then be their keys alone); a new row outside the slice (a state
    or span the increment closed) is added by the same commit. Rows of a small increment
    are Arrow tables of the table's schema (a few thousand keys: a set on the driver)."""
    if isinstance(old, pa.Table):
        drop = {*_keys(new, key), *(_keys(gone, key) if gone is not None else ())}
        keep = pa.array([k not in drop for k in _keys(old, key)], pa.bool_())
        return old.filter(keep) if only_old else pa.concat_tables([old.filter(keep), new])
    drop_df = new.select(*key) if gone is None else new.select(*key).unionByName(gone)
    return old.join(drop_df, list(key), "left_anti").unionByName(new)


def _keys(rows: pa.Table, key: Sequence[str]) -> list[tuple[Any, ...]]:
    """Each row's key, a tuple of its `key` columns."""
    return list(zip(*(rows[c].to_pylist() for c in key), strict=True))
