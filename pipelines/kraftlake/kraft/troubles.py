"""The kinds of trouble a partition state can be in (rows of `partition_intervals`).

Judged on one full state with the topic's configured min.insync.replicas in force:

* `offline`: no leader (Kafka's OfflinePartitionsCount);
* `under_min_isr`: |isr| < min(min.insync.replicas, |replicas|) (`configs.partition_min_isr`,
  the broker's UnderMinIsrPartitionCount); never when min.insync.replicas is unparseable;
* `recovering`: LeaderRecoveryState RECOVERING (after an unclean election, until the new
  leader has rebuilt its ISR);
* `reassigning`: adding or removing replicas non-empty;
* `single_isr`: one ISR member while the replication factor is more;
* `under_replicated`: |isr| < the replication factor (UnderReplicatedPartitions, per
  partition): what keeps an incident open after its brokers are back, until their replicas
  caught up.

The replication factor is Kafka's: the replicas not being added by a reassignment
(`OngoingReassignmentState.replicationFactor`, which both the broker's UnderReplicated
metric and `kafka-topics --under-replicated-partitions` use). A replica a reassignment is
still copying makes no partition under-replicated; the reassignment is `reassigning`.
"""

from __future__ import annotations

from collections.abc import Set

from .events import under_min_isr
from .partition import NO_LEADER, RECOVERING, PartitionRegistration

OFFLINE, UNDER_MIN_ISR, RECOVERING_KIND = "offline", "under_min_isr", "recovering"
REASSIGNING, SINGLE_ISR, UNDER_REPLICATED = "reassigning", "single_isr", "under_replicated"
KINDS = (OFFLINE, UNDER_MIN_ISR, RECOVERING_KIND, REASSIGNING, SINGLE_ISR, UNDER_REPLICATED)
_NONE: frozenset[str] = frozenset()


def trouble_kinds(state: PartitionRegistration, min_isr: int | None) -> Set[str]:
    """The kinds of trouble `state` is in (see the module docstring)."""
    if state.leader != NO_LEADER and state.leader_recovery_state != RECOVERING \
            and len(state.isr) == len(state.replicas) and not state.reassigning:
        # most states: led, recovered, not reassigning, every replica in the ISR, which
        # is then at least min(min ISR, |replicas|) and the replication factor, and one
        # member only when the factor is one; the rules below find nothing
        return _NONE
    out = set()
    if state.leader == NO_LEADER:
        out.add(OFFLINE)
    if under_min_isr(min_isr, state):
        out.add(UNDER_MIN_ISR)
    if state.leader_recovery_state == RECOVERING:
        out.add(RECOVERING_KIND)
    if state.reassigning:
        out.add(REASSIGNING)
    factor = replication_factor(state)
    if len(state.isr) == 1 and factor > 1:
        out.add(SINGLE_ISR)
    if len(state.isr) < factor:
        out.add(UNDER_REPLICATED)
    return out


def replication_factor(state: PartitionRegistration) -> int:
    """Kafka's replication factor of a partition: its replicas not being added."""
    if not state.adding_replicas:  # no reassignment adding any: every replica counts
        return len(state.replicas)
    return sum(r not in state.adding_replicas for r in state.replicas)
