"""Ground-truth event labels: what the controller model decided, not what the log implies.

The pipeline finds events by reading records (`kraft.events`, run by the fold's kernel).
The simulator knows more than a reader: it chose to elect uncleanly, from the ELR or the
preferred replica, it asked for a reassignment or its cancellation, it accepted an
AlterPartition that completes recovery, it created or deleted a topic. `decided_change`
turns one `kraft.builder.Decision` (plus what the operation was) into event names, and
`step_labels` adds the two events that are observations of state rather than decisions
(`under_min_isr`, `elr_change`: no controller decides them, they follow from the ISR and
ELR it chose), with the state predicates of `kraft.events`. Because the two derivations
share no classification rule, `partition_events == labels.jsonl` checks the rules against
the controller's intent, and the rules' own tests check them against Kafka.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from kraftlake.kraft.builder import Decision
from kraftlake.kraft.events import (
    CHANGED,
    CREATED,
    ELR_CLEARED,
    EVENT_TYPES,
    elr_changed,
    under_min_isr,
)
from kraftlake.kraft.partition import NO_LEADER, RECOVERED, RECOVERING, PartitionRegistration
from kraftlake.reference.replay import Step

CREATED_LABEL = ("partition_created",)
DELETED_LABEL = ("partition_deleted",)


def decided_change(before: PartitionRegistration, d: Decision, *, started: bool = False,
                   cancelled: bool = False) -> tuple[str, ...]:
    """The events the controller meant by one PartitionChangeRecord.

    `started`: the operation asked for a reassignment (one whose ISR already covers the
    target, or that only reorders the replicas, is done in the same record);
    `cancelled`: the operation cancelled one.
    """
    out: set[str] = set()
    if d.leader != before.leader:
        if d.leader == NO_LEADER:
            out.add("leader_offline")
        elif d.unclean:
            out.add("unclean_election")
        elif d.from_elr:
            out.add("elr_election")
        else:
            out.add("clean_election")
            if before.leader != NO_LEADER and d.leader == d.replicas[0]:
                out.add("preferred_election")
    if before.leader_recovery_state == RECOVERING and d.recovery_state == RECOVERED:
        out.add("recovery_completed")
    if set(before.isr) - set(d.isr):
        out.add("isr_shrink")
    if set(d.isr) - set(before.isr):
        out.add("isr_expand")
    if started:
        out.add("reassignment_started")
    if d.completed_reassignment or (started and not d.reassigning):
        out.add("reassignment_completed")
    if cancelled:
        out.add("reassignment_cancelled")
    return tuple(out)


def step_labels(step: Step, decided: Iterable[str]) -> list[str]:
    """The labels of one written partition step, in EVENT_TYPES order: the controller's
    decision plus the observed `under_min_isr` / `elr_change` (snapshot loads: none)."""
    out = set(decided)
    min_isr, a, b = step.context.min_isr, step.after, step.before
    if step.kind == CREATED and under_min_isr(min_isr, a):
        out.add("under_min_isr")
    elif step.kind in (CHANGED, ELR_CLEARED) and b is not None:
        if elr_changed(b, a):
            out.add("elr_change")
        if under_min_isr(min_isr, a) and not under_min_isr(min_isr, b):
            out.add("under_min_isr")
    return [e for e in EVENT_TYPES if e in out]


def label_line(step: Step, events: list[str]) -> dict[str, Any]:
    return {"offset": step.offset, "timestamp": step.timestamp, "topic_name": step.topic_name,
            "topic_id": step.topic_id, "partition_id": step.partition_id, "events": events}
