"""Plain sequential replay of a KRaft metadata log: kraftlake's reference.

No ingest or stream job uses it. It is the simulator's controller image (the simulator
decides from the state any reader of its log would rebuild, and writes its ground truth
with it) and the test oracle the Spark fold is compared with. It applies the rules of
`kraftlake.kraft` one record at a time, deliberately the slow, obvious way:

* PartitionRecord replaces a partition's state wholesale (creation, or a reset);
* PartitionChangeRecord merges (`PartitionRegistration.merge`);
* a partition record Kafka refuses (`kraft.partition.InvalidRecord`) takes no effect;
* RemoveTopicRecord ends every partition of the topic (configs go with it);
* ClearElrRecord clears ELR and LastKnownElr (+1 partition epoch) of every partition of the
  named topic (all topics for "") whose ELR or LastKnownElr is non-empty; which partitions
  either reaches is `kraft.fanout.reached` over the image;
* metadata transactions follow `kraft.records` (Kafka's `MetadataBatchLoader`): applied
  together at the End, dropped on Abort, not applied while still open at the end of the
  data; a nested Begin or an unmatched End / Abort is ignored;
* a snapshot is a full reset of everything.

Besides the final state, every record that changes a partition yields a `Step` (offset,
timestamp, topic, partition, kind of change, state before and after, and the cluster
context in force), which is what the Spark fold is compared with row by row and what
the tests' invariant checker (`tests/simulate/invariants.py`) checks. Replay never raises
on odd input: anything Kafka itself would refuse (unknown topic, wrong broker epoch, nested
transaction, ...) is recorded in `Replay.problems` and skipped, and the invariant checker
turns those into violations.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kraftlake.codec.logfiles import LogFile, iter_file, list_log_dir
from kraftlake.codec.records import Record
from kraftlake.kraft.brokers import broker_state, in_service
from kraftlake.kraft.configs import (
    CLUSTER_DEFAULT,
    KAFKA_DEFAULT_MIN_ISR,
    MIN_ISR,
    RESOURCE_BROKER,
    RESOURCE_TOPIC,
    UNCLEAN,
    in_force,
    resolve_min_isr,
    unclean_enabled,
)
from kraftlake.kraft.events import (  # step kinds
    CHANGED,
    CREATED,
    DELETED,
    ELR_CLEARED,
    RESET,
    SNAPSHOT,
    Event,
    step_events,
)
from kraftlake.kraft.fanout import UnknownTopic, reached
from kraftlake.kraft.partition import (
    LRS_NO_CHANGE,
    NO_LEADER_CHANGE,
    InvalidRecord,
    PartitionRegistration,
)
from kraftlake.kraft.records import (
    BEGIN_TRANSACTION,
    BROKER_REGISTRATION_CHANGE_RECORD,
    CLEAR_ELR_RECORD,
    CONFIG_RECORD,
    END_TRANSACTION,
    FEATURE_LEVEL_RECORD,
    FENCE,
    FENCE_BROKER_RECORD,
    FENCING_NO_CHANGE,
    IN_CONTROLLED_SHUTDOWN,
    PARTITION_CHANGE_RECORD,
    PARTITION_RECORD,
    REGISTER_BROKER_RECORD,
    REMOVE_TOPIC_RECORD,
    SHUTDOWN_NO_CHANGE,
    SNAPSHOT_HEADER,
    TOPIC_RECORD,
    TRANSACTION_MARKERS,
    UNFENCE,
    UNFENCE_BROKER_RECORD,
    UNREGISTER_BROKER_RECORD,
    ZK_MIGRATION,
    ZK_MIGRATION_STATE_RECORD,
    marker_refusal,
)
from kraftlake.kraft.snapshots import reset_snapshot
from kraftlake.kraft.versions import ELR_FEATURE, MV_FEATURE


@dataclass(slots=True)
class BrokerState:
    """A registered broker: its incarnation, and its registration state as
    `kraft.brokers.broker_state` keeps it (`state`), the one rule of what each broker record
    changes, which `kraft.brokers.in_service` reads."""

    broker_id: int
    incarnation_id: str | None
    state: dict[str, Any]

    @property
    def epoch(self) -> int:
        return self.state["epoch"]

    @property
    def fenced(self) -> bool:
        return self.state["fenced"]

    @property
    def in_controlled_shutdown(self) -> bool:
        return self.state["ics"]

    def apply(self, row: dict[str, Any]) -> None:
        """One of its records, as a `brokers` row (`record_type`, `fenced`,
        `in_controlled_shutdown`: None where the record leaves them unchanged)."""
        self.state = broker_state(row, self.state)


@dataclass(frozen=True, slots=True)
class Context:
    """Cluster facts in force when a step happened (needed to classify and check it)."""

    metadata_version: int | None  # feature level; None before any FeatureLevelRecord
    elr_feature: int | None  # eligible.leader.replicas.version; None if never named
    min_isr: int | None  # configured min.insync.replicas of the topic, uncapped; None =
    # a value Kafka cannot parse (kraft.configs)
    unclean_enabled: bool  # effective unclean.leader.election.enable of the topic
    zk_migration: bool  # a ZkMigrationStateRecord said MIGRATION (1)


@dataclass(frozen=True, slots=True)
class Step:
    """One partition state change: what the Spark fold must reproduce row by row."""

    offset: int
    timestamp: int
    topic_id: str
    topic_name: str | None
    partition_id: int
    kind: str  # created | reset | changed | elr_cleared | deleted | snapshot
    record: Record | None  # the record that made the change
    before: PartitionRegistration | None  # None when the partition did not exist
    after: PartitionRegistration  # for `deleted`: the last state, unchanged
    context: Context

    @property
    def deleted(self) -> bool:
        return self.kind == DELETED

    def events(self) -> list[Event]:
        """The step's events by `kraft.events.step_events`, the rules the kernel applies to
        the same step: what the reference reading of a log names, one step at a time."""
        data: dict[str, Any] = {}
        if self.kind == CHANGED and self.record is not None and self.record.data is not None:
            data = self.record.data
        return step_events(self.kind, self.before, self.after, min_isr=self.context.min_isr,
                           metadata_version=self.context.metadata_version,
                           leader_field=data.get("leader", NO_LEADER_CHANGE),
                           lrs_field=data.get("leader_recovery_state", LRS_NO_CHANGE))


@dataclass(frozen=True, slots=True)
class Problem:
    """Something Kafka's own replay would refuse; kept, not raised."""

    offset: int
    kind: str  # unknown_topic | unknown_partition | broker_epoch | transaction | ...
    message: str
    topic_id: str | None = None
    partition_id: int | None = None


@dataclass(slots=True)
class Replay:
    """Metadata image built one record at a time (topics, partitions, brokers, configs...)."""

    topics: dict[str, str] = field(default_factory=dict)  # topic id -> name
    topic_ids: dict[str, str] = field(default_factory=dict)  # name -> topic id
    partitions: dict[str, dict[int, PartitionRegistration]] = field(default_factory=dict)
    brokers: dict[int, BrokerState] = field(default_factory=dict)
    configs: dict[tuple[int, str], dict[str, str]] = field(default_factory=dict)
    features: dict[str, int] = field(default_factory=dict)
    zk_migration_state: int | None = None
    problems: list[Problem] = field(default_factory=list)
    default_min_isr: int = KAFKA_DEFAULT_MIN_ISR  # the controllers' static config
    last_offset: int = -1
    _txn: list[Record] | None = None
    _txn_begin: int = -1
    _overlap: bool = False
    _contexts: dict[str | None, Context] = field(default_factory=dict)

    # ------------------------------------------------------------ cluster facts

    @property
    def metadata_version(self) -> int | None:
        return self.features.get(MV_FEATURE)

    @property
    def in_transaction(self) -> bool:
        return self._txn is not None

    def cluster_config(self, name: str) -> str | None:
        return self.configs.get((RESOURCE_BROKER, CLUSTER_DEFAULT), {}).get(name)

    def own_config(self, topic_name: str | None, name: str) -> str | None:
        """The topic's own value only (None for a topic without the key)."""
        if topic_name is None:
            return None
        return self.configs.get((RESOURCE_TOPIC, topic_name), {}).get(name)

    def topic_config(self, topic_name: str | None, name: str) -> str | None:
        """The value in force for a topic: its own, else the cluster default."""
        return in_force(self.own_config(topic_name, name), self.cluster_config(name))

    def min_isr(self, topic_name: str | None) -> int | None:
        """Configured `min.insync.replicas` of a topic (`kraft.configs.resolve_min_isr`)."""
        return resolve_min_isr(self.own_config(topic_name, MIN_ISR),
                               self.cluster_config(MIN_ISR), self.default_min_isr)

    def unclean_enabled(self, topic_name: str | None) -> bool:
        return unclean_enabled(self.own_config(topic_name, UNCLEAN),
                               self.cluster_config(UNCLEAN))

    def context(self, topic_name: str | None) -> Context:
        ctx = self._contexts.get(topic_name)
        if ctx is None:  # cached until a config, feature or topic change
            ctx = self._contexts[topic_name] = Context(
                self.metadata_version, self.features.get(ELR_FEATURE),
                self.min_isr(topic_name), self.unclean_enabled(topic_name),
                self.zk_migration_state == ZK_MIGRATION)
        return ctx

    def is_active(self, broker_id: int) -> bool:
        """Registered and in service (`kraft.brokers.in_service`)."""
        b = self.brokers.get(broker_id)
        return b is not None and in_service(b.state)

    def partition(self, topic_id: str, partition_id: int) -> PartitionRegistration | None:
        return self.partitions.get(topic_id, {}).get(partition_id)

    def final_state(self) -> dict[str, dict[str, Any]]:
        """`final_state.json`: every live partition keyed `topic_name:partition_id`."""
        out: dict[str, dict[str, Any]] = {}
        for tid in sorted(self.partitions, key=lambda t: self.topics.get(t, t)):
            name = self.topics.get(tid, tid)
            for pid in sorted(self.partitions[tid]):
                d = self.partitions[tid][pid].as_dict()
                d["topic_id"] = tid
                out[f"{name}:{pid}"] = d
        return out

    # ------------------------------------------------------------ applying records

    def apply(self, rec: Record) -> list[Step]:
        """Apply one log record (transactions honoured); the partition steps it caused."""
        if rec.offset <= self.last_offset:
            if not self._overlap:  # one problem per run of out-of-order records
                self._problem(rec.offset, "offset", f"offset {rec.offset} not after "
                              f"{self.last_offset}; records ignored until the log moves on")
            self._overlap = True
            return []
        self._overlap = False
        self.last_offset = rec.offset
        if rec.control or rec.data is None:
            return []
        t = rec.type
        if t in TRANSACTION_MARKERS:
            return self._marker(rec)
        if self._txn is not None:
            self._txn.append(rec)
            return []
        return self._apply_data(rec)

    def _marker(self, rec: Record) -> list[Step]:
        """`kraft.records.marker_refusal`: a refused marker changes nothing."""
        refusal = marker_refusal(rec.type, self._txn is not None)
        if refusal is not None:
            where = f" (open since {self._txn_begin})" if self._txn is not None else ""
            self._problem(rec.offset, "transaction", refusal + where)
            return []
        if rec.type == BEGIN_TRANSACTION:
            self._txn, self._txn_begin = [], rec.offset
            return []
        pending, self._txn = self._txn or [], None
        if rec.type != END_TRANSACTION:
            return []  # an Abort drops what the transaction held
        steps: list[Step] = []
        for r in pending:
            steps.extend(self._apply_data(r))
        return steps

    def _problem(self, offset: int, kind: str, message: str, topic_id: str | None = None,
                 partition_id: int | None = None) -> None:
        self.problems.append(Problem(offset, kind, message, topic_id, partition_id))

    def _apply_data(self, rec: Record, *, snapshot: bool = False) -> list[Step]:
        handler = _HANDLERS.get(rec.type)
        if handler is None:
            return []
        return handler(self, rec, snapshot)

    def _partition_record(self, rec: Record, snapshot: bool) -> list[Step]:
        d = rec.data
        assert d is not None
        tid, pid = d["topic_id"], d["partition_id"]
        if tid not in self.topics:
            self._problem(rec.offset, "unknown_topic",
                          f"PartitionRecord for unknown topic id {tid}", tid, pid)
            return []
        parts = self.partitions.setdefault(tid, {})
        before = parts.get(pid)
        try:
            after = PartitionRegistration.from_record(d)
        except InvalidRecord as e:
            self._problem(rec.offset, "invalid_record", str(e), tid, pid)
            return []
        if d.get("directories") and len(d["directories"]) != len(after.replicas):
            self._problem(rec.offset, "directories",
                          f"{len(d['directories'])} directories for "
                          f"{len(after.replicas)} replicas", tid, pid)
        parts[pid] = after
        if snapshot:
            return []  # snapshot steps are emitted once the whole snapshot is loaded
        name = self.topics[tid]
        return [Step(rec.offset, rec.timestamp, tid, name, pid,
                     CREATED if before is None else RESET, rec, before, after,
                     self.context(name))]

    def _partition_change(self, rec: Record, snapshot: bool) -> list[Step]:
        d = rec.data
        assert d is not None
        tid, pid = d["topic_id"], d["partition_id"]
        before = self.partitions.get(tid, {}).get(pid)
        if before is None:
            kind = "unknown_topic" if tid not in self.topics else "unknown_partition"
            self._problem(rec.offset, kind,
                          f"PartitionChangeRecord for unknown partition {tid}:{pid}", tid, pid)
            return []
        try:
            after, problem = before.merge(d)
        except InvalidRecord as e:
            self._problem(rec.offset, "invalid_record", str(e), tid, pid)
            return []
        if problem:
            self._problem(rec.offset, "merge", problem, tid, pid)
        self.partitions[tid][pid] = after
        name = self.topics.get(tid)
        return [Step(rec.offset, rec.timestamp, tid, name, pid, CHANGED, rec, before, after,
                     self.context(name))]

    def _topic(self, rec: Record, snapshot: bool) -> list[Step]:
        d = rec.data
        assert d is not None
        name, tid = d["name"], d["topic_id"]
        old = self.topic_ids.get(name)
        if old is not None and old != tid:
            self._problem(rec.offset, "topic", f"TopicRecord {name} ({tid}) while the name "
                          f"belongs to live topic {old}", tid)
        self.topics[tid] = name
        self.topic_ids[name] = tid
        self.partitions.setdefault(tid, {})
        return []

    def _remove_topic(self, rec: Record, snapshot: bool) -> list[Step]:
        d = rec.data
        assert d is not None
        tid = d["topic_id"]
        try:
            gone = reached(REMOVE_TOPIC_RECORD, tid, None, self.partitions, self.topic_ids)
        except UnknownTopic as e:
            self._problem(rec.offset, "unknown_topic", str(e), tid)
            return []
        name = self.topics.pop(tid)
        if self.topic_ids.get(name) == tid:
            del self.topic_ids[name]
        ctx = self.context(name)
        self._contexts.clear()
        self.configs.pop((RESOURCE_TOPIC, name), None)
        parts = self.partitions.pop(tid)
        return [Step(rec.offset, rec.timestamp, tid, name, pid, DELETED, rec, parts[pid],
                     parts[pid], ctx) for _tid, pid in gone]

    def _clear_elr(self, rec: Record, snapshot: bool) -> list[Step]:
        d = rec.data
        assert d is not None
        try:
            cleared = reached(CLEAR_ELR_RECORD, None, d.get("topic_name"), self.partitions,
                              self.topic_ids)
        except UnknownTopic as e:
            self._problem(rec.offset, "unknown_topic", str(e))
            return []
        steps = []
        for tid, pid in cleared:
            st = self.partitions[tid][pid]
            if st.elr_clear_changes:
                tname = self.topics.get(tid)
                self.partitions[tid][pid] = new = st.clear_elr()
                steps.append(Step(rec.offset, rec.timestamp, tid, tname, pid, ELR_CLEARED,
                                  rec, st, new, self.context(tname)))
        return steps

    def _config(self, rec: Record, snapshot: bool) -> list[Step]:
        self._contexts.clear()
        d = rec.data
        assert d is not None
        key = (d["resource_type"], d["resource_name"])
        if d.get("value") is None:
            cfg = self.configs.get(key)
            if cfg is not None:
                cfg.pop(d["name"], None)
                if not cfg:
                    del self.configs[key]
        else:
            self.configs.setdefault(key, {})[d["name"]] = d["value"]
        return []

    def _feature(self, rec: Record, snapshot: bool) -> list[Step]:
        self._contexts.clear()
        d = rec.data
        assert d is not None
        if d["feature_level"] == 0 and d["name"] != MV_FEATURE:
            self.features.pop(d["name"], None)
        else:
            self.features[d["name"]] = d["feature_level"]
        return []

    def _zk_migration(self, rec: Record, snapshot: bool) -> list[Step]:
        self._contexts.clear()
        assert rec.data is not None
        self.zk_migration_state = rec.data.get("zk_migration_state")
        return []

    def _register_broker(self, rec: Record, snapshot: bool) -> list[Step]:
        d = rec.data
        assert d is not None
        bid, epoch = d["broker_id"], d["broker_epoch"]
        old = self.brokers.get(bid)
        if not snapshot:
            if old is not None and old.incarnation_id != d.get("incarnation_id") \
                    and epoch <= old.epoch:
                self._problem(rec.offset, "broker_epoch", f"broker {bid} new incarnation with "
                              f"epoch {epoch} not above {old.epoch}")
            if epoch > rec.offset:
                self._problem(rec.offset, "broker_epoch", f"broker {bid} epoch {epoch} is "
                              f"beyond its RegisterBrokerRecord's offset {rec.offset}")
        self.brokers[bid] = BrokerState(bid, d.get("incarnation_id"), broker_state({
            "record_type": rec.type, "fenced": d.get("fenced"), "broker_epoch": epoch,
            "in_controlled_shutdown": d.get("in_controlled_shutdown")}, {}))
        return []

    def _broker_of(self, rec: Record, bid: int, epoch: int) -> BrokerState | None:
        b = self.brokers.get(bid)
        if b is None:
            self._problem(rec.offset, "broker_epoch", f"{rec.type} for unregistered broker {bid}")
            return None
        if b.epoch != epoch:
            self._problem(rec.offset, "broker_epoch", f"{rec.type} for broker {bid} epoch "
                          f"{epoch}, registered epoch is {b.epoch}")
            return None
        return b

    def _unregister_broker(self, rec: Record, snapshot: bool) -> list[Step]:
        d = rec.data
        assert d is not None
        if self._broker_of(rec, d["broker_id"], d["broker_epoch"]) is not None:
            del self.brokers[d["broker_id"]]
        return []

    def _broker_change(self, rec: Record, snapshot: bool) -> list[Step]:
        d = rec.data
        assert d is not None
        b = self._broker_of(rec, d["broker_id"], d["broker_epoch"])
        if b is None:
            return []
        fenced = d.get("fenced", FENCING_NO_CHANGE)
        if fenced not in (FENCE, UNFENCE, FENCING_NO_CHANGE):
            self._problem(rec.offset, "broker", f"BrokerRegistrationChange Fenced={fenced}")
        ics = d.get("in_controlled_shutdown", SHUTDOWN_NO_CHANGE)
        if ics not in (IN_CONTROLLED_SHUTDOWN, SHUTDOWN_NO_CHANGE):
            self._problem(rec.offset, "broker",
                          f"BrokerRegistrationChange InControlledShutdown={ics}")
        b.apply({"record_type": rec.type,
                 "fenced": True if fenced == FENCE else False if fenced == UNFENCE else None,
                 "in_controlled_shutdown": ics == IN_CONTROLLED_SHUTDOWN})
        return []

    def _fence(self, rec: Record, snapshot: bool) -> list[Step]:
        d = rec.data
        assert d is not None
        b = self._broker_of(rec, d["id"], d["epoch"])
        if b is not None:
            b.apply({"record_type": rec.type, "fenced": rec.type == FENCE_BROKER_RECORD})
        return []

    # ------------------------------------------------------------ snapshots

    def load_snapshot(self, records: Iterable[Record], end_offset: int,
                      timestamp: int | None = None) -> list[Step]:
        """Full reset from a snapshot's records; one `snapshot` step per partition in it
        (offset = endOffset - 1, the last log offset the snapshot contains) and a `deleted`
        step for every partition the snapshot no longer has."""
        old_parts = {(t, p): s for t, ps in self.partitions.items() for p, s in ps.items()}
        old_names = dict(self.topics)
        self.topics, self.topic_ids, self.partitions = {}, {}, {}
        self.brokers, self.configs, self.features = {}, {}, {}
        self.zk_migration_state = None
        self._txn = None
        self._contexts.clear()
        ts = timestamp
        for rec in records:
            if rec.control:
                if rec.type == SNAPSHOT_HEADER and rec.data and ts is None:
                    ts = rec.data.get("last_contained_log_timestamp")
                continue
            if rec.data is not None:
                self._apply_data(rec, snapshot=True)
        off = end_offset - 1
        ts = ts if ts is not None else -1
        self.last_offset = max(self.last_offset, off)
        steps = []
        for (tid, pid), st in sorted(old_parts.items()):
            if self.partition(tid, pid) is None:
                name = old_names.get(tid)
                steps.append(Step(off, ts, tid, name, pid, DELETED, None, st, st,
                                  self.context(name)))
        for tid in sorted(self.partitions):
            name = self.topics.get(tid)
            ctx = self.context(name)
            for pid, st in sorted(self.partitions[tid].items()):
                steps.append(Step(off, ts, tid, name, pid, SNAPSHOT, None,
                                  old_parts.get((tid, pid)), st, ctx))
        return steps


_HANDLERS = {
    PARTITION_RECORD: Replay._partition_record,
    PARTITION_CHANGE_RECORD: Replay._partition_change,
    TOPIC_RECORD: Replay._topic,
    REMOVE_TOPIC_RECORD: Replay._remove_topic,
    CLEAR_ELR_RECORD: Replay._clear_elr,
    CONFIG_RECORD: Replay._config,
    FEATURE_LEVEL_RECORD: Replay._feature,
    ZK_MIGRATION_STATE_RECORD: Replay._zk_migration,
    REGISTER_BROKER_RECORD: Replay._register_broker,
    UNREGISTER_BROKER_RECORD: Replay._unregister_broker,
    BROKER_REGISTRATION_CHANGE_RECORD: Replay._broker_change,
    FENCE_BROKER_RECORD: Replay._fence,
    UNFENCE_BROKER_RECORD: Replay._fence,
}


# ---------------------------------------------------------------- log directories


@dataclass(slots=True)
class LogDirPlan:
    """Which files a replay of a metadata-log directory reads, and why."""

    segments: list[LogFile]
    snapshots: list[LogFile]
    start_snapshot: LogFile | None  # loaded first (full reset), or None: log from its start
    log_start: int  # base offset of the first segment (0 if none)


def plan_log_dir(directory: Path) -> LogDirPlan:
    """Choose the starting point that keeps the most history, as the pipeline's plans do
    (`kraft.snapshots.reset_snapshot`).

    A log that still starts at offset 0 is replayed from its first record and snapshots are
    only compared with it. A log whose head was deleted by retention starts from the
    *oldest* snapshot at or above its start, so as many changes as possible are replayed
    record by record; with none, from the log start on an empty image (a snapshot below the
    log start is no state of this log: Kafka deletes it).
    """
    segments, snapshots = list_log_dir(Path(directory))
    snapshots = [s for s in snapshots if s.offset > 0]  # 0-0 bootstrap id has no data
    log_start = segments[0].offset if segments else None
    end = reset_snapshot((s.offset for s in snapshots), log_start)
    start = next((s for s in snapshots if s.offset == end), None)
    return LogDirPlan(segments, snapshots, start, log_start or 0)


def read_records(lf: LogFile) -> Iterator[Record]:
    for _batch, recs in iter_file(lf):
        yield from recs


def iter_log_records(plan: LogDirPlan, after: int = -1) -> Iterator[Record]:
    """Records of the plan's segments with offset > `after`, in file order."""
    for seg in plan.segments:
        for _batch, recs in iter_file(seg):
            for r in recs:
                if r.offset > after:
                    yield r


def _replay_steps(records: Iterable[Record], replay: Replay | None = None) -> Iterator[Step]:
    """Apply records in order, yielding every partition step."""
    rp = replay if replay is not None else Replay()
    for rec in records:
        yield from rp.apply(rec)


def _iter_dir_steps(directory: Path, replay: Replay | None = None) -> Iterator[Step]:
    """Every partition step of a metadata-log directory (snapshot start per `plan_log_dir`)."""
    rp = replay if replay is not None else Replay()
    plan = plan_log_dir(Path(directory))
    after = -1
    if plan.start_snapshot is not None:
        yield from rp.load_snapshot(read_records(plan.start_snapshot), plan.start_snapshot.offset)
        after = plan.start_snapshot.offset - 1
    yield from _replay_steps(iter_log_records(plan, after), rp)


def replay_dir(directory: Path) -> tuple[Replay, list[Step]]:
    """Replay a whole directory: (final image, every step)."""
    rp = Replay()
    steps = list(_iter_dir_steps(Path(directory), rp))
    return rp, steps

