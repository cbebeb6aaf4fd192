"""Plain sequential replay of a KRaft metadata log: the project's reference fold.

This is deliberately the slow, obvious implementation of Kafka's replay rules
(kraft-semantics.md 1.1-1.10) over decoded `Record`s, one record at a time, so that the
distributed Spark fold and the simulator's ground truth can both be checked against it:

* PartitionRecord replaces a partition's state wholesale (creation, or a reset);
* PartitionChangeRecord merges: absent fields / sentinels mean "unchanged", the leader epoch
  goes up by one iff Leader != -2, the partition epoch by one for every record;
* RemoveTopicRecord ends every partition of the topic (configs go with it);
* ClearElrRecord clears ELR and LastKnownElr (+1 partition epoch) of every partition of the
  named topic (all topics for "") whose ELR or LastKnownElr is non-empty;
* records between BeginTransaction and End are applied together at the End, dropped on
  Abort, and not applied at all while the transaction is still open at the end of the data;
* a snapshot is a full reset of everything.

Besides the final state, every record that changes a partition yields a `Step` (offset,
timestamp, topic, partition, kind of change, state before and after, and the cluster
context in force), which is what the Spark fold is compared with row by row and what
`kraftlake.fold.invariants` checks. Replay never raises on odd input: anything Kafka itself
would refuse (unknown topic, wrong broker epoch, nested transaction, ...) is recorded in
`Replay.problems` and skipped, and the invariant checker turns those into violations.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kraftlake.codec.logfiles import LogFile, iter_file, list_log_dir
from kraftlake.codec.records import Record

NO_LEADER = -1
NO_LEADER_CHANGE = -2
RECOVERED = 0
RECOVERING = 1
LRS_NO_CHANGE = -1

RESOURCE_TOPIC = 2
RESOURCE_BROKER = 4

MIGRATING_DIR = "AAAAAAAAAAAAAAAAAAAAAA"  # Uuid(0, 0)
UNASSIGNED_DIR = "AAAAAAAAAAAAAAAAAAAAAQ"  # Uuid(0, 1)
LOST_DIR = "AAAAAAAAAAAAAAAAAAAAAg"  # Uuid(0, 2)

MIN_ISR = "min.insync.replicas"
UNCLEAN = "unclean.leader.election.enable"
MV_FEATURE = "metadata.version"
ELR_FEATURE = "eligible.leader.replicas.version"

# Step kinds
CREATED = "created"  # PartitionRecord for a partition that did not exist
RESET = "reset"  # PartitionRecord for an existing partition (kraft-semantics 1.1)
CHANGED = "changed"  # PartitionChangeRecord
ELR_CLEARED = "elr_cleared"  # ClearElrRecord touched this partition
DELETED = "deleted"  # RemoveTopicRecord
SNAPSHOT = "snapshot"  # loaded from a snapshot (full reset)


@dataclass(frozen=True, slots=True)
class PartitionState:
    """The state Kafka keeps for one partition (`PartitionRegistration`), immutable."""

    replicas: tuple[int, ...]
    isr: tuple[int, ...]
    removing_replicas: tuple[int, ...] = ()
    adding_replicas: tuple[int, ...] = ()
    leader: int = NO_LEADER
    leader_epoch: int = 0
    partition_epoch: int = 0
    leader_recovery_state: int = RECOVERED
    eligible_leader_replicas: tuple[int, ...] = ()
    last_known_elr: tuple[int, ...] = ()
    directories: tuple[str, ...] = ()

    def as_dict(self, *, directories: bool = False) -> dict[str, Any]:
        """The `final_state.json` shape: lists are [] when empty, never null."""
        out: dict[str, Any] = {
            "leader": self.leader,
            "leader_epoch": self.leader_epoch,
            "partition_epoch": self.partition_epoch,
            "isr": list(self.isr),
            "eligible_leader_replicas": list(self.eligible_leader_replicas),
            "last_known_elr": list(self.last_known_elr),
            "replicas": list(self.replicas),
            "adding_replicas": list(self.adding_replicas),
            "removing_replicas": list(self.removing_replicas),
            "leader_recovery_state": self.leader_recovery_state,
        }
        if directories:
            out["directories"] = list(self.directories)
        return out

    @property
    def reassigning(self) -> bool:
        return bool(self.adding_replicas or self.removing_replicas)


def _tuple(v: Any) -> tuple[int, ...]:
    return tuple(v) if v else ()


def default_to_migrating(dirs: tuple[str, ...], n: int) -> tuple[str, ...]:
    """`PartitionRegistration.defaultToMigrating`: empty or all-MIGRATING -> MIGRATING x n."""
    if not dirs or all(d == MIGRATING_DIR for d in dirs):
        return (MIGRATING_DIR,) * n
    return dirs


def state_from_partition_record(data: dict[str, Any]) -> PartitionState:
    replicas = _tuple(data.get("replicas"))
    return PartitionState(
        replicas=replicas,
        isr=_tuple(data.get("isr")),
        removing_replicas=_tuple(data.get("removing_replicas")),
        adding_replicas=_tuple(data.get("adding_replicas")),
        leader=data.get("leader", NO_LEADER),
        leader_epoch=data.get("leader_epoch", 0),
        partition_epoch=data.get("partition_epoch", 0),
        leader_recovery_state=data.get("leader_recovery_state", RECOVERED) or RECOVERED,
        eligible_leader_replicas=_tuple(data.get("eligible_leader_replicas")),
        last_known_elr=_tuple(data.get("last_known_elr")),
        directories=default_to_migrating(tuple(data.get("directories") or ()), len(replicas)),
    )


def merge_change(prev: PartitionState, data: dict[str, Any]) -> tuple[PartitionState, str | None]:
    """`PartitionRegistration.merge`: apply one PartitionChangeRecord; (new state, problem)."""
    problem = None
    isr = data.get("isr")
    replicas = data.get("replicas")
    removing = data.get("removing_replicas")
    adding = data.get("adding_replicas")
    elr = data.get("eligible_leader_replicas")
    lke = data.get("last_known_elr")
    dirs = data.get("directories")
    leader = data.get("leader", NO_LEADER_CHANGE)
    lrs = data.get("leader_recovery_state", LRS_NO_CHANGE)

    new_replicas = tuple(replicas) if replicas is not None else prev.replicas
    if dirs is not None:
        new_dirs = default_to_migrating(tuple(dirs), len(new_replicas))
    elif len(new_replicas) != len(prev.directories):
        if all(d == MIGRATING_DIR for d in prev.directories):
            new_dirs = (MIGRATING_DIR,) * len(new_replicas)
        else:
            problem = (f"replicas changed length ({len(prev.replicas)} -> {len(new_replicas)}) "
                       f"without directories while directories are assigned")
            new_dirs = prev.directories
    else:
        new_dirs = prev.directories
    if lrs in (RECOVERED, RECOVERING):
        new_lrs = lrs
    else:
        new_lrs = prev.leader_recovery_state
        if lrs != LRS_NO_CHANGE:
            problem = f"LeaderRecoveryState field {lrs} is not -1, 0 or 1"
    if leader == NO_LEADER_CHANGE:
        new_leader, new_le = prev.leader, prev.leader_epoch
    else:
        new_leader, new_le = leader, prev.leader_epoch + 1
    state = PartitionState(
        replicas=new_replicas,
        isr=tuple(isr) if isr is not None else prev.isr,
        removing_replicas=tuple(removing) if removing is not None else prev.removing_replicas,
        adding_replicas=tuple(adding) if adding is not None else prev.adding_replicas,
        leader=new_leader,
        leader_epoch=new_le,
        partition_epoch=prev.partition_epoch + 1,
        leader_recovery_state=new_lrs,
        eligible_leader_replicas=tuple(elr) if elr is not None else prev.eligible_leader_replicas,
        last_known_elr=tuple(lke) if lke is not None else prev.last_known_elr,
        directories=new_dirs,
    )
    return state, problem


def clear_elr(prev: PartitionState) -> PartitionState:
    """The synthetic change a ClearElrRecord merges into an affected partition."""
    return PartitionState(
        prev.replicas, prev.isr, prev.removing_replicas, prev.adding_replicas, prev.leader,
        prev.leader_epoch, prev.partition_epoch + 1, prev.leader_recovery_state, (), (),
        prev.directories)


@dataclass(slots=True)
class BrokerState:
    broker_id: int
    epoch: int
    incarnation_id: str | None
    fenced: bool
    in_controlled_shutdown: bool
    registered_at: int  # offset of the RegisterBrokerRecord (-1 from a snapshot)


@dataclass(frozen=True, slots=True)
class Context:
    """Cluster facts in force when a step happened (needed to classify and check it)."""

    metadata_version: int | None  # feature level; None before any FeatureLevelRecord
    elr_feature: int | None  # eligible.leader.replicas.version; None if never named
    min_isr: int  # effective min.insync.replicas of the topic (not capped)
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
    before: PartitionState | None  # None when the partition did not exist
    after: PartitionState  # for `deleted`: the last state, unchanged
    context: Context

    @property
    def deleted(self) -> bool:
        return self.kind == DELETED

    def as_row(self) -> dict[str, Any]:
        """Flat row, the column set a Spark fold produces (snake_case, lists never null)."""
        row: dict[str, Any] = {
            "offset": self.offset, "timestamp": self.timestamp, "topic_id": self.topic_id,
            "topic_name": self.topic_name, "partition_id": self.partition_id,
            "change": self.kind, "deleted": self.deleted,
        }
        row.update(self.after.as_dict(directories=True))
        return row


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
    partitions: dict[str, dict[int, PartitionState]] = field(default_factory=dict)
    brokers: dict[int, BrokerState] = field(default_factory=dict)
    configs: dict[tuple[int, str], dict[str, str]] = field(default_factory=dict)
    features: dict[str, int] = field(default_factory=dict)
    zk_migration_state: int | None = None
    problems: list[Problem] = field(default_factory=list)
    last_offset: int = -1
    last_timestamp: int = -1
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
        return self.configs.get((RESOURCE_BROKER, ""), {}).get(name)

    def topic_config(self, topic_name: str | None, name: str) -> str | None:
        if topic_name is not None:
            v = self.configs.get((RESOURCE_TOPIC, topic_name), {}).get(name)
            if v is not None:
                return v
        return self.cluster_config(name)

    def min_isr(self, topic_name: str | None) -> int:
        """Effective `min.insync.replicas`: topic, else cluster default, else 1 (uncapped)."""
        v = self.topic_config(topic_name, MIN_ISR)
        try:
            return int(v) if v is not None else 1
        except ValueError:
            return 1

    def unclean_enabled(self, topic_name: str | None) -> bool:
        v = self.topic_config(topic_name, UNCLEAN)
        return v is not None and v.strip().lower() == "true"

    def context(self, topic_name: str | None) -> Context:
        ctx = self._contexts.get(topic_name)
        if ctx is None:  # cached until a config, feature or topic change
            ctx = self._contexts[topic_name] = Context(
                self.metadata_version, self.features.get(ELR_FEATURE),
                self.min_isr(topic_name), self.unclean_enabled(topic_name),
                self.zk_migration_state == 1)
        return ctx

    def is_active(self, broker_id: int) -> bool:
        b = self.brokers.get(broker_id)
        return b is not None and not b.fenced and not b.in_controlled_shutdown

    def partition(self, topic_id: str, partition_id: int) -> PartitionState | None:
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
        self.last_timestamp = rec.timestamp
        if rec.control or rec.data is None:
            return []
        t = rec.type
        if t == "BeginTransactionRecord":
            if self._txn is not None:
                self._problem(rec.offset, "transaction",
                              f"BeginTransaction inside the transaction begun at "
                              f"{self._txn_begin}; the open one is kept")
                return []
            self._txn, self._txn_begin = [], rec.offset
            return []
        if t == "EndTransactionRecord":
            if self._txn is None:
                self._problem(rec.offset, "transaction", "EndTransaction without Begin")
                return []
            pending, self._txn = self._txn, None
            steps: list[Step] = []
            for r in pending:
                steps.extend(self._apply_data(r))
            return steps
        if t == "AbortTransactionRecord":
            if self._txn is None:
                self._problem(rec.offset, "transaction", "AbortTransaction without Begin")
            self._txn = None
            return []
        if self._txn is not None:
            self._txn.append(rec)
            return []
        return self._apply_data(rec)

    def pending_transaction(self) -> list[Record]:
        """Records of a transaction still open (not committed: not applied)."""
        return list(self._txn or ())

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
        after = state_from_partition_record(d)
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
        after, problem = merge_change(before, d)
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
        name = self.topics.pop(tid, None)
        if name is None:
            self._problem(rec.offset, "unknown_topic", f"RemoveTopicRecord for unknown {tid}",
                          tid)
            return []
        if self.topic_ids.get(name) == tid:
            del self.topic_ids[name]
        ctx = self.context(name)
        self._contexts.clear()
        self.configs.pop((RESOURCE_TOPIC, name), None)
        parts = self.partitions.pop(tid, {})
        return [Step(rec.offset, rec.timestamp, tid, name, pid, DELETED, rec, st, st, ctx)
                for pid, st in sorted(parts.items())]

    def _clear_elr(self, rec: Record, snapshot: bool) -> list[Step]:
        d = rec.data
        assert d is not None
        name = d.get("topic_name") or ""
        if name:
            tid = self.topic_ids.get(name)
            if tid is None:
                self._problem(rec.offset, "unknown_topic", f"ClearElrRecord for unknown {name}")
                return []
            tids = [tid]
        else:
            tids = list(self.partitions)
        steps = []
        for tid in tids:
            tname = self.topics.get(tid)
            ctx = self.context(tname)
            parts = self.partitions.get(tid, {})
            for pid in sorted(parts):
                st = parts[pid]
                if st.eligible_leader_replicas or st.last_known_elr:
                    parts[pid] = new = clear_elr(st)
                    steps.append(Step(rec.offset, rec.timestamp, tid, tname, pid, ELR_CLEARED,
                                      rec, st, new, ctx))
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
        self.brokers[bid] = BrokerState(bid, epoch, d.get("incarnation_id"),
                                        bool(d.get("fenced", True)),
                                        bool(d.get("in_controlled_shutdown", False)),
                                        -1 if snapshot else rec.offset)
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
        fenced = d.get("fenced", 0)
        if fenced == 1:
            b.fenced = True
        elif fenced == -1:
            b.fenced = False
        elif fenced != 0:
            self._problem(rec.offset, "broker", f"BrokerRegistrationChange Fenced={fenced}")
        ics = d.get("in_controlled_shutdown", 0)
        if ics == 1:
            b.in_controlled_shutdown = True
        elif ics != 0:
            self._problem(rec.offset, "broker",
                          f"BrokerRegistrationChange InControlledShutdown={ics}")
        return []

    def _fence(self, rec: Record, snapshot: bool) -> list[Step]:
        d = rec.data
        assert d is not None
        b = self._broker_of(rec, d["id"], d["epoch"])
        if b is not None:
            b.fenced = rec.type == "FenceBrokerRecord"
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
                if rec.type == "SnapshotHeaderRecord" and rec.data and ts is None:
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
    "PartitionRecord": Replay._partition_record,
    "PartitionChangeRecord": Replay._partition_change,
    "TopicRecord": Replay._topic,
    "RemoveTopicRecord": Replay._remove_topic,
    "ClearElrRecord": Replay._clear_elr,
    "ConfigRecord": Replay._config,
    "FeatureLevelRecord": Replay._feature,
    "ZkMigrationStateRecord": Replay._zk_migration,
    "RegisterBrokerRecord": Replay._register_broker,
    "UnregisterBrokerRecord": Replay._unregister_broker,
    "BrokerRegistrationChangeRecord": Replay._broker_change,
    "FenceBrokerRecord": Replay._fence,
    "UnfenceBrokerRecord": Replay._fence,
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
    """Choose the starting point that keeps the most history.

    A log that still starts at offset 0 is replayed from its first record and snapshots are
    only compared with it. A log whose head was deleted by retention starts from the
    *earliest* snapshot that bridges the gap (log start <= endOffset <= next log offset),
    so as many changes as possible are replayed record by record; failing that, the newest
    snapshot is used.
    """
    segments, snapshots = list_log_dir(Path(directory))
    snapshots = [s for s in snapshots if s.offset > 0]  # 0-0 bootstrap id has no data
    log_start = segments[0].offset if segments else 0
    if segments and log_start == 0:
        return LogDirPlan(segments, snapshots, None, 0)
    bridging = [s for s in snapshots if s.offset >= log_start]
    start = bridging[0] if bridging else (snapshots[-1] if snapshots else None)
    return LogDirPlan(segments, snapshots, start, log_start)


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


def replay_steps(records: Iterable[Record], replay: Replay | None = None) -> Iterator[Step]:
    """Apply records in order, yielding every partition step."""
    rp = replay if replay is not None else Replay()
    for rec in records:
        yield from rp.apply(rec)


def iter_dir_steps(directory: Path, replay: Replay | None = None) -> Iterator[Step]:
    """Every partition step of a metadata-log directory (snapshot start per `plan_log_dir`)."""
    rp = replay if replay is not None else Replay()
    plan = plan_log_dir(Path(directory))
    after = -1
    if plan.start_snapshot is not None:
        yield from rp.load_snapshot(read_records(plan.start_snapshot), plan.start_snapshot.offset)
        after = plan.start_snapshot.offset - 1
    yield from replay_steps(iter_log_records(plan, after), rp)


def replay_dir(directory: Path) -> tuple[Replay, list[Step]]:
    """Replay a whole directory: (final image, every step)."""
    rp = Replay()
    steps = list(iter_dir_steps(Path(directory), rp))
    return rp, steps


def final_state_of_dir(directory: Path) -> dict[str, dict[str, Any]]:
    rp = Replay()
    for _ in iter_dir_steps(Path(directory), rp):
        pass
    return rp.final_state()
