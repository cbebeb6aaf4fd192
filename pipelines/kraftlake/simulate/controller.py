"""A model of the active KRaft controller: which records each cluster event produces.

The controller's image is a `kraftlake.reference.replay.Replay` fed with exactly the records
the model writes, so the model decides from the same state any reader of the log would
rebuild. Each event method (broker registration, fencing, controlled shutdown,
AlterPartition, ElectLeaders, reassignment, topic creation and deletion, config changes)
follows `ReplicationControlManager` / `ClusterControlManager` as summarised in
docs/semantics.md section 3, builds its records with `kraft.builder.build_partition_change`,
hands them to a `RecordSink` (the log writer, which assigns offsets and the clock) and
replays what was written. Partition steps are passed to `on_steps` (labels).
"""

from __future__ import annotations

import random
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any, Protocol

from kraftlake.codec.records import Record
from kraftlake.codec.wire import uuid_to_str
from kraftlake.kraft.builder import (
    Decision,
    Election,
    build_partition_change,
    initial_partition,
    reassignment_target,
    revert_reassignment,
)
from kraftlake.kraft.configs import (
    MIN_ISR,
    RESOURCE_BROKER,
    RESOURCE_TOPIC,
    UNCLEAN,
    controller_min_isr,
    resolve_min_isr,
)
from kraftlake.kraft.partition import (
    NO_LEADER,
    RECOVERED,
    RECOVERING,
    UNASSIGNED_DIR,
    PartitionRegistration,
)
from kraftlake.kraft.records import (
    ABORT_TRANSACTION,
    BEGIN_TRANSACTION,
    BROKER_REGISTRATION_CHANGE_RECORD,
    CLEAR_ELR_RECORD,
    CONFIG_RECORD,
    END_TRANSACTION,
    FEATURE_LEVEL_RECORD,
    FENCE,
    FENCE_BROKER_RECORD,
    IN_CONTROLLED_SHUTDOWN,
    PARTITION_CHANGE_RECORD,
    PARTITION_RECORD,
    REGISTER_BROKER_RECORD,
    REGISTER_CONTROLLER_RECORD,
    REMOVE_TOPIC_RECORD,
    TOPIC_RECORD,
    UNFENCE,
    UNFENCE_BROKER_RECORD,
)
from kraftlake.kraft.versions import (
    ELR_FEATURE,
    MV_3_0_IV1,
    MV_3_3_IV0,
    MV_3_3_IV2,
    MV_3_3_IV3,
    MV_3_4_IV0,
    MV_3_6_IV1,
    MV_3_7_IV0,
    MV_3_7_IV2,
    MV_4_0_IV1,
    MV_4_1_IV0,
    MV_4_3_IV0,
    MV_FEATURE,
    MV_LATEST,
    partition_record_version,
)
from kraftlake.reference.replay import Replay, Step

from .labels import CREATED_LABEL, DELETED_LABEL, decided_change

Rec = tuple[str, int, dict[str, Any]]  # (record type, version, data)
TP = tuple[str, int]  # (topic id, partition id)


class RecordSink(Protocol):
    """Where the controller's records go: the log writer."""

    def next_offset(self) -> int: ...

    def append(self, records: list[Rec], *, atomic: bool = True) -> list[Record]: ...


class ListSink:
    """An in-memory sink (tests): offsets from 0, a fixed clock step, no bytes."""

    def __init__(self, start_time: int = 1_700_000_000_000) -> None:
        self.records: list[Record] = []
        self.now = start_time

    def next_offset(self) -> int:
        return len(self.records)

    def append(self, records: list[Rec], *, atomic: bool = True) -> list[Record]:
        self.now += 1
        out = []
        for t, v, d in records:
            r = Record(len(self.records), self.now, 1, False, t, -1, v, d, None)
            self.records.append(r)
            out.append(r)
        return out


@dataclass(slots=True)
class ControllerConfig:
    metadata_version: int
    elr_enabled: bool = False
    default_min_isr: int = 1  # the controller's static min.insync.replicas
    max_records_per_batch: int = 10_000
    # operations with more records than this are written non-atomically, inside a
    # metadata transaction from 3.6-IV1 (KIP-868); Kafka's bound is its batch limit
    txn_threshold: int = 10_000
    features: dict[str, int] = field(default_factory=dict)  # other finalized features


class Controller:
    """The active controller's decisions over its image (see module docstring)."""

    def __init__(self, config: ControllerConfig, sink: RecordSink, *,
                 rng: random.Random | None = None,
                 on_steps: Callable[[list[Step]], None] | None = None) -> None:
        if config.elr_enabled and config.metadata_version < MV_4_0_IV1:
            raise ValueError(f"ELR needs metadata.version 4.0-IV1 (level {MV_4_0_IV1}) or later")
        self.config = config
        self.mv = config.metadata_version
        self.sink = sink
        self.rng = rng or random.Random(0)
        self.on_steps = on_steps
        self.image = Replay()  # the state: what it wrote, replayed as a reader would
        self.isr_index: dict[int, set[TP]] = {}
        self.elr_index: dict[int, set[TP]] = {}
        self.leaderless: set[TP] = set()
        self.imbalanced: set[TP] = set()  # leader is not the first replica
        self.topic_order: dict[str, int] = {}  # topic id -> creation sequence (iteration order)
        self._topic_seq = 0
        self.broker_dirs: dict[int, str] = {}
        self.incarnations: dict[int, str] = {}
        # cordoned log dirs each broker last reported (MV >= 4.3-IV0); None = not yet reported
        # by this incarnation (Kafka's BrokerRegistration starts with null and the broker
        # sends them only once caught up), so its first caught-up heartbeat writes a record
        self.cordoned_dirs: dict[int, list[str] | None] = {}
        self.stats: dict[str, int] = {}
        # the events each written record was meant to cause (`simulate.labels`): by the
        # record's data until the sink gives it an offset, then by offset until applied
        self._intents: dict[int, tuple[str, ...]] = {}
        self._decided: dict[int, tuple[str, ...]] = {}

    # ------------------------------------------------------------ record versions

    @property
    def pr_version(self) -> int:
        return partition_record_version(self.mv)

    def _uuid(self) -> str:
        raw = bytearray(self.rng.getrandbits(128).to_bytes(16, "big"))
        if raw[0] == 0 and raw[1] < 1:  # keep clear of reserved ids (msb 0)
            raw[0] = 1
        return uuid_to_str(bytes(raw))

    # ------------------------------------------------------------ writing and replaying

    def write(self, records: list[Rec], *, atomic: bool = True) -> list[Step]:
        """Write records through the sink, replay them into the image, return the steps."""
        if not records:
            return []
        written = self.sink.append(records, atomic=atomic)
        for (_t, _v, data), rec in zip(records, written, strict=True):
            events = self._intents.pop(id(data), None)
            if events is not None:
                self._decided[rec.offset] = events
        steps: list[Step] = []
        for rec in written:
            steps.extend(self.image.apply(rec))
        if steps:
            self._index(steps)
            if self.on_steps is not None:
                self.on_steps(steps)
        if not self.image.in_transaction:  # every record written so far is applied or gone
            self._decided.clear()
        return steps

    def decided(self, step: Step) -> tuple[str, ...]:
        """The events the controller decided for a step it wrote (valid during `on_steps`;
        a transaction's steps arrive when it commits)."""
        return self._decided.get(step.offset, ())

    def _index(self, steps: list[Step]) -> None:
        for st in steps:
            tp = (st.topic_id, st.partition_id)
            b, a = st.before, st.after
            old_isr = set(b.isr) if b is not None else set()
            old_elr = set(b.eligible_leader_replicas) if b is not None else set()
            if st.deleted:
                new_isr, new_elr = set(), set()
                self.leaderless.discard(tp)
                self.imbalanced.discard(tp)
            else:
                new_isr, new_elr = set(a.isr), set(a.eligible_leader_replicas)
                if a.leader == NO_LEADER:
                    self.leaderless.add(tp)
                else:
                    self.leaderless.discard(tp)
                if a.replicas and a.leader != a.replicas[0]:
                    self.imbalanced.add(tp)
                else:
                    self.imbalanced.discard(tp)
            for r in old_isr - new_isr:
                self.isr_index[r].discard(tp)
            for r in new_isr - old_isr:
                self.isr_index.setdefault(r, set()).add(tp)
            for r in old_elr - new_elr:
                self.elr_index[r].discard(tp)
            for r in new_elr - old_elr:
                self.elr_index.setdefault(r, set()).add(tp)

    def _sorted_topics(self) -> list[str]:
        order = self.topic_order
        return sorted(self.image.partitions, key=lambda t: order.get(t, 0))

    def _sorted(self, tps: Iterable[TP]) -> list[TP]:
        order = self.topic_order
        return sorted(tps, key=lambda tp: (order.get(tp[0], 0), tp[1]))

    # ------------------------------------------------------------ cluster facts

    def topic_name(self, topic_id: str) -> str:
        return self.image.topics[topic_id]

    def partition(self, tp: TP) -> PartitionRegistration:
        return self.image.partitions[tp[0]][tp[1]]

    def partitions(self) -> list[TP]:
        return self._sorted((t, p) for t, ps in self.image.partitions.items() for p in ps)

    def is_active(self, b: int) -> bool:
        return self.image.is_active(b)

    def min_isr(self, topic_id: str) -> int:
        """`RCM.getTopicEffectiveMinIsr`: the configured value capped at partition 0's
        replica count (`kraft.configs.controller_min_isr`)."""
        name = self.image.topics.get(topic_id)
        m = resolve_min_isr(self.image.own_config(name, MIN_ISR),
                            self.image.cluster_config(MIN_ISR), self.config.default_min_isr)
        if m is None:  # Kafka's Integer.parseInt throws: the operation fails
            raise ValueError(f"min.insync.replicas of topic {topic_id} is not a number")
        parts = self.image.partitions.get(topic_id, {})
        return controller_min_isr(m, len(parts[0].replicas)) if 0 in parts else m

    def unclean_enabled(self, topic_id: str) -> bool:
        return self.image.unclean_enabled(self.image.topics.get(topic_id))

    def default_dir(self, broker: int) -> str:
        return self.broker_dirs.get(broker, UNASSIGNED_DIR)

    def _build(self, tp: TP, *, acceptable: Callable[[int], bool],
               election: Election | None = None, **targets: Any) -> Decision:
        tid, pid = tp
        if election is None:
            election = Election.UNCLEAN if self.unclean_enabled(tid) else Election.ONLINE
        return build_partition_change(
            self.partition(tp), tid, pid, acceptable=acceptable, metadata_version=self.mv,
            min_isr=self.min_isr(tid), elr_enabled=self.config.elr_enabled,
            election=election, default_dir=self.default_dir,
            last_known_leader_must_be_acceptable=self.mv >= MV_4_1_IV0, **targets)

    def _pcr(self, tp: TP, d: Decision, *, started: bool = False, cancelled: bool = False
             ) -> Rec:
        """The record of a decision, with the events the decision means (see `decided`)."""
        assert d.data is not None
        self._decide(d.data, decided_change(self.partition(tp), d, started=started,
                                            cancelled=cancelled))
        return (PARTITION_CHANGE_RECORD, self.pr_version, d.data)

    def _decide(self, data: dict[str, Any], events: tuple[str, ...]) -> None:
        if events:
            self._intents[id(data)] = events

    def _count(self, what: str, n: int = 1) -> None:
        self.stats[what] = self.stats.get(what, 0) + n

    # ------------------------------------------------------------ bootstrap and controllers

    def bootstrap_records(self) -> list[Rec]:
        """What the first active controller writes (`ActivationRecordsGenerator`)."""
        recs: list[Rec] = []
        if self.mv >= MV_3_3_IV0:
            recs.append((FEATURE_LEVEL_RECORD, 0, {"name": MV_FEATURE,
                                                   "feature_level": self.mv}))
            if self.config.elr_enabled:
                recs.append((FEATURE_LEVEL_RECORD, 0, {"name": ELR_FEATURE, "feature_level": 1}))
            for name, level in sorted(self.config.features.items()):
                recs.append((FEATURE_LEVEL_RECORD, 0, {"name": name, "feature_level": level}))
            if self.config.elr_enabled:  # 4.x: a cluster-level min.insync.replicas exists
                recs.append((CONFIG_RECORD, 0, {
                    "resource_type": RESOURCE_BROKER, "resource_name": "", "name": MIN_ISR,
                    "value": str(self.config.default_min_isr)}))
        if self.mv >= MV_3_6_IV1 and recs:
            recs = [(BEGIN_TRANSACTION, 0, {"name": "Bootstrap records"}), *recs,
                    (END_TRANSACTION, 0, {})]
        return recs

    def bootstrap(self) -> None:
        self.write(self.bootstrap_records(), atomic=False)

    def register_controller(self, controller_id: int, host: str) -> None:
        """A controller's RegisterControllerRecord, from metadata.version 3.7-IV0 (nothing before):
        a new incarnation id, its CONTROLLER listener on `host`:9093 and the features it
        supports."""
        if self.mv < MV_3_7_IV0:
            return
        self.write([(REGISTER_CONTROLLER_RECORD, 0, {
            "controller_id": controller_id, "incarnation_id": self._uuid(),
            "zk_migration_ready": False,
            "end_points": [{"name": "CONTROLLER", "host": host, "port": 9093,
                            "security_protocol": 0}],
            "features": self._supported_features()})])

    def _supported_features(self) -> list[dict[str, Any]]:
        feats = [{"name": MV_FEATURE, "min_supported_version": MV_3_0_IV1,
                  "max_supported_version": max(self.mv, MV_LATEST)}]
        if self.config.elr_enabled:
            feats.append({"name": ELR_FEATURE, "min_supported_version": 0,
                          "max_supported_version": 1})
        return sorted(feats, key=lambda f: f["name"])

    # ------------------------------------------------------------ brokers

    def register_broker(self, b: int, *, clean: bool = True, host: str | None = None) -> None:
        """A broker (new incarnation) registers; fenced until it catches up.

        A previous incarnation that did not shut down cleanly is stripped from ISRs and ELRs
        first when ELR is enabled (`handleBrokerUncleanShutdown`, 4.x PreviousBrokerEpoch
        rule); with ELR off, or after a clean shutdown, it is only removed from ISRs it
        still holds (4.x KAFKA-18106; after a controlled shutdown there are none).
        """
        recs: list[Rec] = []
        if b in self.image.brokers:
            if self.config.elr_enabled and not clean:
                tps = self.isr_index.get(b, set()) | self.elr_index.get(b, set())
                acc = self._acceptor(remove=b)
                for tp in self._sorted(tps):
                    d = self._build(tp, acceptable=acc,
                                    target_isr=[r for r in self.partition(tp).isr if r != b],
                                    unclean_shutdown=[b])
                    if d.data is not None:
                        recs.append(self._pcr(tp, d))
            else:
                recs += self._remove_from_isrs(b)
        if b not in self.broker_dirs:
            self.broker_dirs[b] = self._uuid()
        # `QuorumController.registerBroker`: the epoch is the controller's next write offset
        # when it handles the request, i.e. the offset of the first record written here
        # (an ISR / ELR clean-up of the previous incarnation comes before the registration)
        epoch = self.sink.next_offset()
        inc = self._uuid()
        self.incarnations[b] = inc
        data: dict[str, Any] = {
            "broker_id": b, "incarnation_id": inc, "broker_epoch": epoch,
            "end_points": [{"name": "PLAINTEXT", "host": host or f"broker-{b}", "port": 9092,
                            "security_protocol": 0}],
            "features": self._supported_features(), "rack": None, "fenced": True,
        }
        if self.mv >= MV_3_7_IV2:
            # `MetadataVersion.registerBrokerRecordVersion`: v4 adds CordonedLogDirs, which a
            # registration leaves null (unknown until the broker's first caught-up heartbeat)
            ver = 4 if self.mv >= MV_4_3_IV0 else 3
            data["log_dirs"] = [self.broker_dirs[b]]
        elif self.mv >= MV_3_4_IV0:
            ver = 2
        elif self.mv >= MV_3_3_IV3:
            ver = 1
        else:
            ver = 0
        if ver >= 2:
            data["is_migrating_zk_broker"] = False
        if ver >= 1:
            data["in_controlled_shutdown"] = False
        recs.append((REGISTER_BROKER_RECORD, ver, data))
        self.cordoned_dirs[b] = None
        self._count("registrations")
        self.write(recs)

    def _acceptor(self, *, remove: int | None = None, add: int | None = None
                  ) -> Callable[[int], bool]:
        """`LeaderAcceptor` of `generateLeaderAndIsrUpdates`."""
        image = self.image

        def acc(r: int) -> bool:
            if r < 0 or r == remove:
                return False
            return r == add or image.is_active(r)

        return acc

    def _broker_epoch(self, b: int) -> int:
        return self.image.brokers[b].epoch

    def unfence(self, b: int) -> list[Step]:
        """`handleBrokerUnfenced`: unfence record first, then leaderless partitions.

        From 4.3-IV0 the heartbeat that unfences a broker is a caught-up one, so it also
        reports the broker's cordoned log dirs (none here); if this incarnation has not
        reported them before, `processBrokerHeartbeat` writes that change after the
        unfencing records (`handleDirectoriesCordoned`).
        """
        recs: list[Rec] = [self._fence_record(b, fence=False)]
        acc = self._acceptor(add=b)
        for tp in self._sorted(self.leaderless):
            d = self._build(tp, acceptable=acc)
            if d.data is not None:
                recs.append(self._pcr(tp, d))
        if self.cordoned_dirs.get(b) is None:
            cordon = self._cordoned_record(b, [])
            if cordon is not None:
                recs.append(cordon)
        return self.write(recs)

    def report_cordoned_dirs(self, b: int, dirs: list[str] | None = None) -> list[Step]:
        """A caught-up heartbeat that does not change the broker's state but reports its
        cordoned log dirs (`RCM.handleDirectoriesCordoned`, MV >= 4.3-IV0): a
        BrokerRegistrationChangeRecord v3 when they differ from the registration's."""
        rec = self._cordoned_record(b, list(dirs or []))
        return self.write([rec]) if rec is not None else []

    def _cordoned_record(self, b: int, dirs: list[str]) -> Rec | None:
        """`BrokerRegistration.cordonedDirChanged`: unknown (null) always differs; a known
        list differs when its set of directories does."""
        if self.mv < MV_4_3_IV0:
            return None
        known = self.cordoned_dirs.get(b)
        if known is not None and set(known) == set(dirs):
            return None
        self.cordoned_dirs[b] = list(dirs)
        return (BROKER_REGISTRATION_CHANGE_RECORD, 3, {
            "broker_id": b, "broker_epoch": self._broker_epoch(b), "cordoned_log_dirs": dirs})

    def _fence_record(self, b: int, *, fence: bool) -> Rec:
        epoch = self._broker_epoch(b)
        if self.mv < MV_3_3_IV2:
            return (FENCE_BROKER_RECORD if fence else UNFENCE_BROKER_RECORD, 0,
                    {"id": b, "epoch": epoch})
        return (BROKER_REGISTRATION_CHANGE_RECORD, 0,
                {"broker_id": b, "broker_epoch": epoch, "fenced": FENCE if fence else UNFENCE})

    def _remove_from_isrs(self, b: int) -> list[Rec]:
        recs: list[Rec] = []
        acc = self._acceptor(remove=b)
        for tp in self._sorted(self.isr_index.get(b, set())):
            d = self._build(tp, acceptable=acc,
                            target_isr=[r for r in self.partition(tp).isr if r != b])
            if d.data is not None:
                recs.append(self._pcr(tp, d))
        return recs

    def fence(self, b: int) -> list[Step]:
        """`handleBrokerFenced` (session timeout or SHUTDOWN_NOW): ISR removals, then fence."""
        recs = self._remove_from_isrs(b)
        recs.append(self._fence_record(b, fence=True))
        self._count("fences")
        return self.write(recs, atomic=False)

    def controlled_shutdown(self, b: int) -> list[Step]:
        """`handleBrokerInControlledShutdown`: mark, then move leaderships / leave ISRs."""
        recs: list[Rec] = []
        if self.mv >= MV_3_3_IV3 and not self.image.brokers[b].in_controlled_shutdown:
            recs.append((BROKER_REGISTRATION_CHANGE_RECORD, 1, {
                "broker_id": b, "broker_epoch": self._broker_epoch(b),
                "in_controlled_shutdown": IN_CONTROLLED_SHUTDOWN}))
        recs += self._remove_from_isrs(b)
        return self.write(recs, atomic=False)

    # ------------------------------------------------------------ partitions

    def alter_partition(self, tp: TP, new_isr: list[int], *, recovered: bool = True
                        ) -> Step | None:
        """AlterPartition from the current leader (validated as in `validateAlterPartitionData`;
        an invalid request writes nothing). The broker always reports RECOVERED once it
        leads, so the first accepted request of a new leader completes recovery."""
        p = self.partition(tp)
        if p.leader == NO_LEADER or p.leader not in new_isr:
            return None
        if len(set(new_isr)) != len(new_isr) or not set(new_isr) <= set(p.replicas):
            return None
        if any(not self.is_active(r) for r in new_isr):
            return None  # INELIGIBLE_REPLICA
        if not recovered and p.leader_recovery_state == RECOVERED:
            return None
        lrs = RECOVERED if recovered else RECOVERING
        if lrs == RECOVERING and len(new_isr) > 1:
            return None
        d = self._build(tp, acceptable=self._acceptor(), target_isr=list(new_isr),
                        target_lrs=lrs)
        if d.data is None:
            return None
        steps = self.write([self._pcr(tp, d)])
        return steps[0] if steps else None

    def alter_partitions(self, requests: list[tuple[TP, list[int]]]) -> list[Step]:
        """Several AlterPartition items of one request (one leader): one write."""
        recs: list[Rec] = []
        acc = self._acceptor()
        for tp, new_isr in requests:
            p = self.partition(tp)
            if p.leader == NO_LEADER or p.leader not in new_isr or \
                    len(set(new_isr)) != len(new_isr) or not set(new_isr) <= set(p.replicas) \
                    or any(not self.is_active(r) for r in new_isr):
                continue
            d = self._build(tp, acceptable=acc, target_isr=list(new_isr), target_lrs=RECOVERED)
            if d.data is not None:
                recs.append(self._pcr(tp, d))
        return self.write(recs, atomic=False)

    def elect(self, tp: TP, election: Election) -> Step | None:
        """ElectLeaders (KIP-460) for one partition; None when no record is written."""
        p = self.partition(tp)
        if election is Election.PREFERRED and p.leader == p.replicas[0]:
            return None  # ELECTION_NOT_NEEDED
        if election is Election.UNCLEAN and p.leader != NO_LEADER:
            return None  # ELECTION_NOT_NEEDED
        d = self._build(tp, acceptable=self._acceptor(), election=election)
        if d.data is None:
            return None
        steps = self.write([self._pcr(tp, d)])
        return steps[0] if steps else None

    def balance_leaders(self, limit: int = 1000) -> list[Step]:
        """`maybeBalancePartitionLeaders`: PREFERRED elections for imbalanced partitions."""
        recs: list[Rec] = []
        acc = self._acceptor()
        for tp in self._sorted(self.imbalanced):
            p = self.partition(tp)
            if p.leader == p.replicas[0] or not acc(p.replicas[0]):
                continue
            d = self._build(tp, acceptable=acc, election=Election.PREFERRED)
            if d.data is not None:
                recs.append(self._pcr(tp, d))
                if len(recs) >= limit:
                    break
        return self.write(recs, atomic=False)

    def unclean_sweep(self) -> list[Step]:
        """`maybeElectUncleanLeaders`: leaderless partitions of unclean-enabled topics."""
        recs: list[Rec] = []
        acc = self._acceptor()
        for tp in self._sorted(self.leaderless):
            if self.unclean_enabled(tp[0]):
                d = self._build(tp, acceptable=acc, election=Election.UNCLEAN)
                if d.data is not None:
                    recs.append(self._pcr(tp, d))
        return self.write(recs, atomic=False)

    def reassign(self, tp: TP, target: list[int]) -> Step | None:
        """AlterPartitionReassignments (KIP-455) for one partition: the PartitionChangeRecord that
        starts moving it to `target` (`reassignment_target`), labelled as a reassignment started.
        Its step, or None when no record is written."""
        p = self.partition(tp)
        replicas, removing, adding = reassignment_target(p, target)
        targets: dict[str, Any] = {}
        if replicas != list(p.replicas):
            targets["target_replicas"] = replicas
        if removing:
            targets["target_removing"] = removing
        if adding:
            targets["target_adding"] = adding
        d = self._build(tp, acceptable=self._acceptor(), **targets)
        if d.data is None:
            return None
        steps = self.write([self._pcr(tp, d, started=True)])
        return steps[0] if steps else None

    def cancel_reassignment(self, tp: TP) -> Step | None:
        """A partition's reassignment cancelled (`PartitionReassignmentRevert`): its replicas and
        ISR without the replicas being added, by an unclean election when no ISR member would
        remain. None when no reassignment is under way, when that election is not allowed for the
        topic (Kafka's InvalidReplicaAssignmentException), or when no record is written."""
        p = self.partition(tp)
        if not p.reassigning:
            return None
        replicas, isr, unclean = revert_reassignment(p)
        if unclean and not self.unclean_enabled(tp[0]):
            return None  # InvalidReplicaAssignmentException
        d = self._build(tp, acceptable=self._acceptor(),
                        election=Election.UNCLEAN if unclean else None,
                        target_replicas=replicas, target_isr=isr, target_removing=[],
                        target_adding=[])
        if d.data is None:
            return None
        steps = self.write([self._pcr(tp, d, cancelled=True)])
        return steps[0] if steps else None

    # ------------------------------------------------------------ topics and configs

    def place(self, n_partitions: int, rf: int) -> list[list[int]]:
        """Striped placement over unfenced brokers (fenced ones only if too few)."""
        brokers = sorted(b for b, st in self.image.brokers.items() if not st.fenced)
        if len(brokers) < rf:
            brokers = sorted(self.image.brokers)
        n = len(brokers)
        if n < rf:
            raise ValueError(f"replication factor {rf} > {n} registered brokers")
        start = self.rng.randrange(n)
        out = []
        for i in range(n_partitions):
            first = (start + i) % n
            step = 1 + ((start + i) // n) % max(1, n - 1)
            reps: list[int] = []
            k = 0
            while len(reps) < rf:
                r = brokers[(first + k * step) % n]
                if r not in reps:
                    reps.append(r)
                k += 1
                if k > 4 * n:  # step shares a factor with n: fall back to consecutive
                    reps = [brokers[(first + j) % n] for j in range(rf)]
            out.append(reps)
        return out

    def create_topic(self, name: str, n_partitions: int, rf: int,
                     configs: dict[str, str] | None = None, *,
                     assignments: list[list[int]] | None = None,
                     commit: bool = True) -> str | None:
        """`RCM.createTopic`: TopicRecord, its ConfigRecords (each `min.insync.replicas`
        one followed, with ELR on, by a ClearElrRecord for the topic), PartitionRecords.
        Kafka before 3.4 (KAFKA-14612) wrote the ConfigRecords first; the order is gated on
        metadata.version 3.4-IV0, the first level only 3.4+ software can run. Written
        atomically when it fits one batch, else (MV >= 3.6-IV1) inside a metadata
        transaction; with commit=False the transaction is left open (the caller aborts it
        by a failover)."""
        if name in self.image.topic_ids:
            return None
        assignment = assignments or self.place(n_partitions, rf)
        states = []
        for reps in assignment:
            dirs = [self.default_dir(r) for r in reps] if self.mv >= MV_3_7_IV2 else None
            st = initial_partition(reps, self.is_active, dirs)
            if st is None:
                return None  # no active replica: InvalidReplicationFactor
            states.append(st)
        tid = self._uuid()
        config_recs: list[Rec] = [
            (CONFIG_RECORD, 0, {"resource_type": RESOURCE_TOPIC, "resource_name": name,
                                 "name": k, "value": v})
            for k, v in sorted((configs or {}).items())]
        config_recs += self._clear_elr_records(config_recs)
        topic_rec: Rec = (TOPIC_RECORD, 0, {"name": name, "topic_id": tid})
        recs: list[Rec] = [topic_rec, *config_recs] if self.mv >= MV_3_4_IV0 \
            else [*config_recs, topic_rec]
        for pid, st in enumerate(states):
            data = self.partition_record(tid, pid, st)
            self._decide(data, CREATED_LABEL)
            recs.append((PARTITION_RECORD, self.pr_version, data))
        self.topic_order.setdefault(tid, self._next_topic_seq())
        atomic = len(recs) <= self.config.txn_threshold
        if not atomic and self.mv >= MV_3_6_IV1:
            recs = [(BEGIN_TRANSACTION, 0, {"name": f"CreateTopics {name}"}), *recs]
            if commit:
                recs.append((END_TRANSACTION, 0, {}))
        self.write(recs, atomic=atomic)
        self._count("topics_created")
        return tid

    def _next_topic_seq(self) -> int:
        self._topic_seq += 1
        return self._topic_seq

    def partition_record(self, tid: str, pid: int, st: PartitionRegistration) -> dict[str, Any]:
        """`PartitionRegistration.toRecord` at this controller's metadata.version."""
        d: dict[str, Any] = {
            "partition_id": pid, "topic_id": tid, "replicas": list(st.replicas),
            "isr": list(st.isr), "removing_replicas": list(st.removing_replicas),
            "adding_replicas": list(st.adding_replicas), "leader": st.leader,
            "leader_epoch": st.leader_epoch, "partition_epoch": st.partition_epoch,
            "leader_recovery_state": st.leader_recovery_state,
        }
        ver = self.pr_version
        if ver >= 1:
            d["directories"] = list(st.directories)
        if ver >= 2 and self.config.elr_enabled:
            if st.eligible_leader_replicas:
                d["eligible_leader_replicas"] = list(st.eligible_leader_replicas)
            if st.last_known_elr:
                d["last_known_elr"] = list(st.last_known_elr)
        return d

    def abort_transaction(self, reason: str = "Controller failover") -> None:
        if self.image.in_transaction:
            self.write([(ABORT_TRANSACTION, 0, {"reason": reason})])

    def delete_topic(self, name: str) -> list[Step]:
        tid = self.image.topic_ids.get(name)
        if tid is None:
            return []
        self._count("topics_deleted")
        data = {"topic_id": tid}
        self._decide(data, DELETED_LABEL)
        return self.write([(REMOVE_TOPIC_RECORD, 0, data)])

    def set_config(self, key: str, value: str | None, topic: str | None = None) -> list[Step]:
        """ConfigRecord (topic, or cluster default when topic is None); with ELR enabled a
        `min.insync.replicas` change is followed by a ClearElrRecord (4.x)."""
        rtype, rname = (RESOURCE_TOPIC, topic) if topic is not None else (RESOURCE_BROKER, "")
        recs: list[Rec] = [(CONFIG_RECORD, 0, {"resource_type": rtype, "resource_name": rname,
                                                "name": key, "value": value})]
        return self.write(recs + self._clear_elr_records(recs))

    def _clear_elr_records(self, config_recs: list[Rec]) -> list[Rec]:
        """`ConfigurationControlManager.createClearElrRecordsAsNeeded` (ELR on): one
        ClearElrRecord per `min.insync.replicas` ConfigRecord, naming the topic for a topic
        config and all topics ("") otherwise; topic creation goes through it too."""
        if not self.config.elr_enabled:
            return []
        return [(CLEAR_ELR_RECORD, 0,
                 {"topic_name": d["resource_name"] if d["resource_type"] == RESOURCE_TOPIC
                  else ""})
                for _t, _v, d in config_recs if d["name"] == MIN_ISR]


__all__ = ["UNCLEAN", "Controller", "ControllerConfig", "ListSink", "Rec", "RecordSink"]
