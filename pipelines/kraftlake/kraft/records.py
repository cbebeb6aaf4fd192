"""Record type names kraftlake acts on, and Kafka's metadata-transaction rule.

Transactions (MV >= 3.6-IV1, docs/semantics.md 1.8) follow the broker's loader,
`metadata/.../image/loader/MetadataBatchLoader.replay`: records after a Begin take effect
together at the End and are dropped at an Abort. A Begin inside an open transaction, and an
End or Abort with none open, throw there; `loadBatch` hands the exception to the fault
handler and goes on with the next record, so the marker is ignored and the transaction
state is unchanged (the *outer* transaction stays open and keeps its records). A
transaction still open at the end of the data has not taken effect yet.

The Spark fold applies the rule to the markers alone (`transactions`, on the driver: a log
holds few), then drops the records of the ranges it names (`fold.silver.committed`).
"""

from __future__ import annotations

from collections.abc import Iterable

PARTITION_RECORD = "PartitionRecord"
PARTITION_CHANGE_RECORD = "PartitionChangeRecord"
REMOVE_TOPIC_RECORD = "RemoveTopicRecord"
CLEAR_ELR_RECORD = "ClearElrRecord"
TOPIC_RECORD = "TopicRecord"
CONFIG_RECORD = "ConfigRecord"
FEATURE_LEVEL_RECORD = "FeatureLevelRecord"
REGISTER_BROKER_RECORD = "RegisterBrokerRecord"
BROKER_REGISTRATION_CHANGE_RECORD = "BrokerRegistrationChangeRecord"
FENCE_BROKER_RECORD = "FenceBrokerRecord"
UNFENCE_BROKER_RECORD = "UnfenceBrokerRecord"
UNREGISTER_BROKER_RECORD = "UnregisterBrokerRecord"
REGISTER_CONTROLLER_RECORD = "RegisterControllerRecord"
ZK_MIGRATION_STATE_RECORD = "ZkMigrationStateRecord"
ZK_MIGRATION = 1  # its ZkMigrationState.MIGRATION: a ZooKeeper migration is under way
NO_OP_RECORD = "NoOpRecord"  # the active controller's heartbeat (MV >= 3.3-IV1)
# kraftlake's name for a record it could not decode, and for the unknown records a damaged
# batch held (a timeline state carried across them is marked uncertain: fold.kernel)
UNKNOWN_RECORD = "Unknown"
GAP_SOURCE = "gap"  # the `source` of a timeline state carried across unknown offsets

# control records (the Raft layer's, not the metadata image's)
LEADER_CHANGE = "LeaderChangeMessage"  # the control record opening every Raft epoch
SNAPSHOT_HEADER = "SnapshotHeaderRecord"  # first record of every snapshot
SNAPSHOT_FOOTER = "SnapshotFooterRecord"  # last record of every snapshot

# BrokerRegistrationChangeRecord's Fenced and InControlledShutdown values
# (metadata/.../BrokerRegistrationFencingChange and ...InControlledShutdownChange)
FENCING_NO_CHANGE, FENCE, UNFENCE = 0, 1, -1
SHUTDOWN_NO_CHANGE, IN_CONTROLLED_SHUTDOWN = 0, 1

BEGIN_TRANSACTION = "BeginTransactionRecord"
END_TRANSACTION = "EndTransactionRecord"
ABORT_TRANSACTION = "AbortTransactionRecord"
TRANSACTION_MARKERS = (BEGIN_TRANSACTION, END_TRANSACTION, ABORT_TRANSACTION)

PARTITION_TYPES = (PARTITION_RECORD, PARTITION_CHANGE_RECORD, REMOVE_TOPIC_RECORD,
                   CLEAR_ELR_RECORD)
BROKER_TYPES = (REGISTER_BROKER_RECORD, BROKER_REGISTRATION_CHANGE_RECORD,
                FENCE_BROKER_RECORD, UNFENCE_BROKER_RECORD, UNREGISTER_BROKER_RECORD)
TOPIC_TYPES = (TOPIC_RECORD, REMOVE_TOPIC_RECORD)
CONFIG_TYPES = (CONFIG_RECORD, FEATURE_LEVEL_RECORD)
# the records that change partitions they do not name (Kafka's `TopicDelta` fan-out):
# RemoveTopicRecord every partition of its topic, ClearElrRecord every partition of its topic
# (of every topic for an empty name)
FAN_OUT_TYPES = (REMOVE_TOPIC_RECORD, CLEAR_ELR_RECORD)
# the records that change a partition without writing its whole state
PARTITION_DELTA_TYPES = (PARTITION_CHANGE_RECORD, CLEAR_ELR_RECORD)
# every record kraftlake reads past `records` (the others are kept there, faithfully)
STATE_TYPES = (*PARTITION_TYPES, *BROKER_TYPES, TOPIC_RECORD, *CONFIG_TYPES)


def marker_refusal(marker: str, is_open: bool) -> str | None:
    """Why `MetadataBatchLoader.replay` throws on this marker, or None if it is accepted.

    A refused marker leaves the state as it was; an accepted one opens (Begin) or closes
    (End, Abort) the transaction.
    """
    if marker == BEGIN_TRANSACTION:
        return "BeginTransactionRecord inside an open transaction (ignored)" if is_open else None
    return None if is_open else f"{marker} without BeginTransactionRecord (ignored)"


def transactions(markers: Iterable[tuple[int, str]]) -> tuple[list[tuple[int, int]], int | None]:
    """What a log's transaction markers, in offset order, decide: the offset ranges (Begin,
    Abort), both ends excluded, whose records never took effect, and the offset of the Begin
    of a transaction still open after the last marker (its records are held back until an
    End or Abort comes), or None. Every other record took effect. Refused markers
    (`marker_refusal`) change nothing."""
    aborted: list[tuple[int, int]] = []
    begin: int | None = None
    for offset, marker in markers:
        if marker_refusal(marker, begin is not None) is not None:
            continue
        if marker == BEGIN_TRANSACTION:
            begin = offset
            continue
        if marker == ABORT_TRANSACTION:
            assert begin is not None  # an accepted close has a transaction to close
            aborted.append((begin, offset))
        begin = None
    return aborted, begin
