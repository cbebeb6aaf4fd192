"""The partition event types kraftlake flags (kraft-semantics 2.9; simulate/README.md,
"Label rules"), in the order the ground truth lists them, and the detection rules an
unclean election can be found by."""

from __future__ import annotations

EVENT_TYPES = (
    "unclean_election", "recovery_completed", "elr_change", "elr_election", "clean_election",
    "preferred_election", "leader_offline", "isr_shrink", "isr_expand", "under_min_isr",
    "reassignment_started", "reassignment_completed", "reassignment_cancelled",
    "partition_created", "partition_deleted",
)

# How an unclean election was detected: the record sets LeaderRecoveryState = RECOVERING;
# or, where that signal cannot exist, the heuristic (partition already RECOVERING, or
# metadata.version < 3.2-IV0 / unknown).
DETECTED_BY_LRS = "leader_recovery_state"
DETECTED_ALREADY_RECOVERING = "already_recovering"
DETECTED_BY_MV = "metadata_version"
