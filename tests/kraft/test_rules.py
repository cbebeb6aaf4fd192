"""The disagreements kraftlake's layers had, settled the way Kafka behaves.

Each test names the Kafka source it follows (apache/kafka at the commit docs/semantics.md
cites, 1eb7644; paths relative to the repository root). The Spark side of the same rules is
held to these by tests/fold/test_fold_hypothesis.py (generated logs with the same
inputs) and tests/fold/test_transactions.py.
"""

from __future__ import annotations

import pytest

from kraftlake.codec.records import Record
from kraftlake.kraft.configs import (
    MIN_ISR,
    RESOURCE_BROKER,
    RESOURCE_TOPIC,
    controller_min_isr,
    parse_int,
    partition_min_isr,
    resolve_min_isr,
)
from kraftlake.kraft.events import (
    CHANGED,
    ELR_EVENTS,
    EVENT_TYPES,
    HARM_EVENTS,
    step_events,
    under_min_isr,
)
from kraftlake.kraft.partition import InvalidRecord, PartitionRegistration
from kraftlake.reference.replay import CREATED, Replay
from kraftlake.simulate.controller import Controller, ControllerConfig, ListSink

TID = "AAAAAAAAAAAAAAAAAAAAZA"


def _rec(off: int, typ: str, data: dict) -> Record:
    return Record(off, 0, 1, False, typ, 0, 2 if "Partition" in typ else 0, data, None)


def _pr(pid: int = 0, lrs: int = 0, replicas: tuple[int, ...] = (1, 2, 3)) -> dict:
    return {"partition_id": pid, "topic_id": TID, "replicas": list(replicas),
            "isr": list(replicas), "removing_replicas": [], "adding_replicas": [], "leader": 1,
            "leader_epoch": 0, "partition_epoch": 0, "directories": [],
            "leader_recovery_state": lrs}


# ------------------------------------------------------------ LeaderRecoveryState


@pytest.mark.parametrize("lrs", [2, -1, 127])
def test_partition_record_with_lrs_outside_0_1_is_refused(lrs):
    """metadata/.../metadata/PartitionRegistration.java, constructor
    `PartitionRegistration(PartitionRecord)`:
    `LeaderRecoveryState.of(record.leaderRecoveryState())` throws IllegalArgumentException
    for anything but 0 / 1 (LeaderRecoveryState.java `of`), so the record creates no
    partition (RCM.replay(PartitionRecord) fails; the broker's MetadataBatchLoader.loadBatch
    skips it). Before: the replay kept the value, silver
    stored 0, reconcile kept it."""
    with pytest.raises(InvalidRecord):
        PartitionRegistration.from_record(_pr(lrs=lrs))
    rp = Replay()
    rp.apply(_rec(0, "TopicRecord", {"name": "t", "topic_id": TID}))
    assert rp.apply(_rec(1, "PartitionRecord", _pr(lrs=lrs))) == []
    assert rp.partition(TID, 0) is None
    assert [p.kind for p in rp.problems] == ["invalid_record"]


@pytest.mark.parametrize("lrs", [2, -2, 5])
def test_change_with_lrs_outside_its_range_is_refused_whole(lrs):
    """PartitionRegistration.java `merge`: `leaderRecoveryState.changeTo(...)` returns the
    old state for -1 (NO_CHANGE) and otherwise calls `of`, which throws: none of the
    record's other fields take effect either (before: the replay applied the rest)."""
    rp = Replay()
    rp.apply(_rec(0, "TopicRecord", {"name": "t", "topic_id": TID}))
    (created,) = rp.apply(_rec(1, "PartitionRecord", _pr()))
    assert created.kind == CREATED
    change = {"partition_id": 0, "topic_id": TID, "isr": [1], "leader": 1,
              "leader_recovery_state": lrs}
    assert rp.apply(_rec(2, "PartitionChangeRecord", change)) == []
    assert rp.partition(TID, 0) == created.after
    with pytest.raises(InvalidRecord):
        created.after.merge(change)


# ------------------------------------------------------------ min.insync.replicas


def test_min_isr_resolution_order():
    """metadata/.../metadata/KafkaConfigSchema.java `resolveEffectiveTopicConfig`: the
    topic's value if it has the key, else (node), cluster default, static config, ConfigDef
    default 1; ReplicationControlManager.getTopicEffectiveMinIsr parses it with
    Integer.parseInt."""
    assert resolve_min_isr("3", "2", 4) == 3
    assert resolve_min_isr(None, "2", 4) == 2
    assert resolve_min_isr(None, None, 4) == 4
    assert resolve_min_isr(None, None) == 1


def test_invalid_topic_value_shadows_the_cluster_value():
    """resolveEffectiveTopicConfig returns the topic's entry whenever the topic has the key
    (`dynamicTopicConfigs.containsKey`), valid or not, and `Integer.parseInt` then throws in
    getTopicEffectiveMinIsr: Kafka decides nothing with that topic's min ISR. kraftlake
    says "unknown" (None), not 1 (the replay's old answer) and not the cluster value
    (Spark's old answer), and draws no under-min-ISR verdict from it."""
    assert resolve_min_isr("two", "2", 1) is None
    assert resolve_min_isr(" 2", "2", 1) is None  # parseInt does not trim
    assert resolve_min_isr("9999999999", None) is None  # beyond int
    assert resolve_min_isr(None, "x", 3) is None  # the cluster level shadows the static one
    assert (parse_int("+2"), parse_int("007"), parse_int("-1")) == (2, 7, -1)
    state = PartitionRegistration(replicas=(1, 2, 3), isr=(1,))
    assert not under_min_isr(None, state)
    rp = Replay()
    rp.apply(_rec(0, "ConfigRecord", {"resource_type": RESOURCE_BROKER, "resource_name": "",
                                      "name": MIN_ISR, "value": "2"}))
    rp.apply(_rec(1, "ConfigRecord", {"resource_type": RESOURCE_TOPIC, "resource_name": "t",
                                      "name": MIN_ISR, "value": "two"}))
    assert rp.min_isr("t") is None and rp.min_isr("other") == 2


def test_controller_caps_by_partition_0_and_the_broker_by_its_own_replicas():
    """Two caps, both Kafka's. The controller's ELR threshold,
    ReplicationControlManager.getTopicEffectiveMinIsr: min(value,
    `topics.get(topicId).parts.get(0).replicas.length`) (ReplicationControlManagerTest
    testEligibleLeaderReplicas_EffectiveMinIsr: min ISR 5 on 3 replicas -> 3). The broker's
    under-min-ISR test, core/.../kafka/cluster/Partition.scala `effectiveMinIsr`:
    `minInSyncReplicas.min(remoteReplicasMap.size + 1)`, the partition's own replica count.
    Before: the controller model used partition 0, labels and events each partition's own;
    both were right, for different questions, and now say which they answer."""
    assert controller_min_isr(5, 3) == 3
    assert partition_min_isr(5, 2) == 2
    c = Controller(ControllerConfig(metadata_version=27, default_min_isr=3), ListSink())
    c.image.apply(_rec(0, "TopicRecord", {"name": "t", "topic_id": TID}))
    c.image.apply(_rec(1, "PartitionRecord", _pr(0, replicas=(1, 2))))
    c.image.apply(_rec(2, "PartitionRecord", _pr(1, replicas=(1, 2, 3))))
    assert c.min_isr(TID) == 2  # partition 0 has 2 replicas: every partition's m is 2
    p1 = PartitionRegistration(replicas=(1, 2, 3), isr=(1, 2))
    assert under_min_isr(3, p1)  # the broker leading partition 1 reports it under min ISR


# ------------------------------------------------------------ election kinds


def test_fencing_the_last_isr_member_elects_from_the_elr_in_one_record():
    """metadata/.../image/TopicDelta.java `updateElectionStats` (trunk, 4.x): an election
    counts as "from ELR" when the record's Leader is in the previous ELR; the controller's
    `ElectionFromEligibleLeaderReplicasPerSec` adds these up (ControllerMetricsChanges).
    PartitionChangeBuilder moves the fenced last ISR member into the ELR and elects another
    ELR member in the same record, so the previous ISR is not empty. Before: kraftlake
    required an empty previous ISR and called this a clean election; the simulator's
    decision-derived labels (its builder elected from the ELR) found the difference."""
    before = PartitionRegistration(replicas=(1, 2, 3), isr=(1,), leader=1,
                                   eligible_leader_replicas=(2,))
    record = {"partition_id": 0, "topic_id": TID, "leader": 2, "isr": [2],
              "eligible_leader_replicas": [1]}
    after, _ = before.merge(record)
    assert after.leader == 2 and after.isr == (2,) and after.eligible_leader_replicas == (1,)
    events = [e for e, _ in step_events(CHANGED, before, after, min_isr=2,
                                        metadata_version=27, leader_field=2)]
    assert "elr_election" in events and "clean_election" not in events


def test_reconcile_leaves_a_refused_snapshot_partition_out(spark):
    """The snapshot loader replays a snapshot's PartitionRecords through the same
    constructor (MetadataLoader.loadSnapshot -> TopicDelta.replay(PartitionRecord) ->
    `new PartitionRegistration(record)`), so one with LeaderRecoveryState 2 is not in the
    loaded image: reconciliation sees the partition absent from the snapshot (a presence
    mismatch) instead of comparing its refused value (before: reconcile kept it)."""
    import json

    from kraftlake.fold.reconcile import snapshot_states
    from kraftlake.sources.decode import with_fields

    rows = [("c", "record", "check", "PartitionRecord", 10, json.dumps(_pr(pid, lrs)))
            for pid, lrs in [(0, 0), (1, 1), (2, 2)]]
    src = spark.createDataFrame(rows, "cluster_id string, row_kind string, snapshot_role "
                                      "string, record_type string, snapshot_end_offset long, "
                                      "data string")
    got = {(r.partition_id, r.leader_recovery_state)
           for r in snapshot_states(with_fields(src)).collect()}
    assert got == {(0, 0), (1, 1)}


def test_the_event_groups_name_only_event_types() -> None:
    """A misspelt name in a group would silently leave that event out of a report."""
    assert set(HARM_EVENTS) <= set(EVENT_TYPES) and set(ELR_EVENTS) <= set(EVENT_TYPES)
