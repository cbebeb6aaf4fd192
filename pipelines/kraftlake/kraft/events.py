"""The partition events kraftlake flags, as plain functions of one partition step.

A step is (state before, what the record said, state after, context); `step_events` names
its events. The fold's kernel (`fold.kernel`) calls it for every step of every partition,
so this is the only place the event rules are written. The simulator's ground truth
(`simulate.labels`) derives its labels on its own, and tests hold the two equal.

The rules (docs/semantics.md 2.9, made exact):

* unclean_election: the record sets LeaderRecoveryState = RECOVERING (detection
  `leader_recovery_state`); or, where that signal cannot exist (the partition is already
  RECOVERING: `already_recovering`; metadata.version below 3.2-IV0 or unknown:
  `metadata_version`), the record names a new leader that was in neither the previous ISR
  nor the previous ELR, and it does not complete a reassignment.
* recovery_completed: LeaderRecoveryState RECOVERING -> RECOVERED.
* elr_change: ELR or LastKnownElr changed as a set (by a change, a reset or a ClearElrRecord:
  detection `ClearElrRecord`).
* elr_election: a clean election of a member of the previous ELR, as Kafka's brokers count
  it (`TopicDelta.updateElectionStats`: new leader in the previous ELR). The previous ISR
  need not be empty: fencing the last ISR member elects an ELR member in the same record.
  clean_election: any other election of a live leader (detection `reassignment_completed`
  when the record completes a reassignment); preferred_election a clean election from a
  live leader to replicas[0].
* leader_offline, isr_shrink, isr_expand (as sets).
* under_min_isr on the transition: |A.isr| < m(A) while |B.isr| >= m(B), m =
  `configs.partition_min_isr`; at creation when born under it.
* reassignment_started / _completed / _cancelled (completion = B.replicas minus
  B.removing, cancel = minus B.adding); a replica change with no reassignment state on
  either side is a reassignment done in one record: started and completed.
* partition_created, partition_deleted (detection: the record that deleted it).

A PartitionRecord for an existing partition (a reset) is judged like a change; snapshot
loads are no changes (the records in between are unknown) and carry no events.
"""

from __future__ import annotations

from .configs import partition_min_isr
from .partition import (
    LRS_NO_CHANGE,
    NO_LEADER,
    NO_LEADER_CHANGE,
    RECOVERED,
    RECOVERING,
    PartitionRegistration,
    cancels_reassignment,
    completes_reassignment,
)
from .records import CLEAR_ELR_RECORD
from .versions import leader_recovery_supported

EVENT_TYPES = (
    "unclean_election", "recovery_completed", "elr_change", "elr_election", "clean_election",
    "preferred_election", "leader_offline", "isr_shrink", "isr_expand", "under_min_isr",
    "reassignment_started", "reassignment_completed", "reassignment_cancelled",
    "partition_created", "partition_deleted",
)
# the events that say a partition was hurt (creations, deletions, reassignments and
# recoveries do not): what a report ranks partitions by
HARM_EVENTS = ("unclean_election", "leader_offline", "under_min_isr", "isr_shrink",
               "elr_election", "clean_election", "elr_change")
ELR_EVENTS = ("elr_change", "elr_election")  # KIP-966's two

# How an unclean election was detected: the record sets LeaderRecoveryState = RECOVERING;
# or, where that signal cannot exist, the heuristic (partition already RECOVERING, or
# metadata.version < 3.2-IV0 / unknown).
DETECTED_BY_LRS = "leader_recovery_state"
DETECTED_ALREADY_RECOVERING = "already_recovering"
DETECTED_BY_MV = "metadata_version"

# What a step did to its partition (the reference replay's steps and the kernel's alike).
CREATED = "created"  # PartitionRecord for a partition that did not exist
RESET = "reset"  # PartitionRecord for an existing partition (docs/semantics.md 1.1)
CHANGED = "changed"  # PartitionChangeRecord
ELR_CLEARED = "elr_cleared"  # ClearElrRecord touched this partition
DELETED = "deleted"  # RemoveTopicRecord
SNAPSHOT = "snapshot"  # loaded from a snapshot (full reset): no events

Event = tuple[str, str | None]  # (event type, detection)


def under_min_isr(min_isr: int | None, state: PartitionRegistration) -> bool:
    """Fewer ISR members than the broker's effective min ISR of this partition; never when
    min.insync.replicas is unknown (unparseable)."""
    m = partition_min_isr(min_isr, len(state.replicas))
    return m is not None and len(state.isr) < m


def elr_changed(b: PartitionRegistration, a: PartitionRegistration) -> bool:
    """ELR or LastKnownElr changed as a set (equal lists, most steps' and mostly empty, are
    equal sets: no set is made for them)."""
    if b.eligible_leader_replicas == a.eligible_leader_replicas and \
            b.last_known_elr == a.last_known_elr:
        return False
    return set(b.eligible_leader_replicas) != set(a.eligible_leader_replicas) or \
        set(b.last_known_elr) != set(a.last_known_elr)


def step_events(kind: str, before: PartitionRegistration | None, after: PartitionRegistration,
                *, min_isr: int | None, metadata_version: int | None,
                leader_field: int = NO_LEADER_CHANGE, lrs_field: int = LRS_NO_CHANGE,
                record_type: str | None = None) -> list[Event]:
    """The events of one step, in EVENT_TYPES order (see the module docstring).

    `leader_field` / `lrs_field`: the change record's Leader and LeaderRecoveryState as
    written (their "no change" sentinels when absent); a reset's leader is its state's.
    `min_isr`: the topic's configured min.insync.replicas in force (None: unparseable).
    `record_type`: what deleted the partition (the detection of `partition_deleted`).
    """
    if kind == CREATED:
        born_under = [("under_min_isr", None)] if under_min_isr(min_isr, after) else []
        return [*born_under, ("partition_created", None)]  # EVENT_TYPES order
    if kind == DELETED:
        return [("partition_deleted", record_type)]
    if before is None or kind == SNAPSHOT:
        return []
    b, a = before, after
    if kind == ELR_CLEARED:
        return [("elr_change", CLEAR_ELR_RECORD)] if elr_changed(b, a) else []
    if kind == RESET:
        leader_field, lrs_field = a.leader, LRS_NO_CHANGE
    found: list[Event] = []  # in EVENT_TYPES order, each type at most once
    moved = a.leader != b.leader
    b_reassigning, a_reassigning = b.reassigning, a.reassigning
    # a completion or a cancel ends a reassignment in progress (asked only then)
    completes = b_reassigning and completes_reassignment(b, a)
    cancels = b_reassigning and cancels_reassignment(b, a)
    instant = not b_reassigning and not a_reassigning and a.replicas != b.replicas
    was_recovering = b.leader_recovery_state == RECOVERING
    by_lrs = lrs_field == RECOVERING
    heuristic = (moved and leader_field >= 0
                 and (was_recovering or not leader_recovery_supported(metadata_version))
                 and a.leader not in b.isr and a.leader not in b.eligible_leader_replicas
                 and not completes)
    unclean = by_lrs or heuristic
    if unclean:
        found.append(("unclean_election", DETECTED_BY_LRS if by_lrs else
                      DETECTED_ALREADY_RECOVERING if was_recovering else DETECTED_BY_MV))
    if was_recovering and a.leader_recovery_state == RECOVERED:
        found.append(("recovery_completed", None))
    if elr_changed(b, a):
        found.append(("elr_change", None))
    if moved and a.leader >= 0 and not unclean:
        if a.leader in b.eligible_leader_replicas:
            found.append(("elr_election", None))
        else:
            found.append(("clean_election",
                          "reassignment_completed" if completes or instant else None))
            if b.leader >= 0 and a.replicas and a.leader == a.replicas[0]:
                found.append(("preferred_election", None))
    if b.leader != NO_LEADER and a.leader == NO_LEADER:
        found.append(("leader_offline", None))
    if a.isr != b.isr:  # equal lists are equal sets
        b_isr, a_isr = set(b.isr), set(a.isr)
        if b_isr - a_isr:
            found.append(("isr_shrink", None))
        if a_isr - b_isr:
            found.append(("isr_expand", None))
    if under_min_isr(min_isr, a) and not under_min_isr(min_isr, b):
        found.append(("under_min_isr", None))
    if (not b_reassigning and a_reassigning) or instant:
        found.append(("reassignment_started", None))
    if completes or instant:
        found.append(("reassignment_completed", None))
    elif cancels:
        found.append(("reassignment_cancelled", None))
    return found
