"""Ground-truth event labels of partition steps (the rules are in README.md, "Label rules").

One function, `step_events`, classifies a replay `Step` (state before, the record, state
after, cluster context). The simulator labels what it writes with it, and the tests
recompute it from a replay of the written bytes, so the labels are by construction the
pipeline's event definitions applied to the log, not to the simulator's intentions; the
tests separately check them against what the model meant to do (unclean election, ELR
election, recovery).
"""

from __future__ import annotations

from typing import Any

from kraftlake.kraft.events import EVENT_TYPES, elr_changed, under_min_isr
from kraftlake.kraft.partition import (
    LRS_NO_CHANGE,
    NO_LEADER,
    NO_LEADER_CHANGE,
    RECOVERED,
    RECOVERING,
    PartitionRegistration,
    cancels_reassignment,
    completes_reassignment,
)
from kraftlake.kraft.versions import leader_recovery_supported
from kraftlake.reference.replay import CHANGED, CREATED, DELETED, ELR_CLEARED, RESET, Step

_EMPTY = PartitionRegistration(replicas=(), isr=())


def step_events(step: Step) -> list[str]:
    """The events of one partition step, in EVENT_TYPES order."""
    if step.kind == CREATED:
        ev = ["partition_created"]
        a = step.after
        if under_min_isr(step.context.min_isr, a):
            ev.append("under_min_isr")
        return ev
    if step.kind == DELETED:
        return ["partition_deleted"]
    if step.kind == ELR_CLEARED:
        return ["elr_change"] if elr_changed(step.before or _EMPTY, step.after) else []
    if step.kind not in (CHANGED, RESET) or step.before is None:
        return []
    b, a = step.before, step.after
    data: dict[str, Any] = step.record.data if step.record is not None and \
        step.record.data is not None else {}
    mv = step.context.metadata_version
    out: set[str] = set()
    leader_field = data.get("leader", NO_LEADER_CHANGE) if step.kind == CHANGED else a.leader
    lrs_field = data.get("leader_recovery_state", LRS_NO_CHANGE) if step.kind == CHANGED \
        else LRS_NO_CHANGE
    moved = a.leader != b.leader
    completes = completes_reassignment(b, a)

    heuristic = b.leader_recovery_state == RECOVERING or not leader_recovery_supported(mv)
    unclean = lrs_field == RECOVERING or (
        heuristic and leader_field >= 0 and moved and a.leader not in b.isr
        and a.leader not in b.eligible_leader_replicas and not completes)
    if unclean:
        out.add("unclean_election")
    if b.leader_recovery_state == RECOVERING and a.leader_recovery_state == RECOVERED:
        out.add("recovery_completed")
    if elr_changed(b, a):
        out.add("elr_change")
    if moved and a.leader >= 0 and not unclean:
        if a.leader in b.eligible_leader_replicas and not b.isr:
            out.add("elr_election")
        else:
            out.add("clean_election")
            if b.leader >= 0 and a.replicas and a.leader == a.replicas[0]:
                out.add("preferred_election")
    if b.leader != NO_LEADER and a.leader == NO_LEADER:
        out.add("leader_offline")
    if set(b.isr) - set(a.isr):
        out.add("isr_shrink")
    if set(a.isr) - set(b.isr):
        out.add("isr_expand")
    if under_min_isr(step.context.min_isr, a) and not under_min_isr(step.context.min_isr, b):
        out.add("under_min_isr")
    if not b.reassigning and a.reassigning:
        out.add("reassignment_started")
    elif completes:
        out.add("reassignment_completed")
    elif cancels_reassignment(b, a):
        out.add("reassignment_cancelled")
    elif not b.reassigning and not a.reassigning and a.replicas != b.replicas:
        # a reassignment whose ISR already covered the target completes in its first record
        out.update(("reassignment_started", "reassignment_completed"))
    return [e for e in EVENT_TYPES if e in out]


def label_line(step: Step, events: list[str]) -> dict[str, Any]:
    return {"offset": step.offset, "timestamp": step.timestamp, "topic_name": step.topic_name,
            "topic_id": step.topic_id, "partition_id": step.partition_id, "events": events}


def labels_of_steps(steps) -> list[dict[str, Any]]:
    """labels.jsonl lines for a sequence of steps (snapshot loads carry no events)."""
    out = []
    for st in steps:
        ev = step_events(st)
        if ev:
            out.append(label_line(st, ev))
    return out
