"""metadata.version feature levels (`server-common/.../common/MetadataVersion.java`).

Only the levels that change what the controller writes or what a record means are named
(docs/semantics.md 2.11). Unstable levels were renumbered between releases, so ELR presence
is decided from record versions and fields, never from these numbers alone.
"""

from __future__ import annotations

MV_FEATURE = "metadata.version"
ELR_FEATURE = "eligible.leader.replicas.version"

MV_3_0_IV1 = 1  # MINIMUM_KRAFT_VERSION
MV_3_2_IV0 = 3  # isLeaderRecoverySupported: unclean elections mark RECOVERING
MV_3_3_IV0 = 4  # FeatureLevelRecord for metadata.version
MV_3_3_IV1 = 5  # NoOpRecord
MV_3_3_IV2 = 6  # BrokerRegistrationChangeRecord instead of Fence/Unfence
MV_3_3_IV3 = 7  # InControlledShutdown
MV_3_4_IV0 = 8  # RegisterBrokerRecord v2
MV_3_6_IV0 = 12  # no leader epoch bump on ISR shrink
MV_3_6_IV1 = 13  # metadata transactions
MV_3_7_IV0 = 15  # RegisterControllerRecord
MV_3_7_IV2 = 17  # Directories: Partition(Change)Record v1, RegisterBrokerRecord v3
MV_FIRST_ELR = 20  # 3.7's unstable ELR level (3.8-IV0); renumbered later
MV_4_0_IV1 = 23  # ELR capable: Partition(Change)Record v2
MV_4_1_IV0 = 26  # KAFKA-19522: the last known leader must be acceptable; ELR on by default
MV_4_1_IV1 = 27
MV_4_3_IV0 = 30  # cordoned log dirs: RegisterBrokerRecord v4, BrokerRegistrationChange v3
MV_LATEST = MV_4_1_IV1  # what the simulator writes unless told: the 4.1 release's level

MV_NAMES: dict[str, int] = {
    "3.0-IV1": 1, "3.1-IV0": 2, "3.2-IV0": 3, "3.3-IV0": 4, "3.3-IV1": 5, "3.3-IV2": 6,
    "3.3-IV3": 7, "3.4-IV0": 8, "3.5-IV0": 9, "3.5-IV1": 10, "3.5-IV2": 11, "3.6-IV0": 12,
    "3.6-IV1": 13, "3.6-IV2": 14, "3.7-IV0": 15, "3.7-IV1": 16, "3.7-IV2": 17,
    "3.7-IV3": 18, "3.7-IV4": 19, "3.8-IV0": 20, "3.9-IV0": 21, "4.0-IV0": 22,
    "4.0-IV1": 23, "4.0-IV2": 24, "4.0-IV3": 25, "4.1-IV0": 26, "4.1-IV1": 27,
    "4.2-IV0": 28, "4.2-IV1": 29, "4.3-IV0": 30,
}


def parse_metadata_version(text: str | int) -> int:
    """A feature level from `27`, `"27"`, `"4.1-IV1"` or `"4.1"` (the release's last IV)."""
    if isinstance(text, int):
        return text
    t = text.strip()
    if t.isdigit():
        return int(t)
    if t in MV_NAMES:
        return MV_NAMES[t]
    levels = [lvl for name, lvl in MV_NAMES.items() if name.split("-")[0] == t]
    if levels:
        return max(levels)
    raise ValueError(f"unknown metadata.version {text!r}")


def leader_recovery_supported(mv: int | None) -> bool:
    """`MetadataVersion.isLeaderRecoverySupported`; an unknown MV (no FeatureLevelRecord
    yet: a log below 3.3-IV0) may be below 3.2-IV0, so it does not count as supported."""
    return mv is not None and mv >= MV_3_2_IV0


def leader_epoch_bump_required_on_isr_shrink(mv: int) -> bool:
    """`MetadataVersion.isLeaderEpochBumpRequiredOnIsrShrink`: before 3.6-IV0 an ISR shrink
    bumps the leader epoch (KAFKA-15021, the broker's replica manager needed it)."""
    return mv < MV_3_6_IV0


def directory_assignment_supported(mv: int) -> bool:
    """`MetadataVersion.isDirectoryAssignmentSupported` (KIP-858): partition records carry
    each replica's log directory from 3.7-IV2."""
    return mv >= MV_3_7_IV2


def partition_record_version(mv: int) -> int:
    """`MetadataVersion.partitionRecordVersion` (also the PartitionChangeRecord version)."""
    if mv >= MV_4_0_IV1:
        return 2
    if mv >= MV_3_7_IV2:
        return 1
    return 0


def elr_on_by_default(mv: int) -> bool:
    """Whether `kafka-storage format` at this metadata.version turns ELR on without being
    asked: `EligibleLeaderReplicasVersion.ELRV_1` names 4.1-IV0 as its bootstrap level, so a
    cluster formatted at 4.1-IV0 or later starts with eligible.leader.replicas.version 1."""
    return mv >= MV_4_1_IV0
