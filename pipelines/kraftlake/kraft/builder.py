"""The partition-change decision of Kafka's controller (`PartitionChangeBuilder`), in Python.

Given a partition's current state and what an event asks for (a target ISR, target
replicas, a reassignment, an election type, brokers that shut down uncleanly...), decide
the one PartitionChangeRecord the controller writes, or none. The order of the steps and
every rule follow docs/semantics.md section 2 (Kafka's `PartitionChangeBuilder.build`):
complete a reassignment, compute the target ELR, elect, bump the leader epoch where
replicas or (before 3.6) ISR members leave, write ELR / ISR / LastKnownElr / assignment /
LeaderRecoveryState fields that differ, and drop the record if nothing changed.

The result is the record's data dict in the codec's shape: only the fields that are
written are present, so "absent" (unchanged) and "[]" (cleared) stay distinct.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from enum import Enum
from typing import Any

from .partition import (
    NO_LEADER,
    NO_LEADER_CHANGE,
    RECOVERING,
    UNASSIGNED_DIR,
    PartitionRegistration,
)
from .versions import MV_3_6_IV0, MV_3_7_IV2, leader_recovery_supported


class Election(Enum):
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
    completed_reassignment: bool  # step 1 completed an ongoing reassignment
    reassigning: bool  # adding or removing replicas remain after the record
    recovery_state: int  # LeaderRecoveryState after the record


def _first(items: Iterable[int], pred: Callable[[int], bool]) -> int | None:
    for r in items:
        if pred(r):
            return r
    return None


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
    """Kafka's `PartitionChangeBuilder.build` (docs/semantics.md 2.2-2.8)."""
    mv = metadata_version
    t_isr = list(target_isr) if target_isr is not None else list(part.isr)
    t_rep = list(target_replicas) if target_replicas is not None else list(part.replicas)
    t_rem = list(target_removing) if target_removing is not None else list(part.removing_replicas)
    t_add = list(target_adding) if target_adding is not None else list(part.adding_replicas)
    t_elr = list(part.eligible_leader_replicas)
    t_lke = list(part.last_known_elr)
    t_lrs = part.leader_recovery_state if target_lrs is None else target_lrs
    unclean_set = set(unclean_shutdown)

    leader_f = NO_LEADER_CHANGE
    isr_f: list[int] | None = None
    elr_f: list[int] | None = None
    lke_f: list[int] | None = None
    lrs_f: int | None = None

    # 1. complete a reassignment if the ISR now covers the target replicas
    completed = False
    if t_rem or t_add:
        rem = set(t_rem)
        isr2 = [r for r in t_isr if r not in rem]
        rep2 = [r for r in t_rep if r not in rem]
        if isr2 and rep2 and set(rep2) <= set(isr2):
            t_isr, t_rep, t_rem, t_add = isr2, rep2, [], []
            completed = True

    # 2. target ELR (only with ELR enabled)
    if elr_enabled:
        if len(t_isr) >= min_isr:
            t_elr, t_lke = [], []
        else:
            isr_set = set(t_isr)
            cand = set(t_elr) | set(part.isr)
            t_elr = sorted(r for r in cand if r not in isr_set and r not in unclean_set)
            cand |= set(t_lke)
            elr_set = set(t_elr)
            t_lke = sorted(r for r in cand if r not in isr_set and r not in elr_set)

    # 3. election
    def valid(r: int) -> bool:
        return r >= 0 and (r in t_isr or (not t_isr and r in t_elr)) and acceptable(r)

    def can_elect_last_known() -> bool:
        # 3.7 .. 4.0 do not require the last leader to be acceptable; KAFKA-19522 (4.1) does.
        return (elr_enabled and use_last_known_leader and not t_elr and not t_isr
                and len(part.last_known_elr) == 1
                and (not last_known_leader_must_be_acceptable
                     or acceptable(part.last_known_elr[0])))

    node: int | None
    unclean = False
    if election is Election.PREFERRED:
        if t_rep and valid(t_rep[0]):
            node = t_rep[0]
        elif valid(part.leader):
            node = part.leader
        else:
            node = _first(t_rep[1:], valid)
    elif valid(part.leader):
        node = part.leader
    else:
        node = _first(t_rep, valid)
    if node is None:
        if can_elect_last_known():
            node, unclean = part.last_known_elr[0], True
        elif election is Election.UNCLEAN:
            node = _first(t_rep, acceptable)
            unclean = node is not None
    if node is None:
        node = NO_LEADER
    from_elr = False
    if node != part.leader:
        if node in t_elr:
            from_elr = not unclean
            t_isr = [node]
            t_elr = [r for r in t_elr if r != node]
        leader_f = node
        if unclean:
            isr_f = [node]
            if part.leader_recovery_state != RECOVERING and leader_recovery_supported(mv):
                lrs_f = RECOVERING

    # 4. leader epoch bump when a replica leaves the replica set
    if leader_f == NO_LEADER_CHANGE and not set(part.replicas) <= set(t_rep):
        leader_f = part.leader

    # 5. the ELR half of the record
    if isr_f is not None or not elr_enabled:
        t_elr, t_lke = [], []
    if t_elr != list(part.eligible_leader_replicas):
        elr_f = t_elr

    # 6. ISR (an empty ISR only with ELR enabled)
    if isr_f is None and (t_isr or elr_enabled) and t_isr != list(part.isr):
        isr_f = t_isr

    # 7. leader epoch bump on ISR shrink before 3.6-IV0 (KAFKA-15021)
    if mv < MV_3_6_IV0 and leader_f == NO_LEADER_CHANGE and isr_f is not None \
            and not set(part.isr) <= set(isr_f):
        leader_f = part.leader

    # 8. LastKnownElr holds the last leader while the partition is leaderless
    if use_last_known_leader and elr_enabled:
        if isr_f is not None and not isr_f and not (
                len(part.last_known_elr) == 1 and part.last_known_elr[0] == part.leader):
            lke_f = [part.leader]
        elif (leader_f >= 0 or (part.leader != NO_LEADER and leader_f != NO_LEADER)) \
                and part.last_known_elr:
            lke_f = []
    elif not use_last_known_leader and t_lke != list(part.last_known_elr):
        lke_f = t_lke

    # 9. assignment: directories, replicas, removing, adding
    data: dict[str, Any] = {"partition_id": partition_id, "topic_id": topic_id}
    if isr_f is not None:
        data["isr"] = isr_f
    if leader_f != NO_LEADER_CHANGE:
        data["leader"] = leader_f
    if t_rep:
        if t_rep != list(part.replicas):
            data["replicas"] = t_rep
        if mv >= MV_3_7_IV2:
            current = dict(zip(part.replicas, part.directories, strict=False))
            if target_directories:
                current.update(target_directories)
            dirs = [current.get(r) or (default_dir(r) if default_dir else UNASSIGNED_DIR)
                    for r in t_rep]
            if dirs != list(part.directories):
                data["directories"] = dirs
    if t_rem != list(part.removing_replicas):
        data["removing_replicas"] = t_rem
    if t_add != list(part.adding_replicas):
        data["adding_replicas"] = t_add
    # 10. LeaderRecoveryState asked for by AlterPartition
    if lrs_f is None and t_lrs != part.leader_recovery_state:
        lrs_f = t_lrs
    if lrs_f is not None:
        data["leader_recovery_state"] = lrs_f
    if elr_f is not None:
        data["eligible_leader_replicas"] = elr_f
    if lke_f is not None:
        data["last_known_elr"] = lke_f
    if len(data) == 2:  # 11. nothing changes: no record
        return Decision(None, part.leader, False, False, part.isr, part.replicas, False,
                        part.reassigning, part.leader_recovery_state)
    return Decision(data, part.leader if leader_f == NO_LEADER_CHANGE else leader_f, unclean,
                    from_elr, tuple(part.isr if isr_f is None else isr_f),
                    tuple(t_rep or part.replicas), completed, bool(t_rem or t_add),
                    part.leader_recovery_state if lrs_f is None else lrs_f)


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
