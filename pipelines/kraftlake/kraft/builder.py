"""The partition-change decision of Kafka's controller (`PartitionChangeBuilder`), in Python.

Given a partition's current state and what an event asks for (a target ISR, target
replicas, a reassignment, an election type, brokers that shut down uncleanly...), decide
the one PartitionChangeRecord the controller writes, or none (docs/semantics.md section 2).

`build_partition_change` is Kafka's constructor, setters and `build()` in one call; the work
is done by `_PartitionChangeBuilder`, whose private steps are Kafka's private methods of the
same names in the same order (metadata/src/main/java/org/apache/kafka/controller/
PartitionChangeBuilder.java), so a reader can check one against the other step by step.
The steps refine the builder's targets and set fields of a `_ChangeRecord`, Kafka's
`PartitionChangeRecord`, where "not set" (None, or NO_LEADER_CHANGE for the leader) is
Kafka's null / default.

The result is the record's data dict in the codec's shape: only the fields that are
written are present, so "absent" (unchanged) and "[]" (cleared) stay distinct.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from enum import Enum
from typing import Any, NamedTuple

from .partition import (
    NO_LEADER,
    NO_LEADER_CHANGE,
    RECOVERING,
    UNASSIGNED_DIR,
    PartitionRegistration,
)
from .versions import (
    directory_assignment_supported,
    leader_epoch_bump_required_on_isr_shrink,
    leader_recovery_supported,
)


class Election(Enum):
    """`PartitionChangeBuilder.Election`."""

    PREFERRED = "preferred"  # ElectLeaders PREFERRED, auto leader rebalance
    ONLINE = "online"  # default: keep the partition online from the ISR / ELR
    UNCLEAN = "unclean"  # ElectLeaders UNCLEAN, or unclean.leader.election.enable=true


@dataclass(frozen=True, slots=True)
class Decision:
    """What the builder decided: the record (None = nothing to write), how it elected, and
    the outcome it aimed at. The simulator labels its log from these (`simulate.labels`),
    so they say what the controller did, not what a reader infers from the record."""

    data: dict[str, Any] | None
    leader: int  # the leader after the record
    unclean: bool  # the election was unclean (incl. last-known-leader)
    from_elr: bool  # the leader was elected from the ELR
    isr: tuple[int, ...]  # the ISR after the record
    replicas: tuple[int, ...]  # the replicas after the record
    completed_reassignment: bool  # the record completes an ongoing reassignment
    reassigning: bool  # adding or removing replicas remain after the record
    recovery_state: int  # LeaderRecoveryState after the record


def build_partition_change(
    part: PartitionRegistration,
    topic_id: str,
    partition_id: int,
    *,
    acceptable: Callable[[int], bool],
    metadata_version: int,
    min_isr: int,
    elr_enabled: bool = False,
    target_isr: list[int] | None = None,
    target_replicas: list[int] | None = None,
    target_removing: list[int] | None = None,
    target_adding: list[int] | None = None,
    target_lrs: int | None = None,
    unclean_shutdown: Iterable[int] = (),
    election: Election = Election.ONLINE,
    default_dir: Callable[[int], str] | None = None,
    target_directories: Mapping[int, str] | None = None,
    use_last_known_leader: bool = True,
    last_known_leader_must_be_acceptable: bool = False,
) -> Decision:
    """`new PartitionChangeBuilder(...)`, its setters, then `build()`.

    The positional arguments and the first three keywords are the constructor's; the
    `target_*` keywords, `unclean_shutdown`, `election`, `default_dir`, `elr_enabled` and
    `use_last_known_leader` are its setters (an omitted target is the current value), and
    `last_known_leader_must_be_acceptable` chooses KAFKA-19522's rule (4.1) over 3.7-4.0's.
    """
    builder = _PartitionChangeBuilder(
        part, acceptable=acceptable, metadata_version=metadata_version, min_isr=min_isr,
        elr_enabled=elr_enabled, election=election, unclean_shutdown=unclean_shutdown,
        default_dir=default_dir, use_last_known_leader=use_last_known_leader,
        last_known_leader_must_be_acceptable=last_known_leader_must_be_acceptable)
    if target_isr is not None:
        builder.target_isr = list(target_isr)
    if target_replicas is not None:
        builder.target_replicas = list(target_replicas)
    if target_removing is not None:
        builder.target_removing = list(target_removing)
    if target_adding is not None:
        builder.target_adding = list(target_adding)
    if target_lrs is not None:
        builder.target_lrs = target_lrs
    if target_directories:
        builder.target_directories.update(target_directories)
    return builder.build(topic_id, partition_id)


@dataclass(slots=True)
class _ChangeRecord:
    """The fields of a `PartitionChangeRecord` the steps set; None is "not set"."""

    leader: int = NO_LEADER_CHANGE
    isr: list[int] | None = None
    eligible_leader_replicas: list[int] | None = None
    last_known_elr: list[int] | None = None
    leader_recovery_state: int | None = None
    replicas: list[int] | None = None
    directories: list[str] | None = None
    removing_replicas: list[int] | None = None
    adding_replicas: list[int] | None = None

    def is_no_op(self) -> bool:
        """`PartitionChangeBuilder.changeRecordIsNoOp`: no field is set."""
        return self.leader == NO_LEADER_CHANGE and all(
            v is None for v in (self.isr, self.eligible_leader_replicas, self.last_known_elr,
                                self.leader_recovery_state, self.replicas, self.directories,
                                self.removing_replicas, self.adding_replicas))

    def data(self, topic_id: str, partition_id: int) -> dict[str, Any]:
        """The record's data dict in the codec's shape: only the set fields."""
        fields: list[tuple[str, Any]] = [
            ("isr", self.isr),
            ("leader", None if self.leader == NO_LEADER_CHANGE else self.leader),
            ("replicas", self.replicas), ("directories", self.directories),
            ("removing_replicas", self.removing_replicas),
            ("adding_replicas", self.adding_replicas),
            ("leader_recovery_state", self.leader_recovery_state),
            ("eligible_leader_replicas", self.eligible_leader_replicas),
            ("last_known_elr", self.last_known_elr)]
        data: dict[str, Any] = {"partition_id": partition_id, "topic_id": topic_id}
        data.update((k, v) for k, v in fields if v is not None)
        return data


class _ElectionResult(NamedTuple):
    """`PartitionChangeBuilder.ElectionResult`: the chosen node (NO_LEADER for none) and
    whether choosing it was unclean."""

    node: int
    unclean: bool


class _PartitionChangeBuilder:
    """`PartitionChangeBuilder`: the inputs, the targets its steps refine, and what the
    steps found out that the record alone does not say (for `Decision`)."""

    def __init__(self, part: PartitionRegistration, *, acceptable: Callable[[int], bool],
                 metadata_version: int, min_isr: int, elr_enabled: bool, election: Election,
                 unclean_shutdown: Iterable[int], default_dir: Callable[[int], str] | None,
                 use_last_known_leader: bool, last_known_leader_must_be_acceptable: bool
                 ) -> None:
        self.part = part
        self.acceptable = acceptable
        self.metadata_version = metadata_version
        self.min_isr = min_isr
        self.elr_enabled = elr_enabled
        self.election = election
        self.unclean_shutdown = set(unclean_shutdown)
        self.default_dir = default_dir
        self.use_last_known_leader = use_last_known_leader
        self.last_known_leader_must_be_acceptable = last_known_leader_must_be_acceptable
        self.target_isr = list(part.isr)
        self.target_replicas = list(part.replicas)
        self.target_removing = list(part.removing_replicas)
        self.target_adding = list(part.adding_replicas)
        self.target_elr = list(part.eligible_leader_replicas)
        self.target_last_known_elr = list(part.last_known_elr)
        self.target_lrs = part.leader_recovery_state
        # DirectoryId.createAssignmentMap(replicas, directories); setDirectory adds to it
        self.target_directories: dict[int, str] = dict(
            zip(part.replicas, part.directories, strict=False))
        self.completed_reassignment = False
        self.unclean = False
        self.from_elr = False

    def build(self, topic_id: str, partition_id: int) -> Decision:
        """`build()`: the steps in Kafka's order (docs/semantics.md 2.2), then no record if
        none of them set a field."""
        record = _ChangeRecord()
        self._complete_reassignment_if_needed()
        self._maybe_populate_target_elr()
        self._try_election(record)
        self._trigger_leader_epoch_bump_for_replica_reassignment_if_needed(record)
        self._maybe_update_record_elr(record)
        self._maybe_set_isr(record)
        self._trigger_leader_epoch_bump_for_isr_shrink_if_needed(record)
        self._maybe_update_last_known_leader(record)
        self._set_assignment_changes(record)
        self._maybe_set_leader_recovery_state(record)
        part = self.part
        if record.is_no_op():
            return Decision(None, part.leader, False, False, part.isr, part.replicas, False,
                            part.reassigning, part.leader_recovery_state)
        return Decision(
            record.data(topic_id, partition_id),
            part.leader if record.leader == NO_LEADER_CHANGE else record.leader,
            self.unclean, self.from_elr,
            tuple(part.isr if record.isr is None else record.isr),
            tuple(self.target_replicas or part.replicas), self.completed_reassignment,
            bool(self.target_removing or self.target_adding),
            part.leader_recovery_state if record.leader_recovery_state is None
            else record.leader_recovery_state)

    # ------------------------------------------------------------ reassignment

    def _complete_reassignment_if_needed(self) -> None:
        """`completeReassignmentIfNeeded` (`PartitionReassignmentReplicas.
        maybeCompleteReassignment`): once the target ISR, less the removing replicas, holds
        every remaining replica, the reassignment is done: those become the targets and
        removing / adding empty (docs/semantics.md 3.4)."""
        if not (self.target_removing or self.target_adding):
            return
        removing = set(self.target_removing)
        isr = [r for r in self.target_isr if r not in removing]
        replicas = [r for r in self.target_replicas if r not in removing]
        if isr and replicas and set(replicas) <= set(isr):
            self.target_isr, self.target_replicas = isr, replicas
            self.target_removing, self.target_adding = [], []
            self.completed_reassignment = True

    # ------------------------------------------------------------ ELR

    def _maybe_populate_target_elr(self) -> None:
        """`maybePopulateTargetElr` (docs/semantics.md 2.6): with ELR on, an ISR of at least
        min ISR empties the ELR and LastKnownElr; a smaller one puts the current ISR and ELR,
        less the target ISR and the replicas that shut down uncleanly, in the ELR, and the
        rest of those (with the old LastKnownElr) in LastKnownElr. Sorted here; Kafka's
        order is a HashSet's (ascending for small ids), so readers compare them as sets."""
        if not self.elr_enabled:
            return
        if len(self.target_isr) >= self.min_isr:
            self.target_elr, self.target_last_known_elr = [], []
            return
        isr = set(self.target_isr)
        candidates = set(self.target_elr) | set(self.part.isr)
        self.target_elr = sorted(r for r in candidates
                                 if r not in isr and r not in self.unclean_shutdown)
        candidates |= set(self.target_last_known_elr)
        elr = set(self.target_elr)
        self.target_last_known_elr = sorted(r for r in candidates
                                            if r not in isr and r not in elr)

    def _maybe_update_record_elr(self, record: _ChangeRecord) -> None:
        """`maybeUpdateRecordElr`: an unclean election (it set the ISR) or ELR off empties
        the target ELR and LastKnownElr; the ELR is written if it differs. LastKnownElr is
        written here only when it holds the last known ELR members
        (`useLastKnownLeaderInBalancedRecovery` off); otherwise it holds the last leader and
        `_maybe_update_last_known_leader` writes it."""
        if record.isr is not None or not self.elr_enabled:
            self.target_elr, self.target_last_known_elr = [], []
        if self.target_elr != list(self.part.eligible_leader_replicas):
            record.eligible_leader_replicas = self.target_elr
        if self.use_last_known_leader:
            return
        if self.target_last_known_elr != list(self.part.last_known_elr):
            record.last_known_elr = self.target_last_known_elr

    def _maybe_update_last_known_leader(self, record: _ChangeRecord) -> None:
        """`maybeUpdateLastKnownLeader` of 3.7 to 4.1.0 (docs/semantics.md 2.7): with ELR on,
        LastKnownElr becomes [the current leader] when the record empties the ISR (unless it
        already is), and is cleared when the partition will have or keeps a leader."""
        if not (self.use_last_known_leader and self.elr_enabled):
            return
        part = self.part
        already_last = len(part.last_known_elr) == 1 and part.last_known_elr[0] == part.leader
        if record.isr is not None and not record.isr and not already_last:
            record.last_known_elr = [part.leader]
        elif (record.leader >= 0 or (part.leader != NO_LEADER and record.leader != NO_LEADER)) \
                and part.last_known_elr:
            record.last_known_elr = []

    # ------------------------------------------------------------ election

    def _is_valid_new_leader(self, replica: int) -> bool:
        """`isValidNewLeader`: acceptable, and in the target ISR, or in the target ELR when
        the target ISR is empty (docs/semantics.md 2.3). NO_LEADER never is."""
        return replica >= 0 and (
            replica in self.target_isr
            or (not self.target_isr and replica in self.target_elr)) \
            and self.acceptable(replica)

    def _can_elect_last_known_leader(self) -> bool:
        """`canElectLastKnownLeader` (docs/semantics.md 2.7): ELR on, the production
        LastKnownElr use, empty target ISR and ELR, exactly one LastKnownElr member; from
        KAFKA-19522 (4.1) that member must also be acceptable."""
        part = self.part
        return (self.elr_enabled and self.use_last_known_leader
                and not self.target_elr and not self.target_isr
                and len(part.last_known_elr) == 1
                and (not self.last_known_leader_must_be_acceptable
                     or self.acceptable(part.last_known_elr[0])))

    def _elect_preferred_leader(self) -> _ElectionResult:
        """`electPreferredLeader`: replicas[0] if valid, else the current leader if valid,
        else the first valid other replica, else the last known leader (unclean)."""
        replicas = self.target_replicas
        if replicas and self._is_valid_new_leader(replicas[0]):
            return _ElectionResult(replicas[0], False)
        if self._is_valid_new_leader(self.part.leader):
            return _ElectionResult(self.part.leader, False)
        node = _first(replicas[1:], self._is_valid_new_leader)
        if node is not None:
            return _ElectionResult(node, False)
        if self._can_elect_last_known_leader():
            return _ElectionResult(self.part.last_known_elr[0], True)
        return _ElectionResult(NO_LEADER, False)

    def _elect_any_leader(self) -> _ElectionResult:
        """`electAnyLeader` (ONLINE, UNCLEAN): the current leader if valid, else the first
        valid replica, else the last known leader (unclean), else for UNCLEAN the first
        acceptable replica (unclean)."""
        if self._is_valid_new_leader(self.part.leader):
            return _ElectionResult(self.part.leader, False)
        node = _first(self.target_replicas, self._is_valid_new_leader)
        if node is not None:
            return _ElectionResult(node, False)
        if self._can_elect_last_known_leader():
            return _ElectionResult(self.part.last_known_elr[0], True)
        if self.election is Election.UNCLEAN:
            node = _first(self.target_replicas, self.acceptable)
            if node is not None:
                return _ElectionResult(node, True)
        return _ElectionResult(NO_LEADER, False)

    def _elect_leader(self) -> _ElectionResult:
        """`electLeader`: by the election type (docs/semantics.md 2.3)."""
        if self.election is Election.PREFERRED:
            return self._elect_preferred_leader()
        return self._elect_any_leader()

    def _try_election(self, record: _ChangeRecord) -> None:
        """`tryElection` (docs/semantics.md 2.4): a new leader from the ELR becomes the
        target ISR and leaves the ELR (clean); an unclean one sets the ISR to itself at once
        and, from 3.2-IV0, LeaderRecoveryState RECOVERING unless it already is."""
        node, unclean = self._elect_leader()
        self.unclean = unclean
        if node == self.part.leader:
            return
        if node in self.target_elr:
            self.from_elr = not unclean
            self.target_isr = [node]
            self.target_elr = [r for r in self.target_elr if r != node]
        record.leader = node
        if unclean:
            record.isr = [node]
            if self.part.leader_recovery_state != RECOVERING \
                    and leader_recovery_supported(self.metadata_version):
                record.leader_recovery_state = RECOVERING

    # ------------------------------------------------------------ ISR and leader epoch

    def _trigger_leader_epoch_bump_for_replica_reassignment_if_needed(
            self, record: _ChangeRecord) -> None:
        """`triggerLeaderEpochBumpForReplicaReassignmentIfNeeded` (docs/semantics.md 2.5):
        when no leader is being set and a current replica leaves the replica set, write the
        current leader, which bumps the leader epoch."""
        if record.leader != NO_LEADER_CHANGE:
            return
        if not set(self.part.replicas) <= set(self.target_replicas):
            record.leader = self.part.leader

    def _maybe_set_isr(self, record: _ChangeRecord) -> None:
        """The ISR step Kafka writes inline in `build()`: the target ISR if it differs and
        the election did not set it; an empty ISR only with ELR on."""
        if record.isr is None and (self.target_isr or self.elr_enabled) \
                and self.target_isr != list(self.part.isr):
            record.isr = self.target_isr

    def _trigger_leader_epoch_bump_for_isr_shrink_if_needed(
            self, record: _ChangeRecord) -> None:
        """`triggerLeaderEpochBumpForIsrShrinkIfNeeded` (docs/semantics.md 2.5): below
        3.6-IV0 (KAFKA-15021), when no leader is being set and the written ISR lacks a
        current member, write the current leader."""
        if not leader_epoch_bump_required_on_isr_shrink(self.metadata_version):
            return
        if record.leader != NO_LEADER_CHANGE or record.isr is None:
            return
        if not set(self.part.isr) <= set(record.isr):
            record.leader = self.part.leader

    # ------------------------------------------------------------ assignment and recovery

    def _set_assignment_changes(self, record: _ChangeRecord) -> None:
        """`setAssignmentChanges`: replicas and (from 3.7-IV2) their directories, removing
        and adding, each where it differs. A replica without a known directory gets the
        default directory provider's, else UNASSIGNED."""
        part = self.part
        if self.target_replicas:
            if self.target_replicas != list(part.replicas):
                record.replicas = self.target_replicas
            if directory_assignment_supported(self.metadata_version):
                dirs = [self.target_directories.get(r) or self._default_dir(r)
                        for r in self.target_replicas]
                if dirs != list(part.directories):
                    record.directories = dirs
        if self.target_removing != list(part.removing_replicas):
            record.removing_replicas = self.target_removing
        if self.target_adding != list(part.adding_replicas):
            record.adding_replicas = self.target_adding

    def _default_dir(self, replica: int) -> str:
        """`DefaultDirProvider.defaultDir`; UNASSIGNED when the caller gave none."""
        return self.default_dir(replica) if self.default_dir else UNASSIGNED_DIR

    def _maybe_set_leader_recovery_state(self, record: _ChangeRecord) -> None:
        """The LeaderRecoveryState step Kafka writes inline in `build()` (docs/semantics.md
        2.8): a target that differs from the current state (AlterPartition's) is written.
        It can override an unclean election's RECOVERING only with RECOVERING: the election
        sets it only on a RECOVERED partition, where a differing target is RECOVERING."""
        if self.target_lrs != self.part.leader_recovery_state:
            record.leader_recovery_state = self.target_lrs


def _first(items: Iterable[int], pred: Callable[[int], bool]) -> int | None:
    """The first item `pred` accepts (Java's `stream().filter(pred).findFirst()`)."""
    for r in items:
        if pred(r):
            return r
    return None


def initial_partition(replicas: list[int], active: Callable[[int], bool],
                      directories: list[str] | None = None) -> PartitionRegistration | None:
    """`RCM.buildPartitionRegistration`: ISR = active replicas in replica order, leader the
    first of them, epochs 0, RECOVERED; None when no replica is active (creation refused)."""
    isr = tuple(r for r in replicas if active(r))
    if not isr:
        return None
    return PartitionRegistration(replicas=tuple(replicas), isr=isr, leader=isr[0],
                          directories=tuple(directories or ()))


def revert_reassignment(part: PartitionRegistration) -> tuple[list[int], list[int], bool]:
    """`PartitionReassignmentRevert`: (replicas, isr, unclean) for a cancelled reassignment."""
    adding = set(part.adding_replicas)
    replicas = [r for r in part.replicas if r not in adding]
    isr = [r for r in part.isr if r not in adding]
    unclean = False
    if not isr:
        isr = [replicas[0]]
        unclean = True
    return replicas, isr, unclean


def reassignment_target(part: PartitionRegistration,
                        target: list[int]) -> tuple[list[int], list[int], list[int]]:
    """`PartitionReassignmentReplicas`: (replicas, removing, adding) when a reassignment to
    `target` starts: removing / adding ascending (HashSet order), replicas = target then
    the removing ones."""
    cur, tgt = set(part.replicas), set(target)
    removing = sorted(cur - tgt)
    adding = sorted(tgt - cur)
    return list(target) + removing, removing, adding
