"""The reference replay: Kafka's replay rules over real decoded records and real logs."""

from __future__ import annotations

import pytest

from kraftlake.codec.logfiles import iter_file, list_log_dir
from kraftlake.codec.records import Record, decode_metadata_value, encode_metadata_value
from kraftlake.reference.replay import (
    CHANGED,
    CREATED,
    DELETED,
    ELR_CLEARED,
    RESET,
    SNAPSHOT,
    Replay,
    replay_dir,
)
from tests.conftest import real_log_dirs
from tests.simulate.invariants import check_log_dir, errors

TID = "AAAAAAAAAAAAAAAAAAAAZA"
TID2 = "AAAAAAAAAAAAAAAAAAAAZQ"


class Log:
    """Records made from real bytes: encoded, then decoded by the codec."""

    def __init__(self) -> None:
        self.offset = 0

    def rec(self, type_name: str, data: dict, version: int = 0) -> Record:
        dec = decode_metadata_value(encode_metadata_value(type_name, version, data))
        assert dec.error is None, dec.error
        r = Record(self.offset, 1000 + self.offset, 1, False, dec.type, dec.api_key,
                   dec.version, dec.data, None)
        self.offset += 1
        return r

    def topic(self, name: str, tid: str) -> Record:
        return self.rec("TopicRecord", {"name": name, "topic_id": tid})

    def part(self, tid: str, pid: int, replicas, isr, leader, *, version=2, **kw) -> Record:
        d = {"partition_id": pid, "topic_id": tid, "replicas": replicas, "isr": isr,
             "removing_replicas": [], "adding_replicas": [], "leader": leader,
             "leader_epoch": kw.pop("leader_epoch", 0), "partition_epoch": 0, **kw}
        if version >= 1:
            d.setdefault("directories", [])
        return self.rec("PartitionRecord", d, version)

    def change(self, tid: str, pid: int, *, version=2, **fields) -> Record:
        return self.rec("PartitionChangeRecord", {"partition_id": pid, "topic_id": tid,
                                                  **fields}, version)


def run(records):
    rp = Replay()
    steps = []
    for r in records:
        steps.extend(rp.apply(r))
    return rp, steps


def test_change_merge_absent_versus_empty():
    log = Log()
    rp, steps = run([log.topic("t", TID), log.part(TID, 0, [1, 2, 3], [1, 2, 3], 1),
                     log.change(TID, 0, isr=[1], eligible_leader_replicas=[2, 3]),
                     log.change(TID, 0, leader=1),
                     log.change(TID, 0, isr=[], leader=-1, last_known_elr=[1])])
    assert [s.kind for s in steps] == [CREATED, CHANGED, CHANGED, CHANGED]
    a = steps[1].after
    assert (a.isr, a.eligible_leader_replicas, a.leader_epoch, a.partition_epoch) == \
        ((1,), (2, 3), 0, 1)
    b = steps[2].after  # Leader = current leader: epoch bump, nothing else changes
    assert (b.leader, b.leader_epoch, b.partition_epoch, b.isr) == (1, 1, 2, (1,))
    c = steps[3].after
    assert (c.isr, c.leader, c.leader_epoch, c.eligible_leader_replicas, c.last_known_elr) == \
        ((), -1, 2, (2, 3), (1,))
    assert rp.final_state()["t:0"]["isr"] == []


def test_partition_record_resets():
    log = Log()
    rp, steps = run([log.topic("t", TID), log.part(TID, 0, [1, 2], [1, 2], 1),
                     log.change(TID, 0, leader=2, isr=[2]),
                     log.part(TID, 0, [3], [3], 3, leader_epoch=7)])
    assert steps[-1].kind == RESET
    assert rp.final_state()["t:0"]["leader_epoch"] == 7
    assert rp.final_state()["t:0"]["partition_epoch"] == 0


def test_remove_topic_ends_partitions_and_configs():
    log = Log()
    rp, steps = run([
        log.rec("ConfigRecord", {"resource_type": 2, "resource_name": "t",
                                 "name": "min.insync.replicas", "value": "3"}),
        log.topic("t", TID), log.part(TID, 0, [1], [1], 1), log.part(TID, 1, [1], [1], 1),
        log.rec("RemoveTopicRecord", {"topic_id": TID}),
        log.topic("t", TID2), log.part(TID2, 0, [2], [2], 2)])
    dels = [s for s in steps if s.kind == DELETED]
    assert [(s.topic_id, s.partition_id, s.offset) for s in dels] == [(TID, 0, 4), (TID, 1, 4)]
    assert rp.min_isr("t") == 1  # the topic's configs went with it
    assert list(rp.final_state()) == ["t:0"]
    assert rp.final_state()["t:0"]["topic_id"] == TID2


def test_clear_elr_record():
    log = Log()
    recs = [log.topic("a", TID), log.topic("b", TID2),
            log.part(TID, 0, [1, 2, 3], [1], 1, eligible_leader_replicas=[2]),
            log.part(TID, 1, [1, 2, 3], [1, 2, 3], 1),
            log.part(TID2, 0, [1, 2, 3], [], -1, last_known_elr=[1])]
    rp, _ = run([*recs, log.rec("ClearElrRecord", {"topic_name": "a"})])
    assert rp.partition(TID, 0).eligible_leader_replicas == ()
    assert rp.partition(TID, 0).partition_epoch == 1
    assert rp.partition(TID, 1).partition_epoch == 0  # nothing to clear: untouched
    assert rp.partition(TID2, 0).last_known_elr == (1,)
    _, steps = run([*recs, log.rec("ClearElrRecord", {"topic_name": ""})])
    cleared = [(s.topic_id, s.partition_id) for s in steps if s.kind == ELR_CLEARED]
    assert cleared == [(TID, 0), (TID2, 0)]


def test_transactions_commit_abort_open():
    log = Log()
    begin = log.rec("BeginTransactionRecord", {"name": "x"})
    t = log.topic("t", TID)
    p = log.part(TID, 0, [1], [1], 1)
    abort = log.rec("AbortTransactionRecord", {"reason": "Controller failover"})
    rp, steps = run([begin, t, p, abort])
    assert steps == [] and rp.topics == {}
    begin2 = log.rec("BeginTransactionRecord", {"name": "y"})
    t2 = log.topic("t", TID)
    p2 = log.part(TID, 0, [1], [1], 1)
    end = log.rec("EndTransactionRecord", {})
    rp, steps = run([begin, t, p, abort, begin2, t2, p2])
    assert steps == [] and rp.topics == {} and rp.in_transaction  # open: held, not applied
    steps = rp.apply(end)
    assert [(s.kind, s.offset) for s in steps] == [(CREATED, p2.offset)]
    assert rp.problems == []


def test_problems_are_kept_not_raised():
    log = Log()
    rp, steps = run([log.change(TID, 0, leader=1),
                     log.rec("EndTransactionRecord", {}),
                     log.rec("BrokerRegistrationChangeRecord",
                             {"broker_id": 1, "broker_epoch": 5, "fenced": 1})])
    assert steps == []
    assert [p.kind for p in rp.problems] == ["unknown_topic", "transaction", "broker_epoch"]


def test_brokers_and_configs_tracked():
    log = Log()
    rp, _ = run([
        log.rec("FeatureLevelRecord", {"name": "metadata.version", "feature_level": 14}),
        log.rec("RegisterBrokerRecord", {"broker_id": 1, "incarnation_id": TID,
                                         "broker_epoch": 0, "end_points": [], "features": [],
                                         "rack": None, "fenced": True}, 1),
        log.rec("BrokerRegistrationChangeRecord", {"broker_id": 1, "broker_epoch": 0,
                                                   "fenced": -1}),
        log.rec("ConfigRecord", {"resource_type": 4, "resource_name": "",
                                 "name": "unclean.leader.election.enable", "value": "true"}),
        log.rec("ConfigRecord", {"resource_type": 4, "resource_name": "",
                                 "name": "min.insync.replicas", "value": "2"}),
    ])
    assert rp.metadata_version == 14 and rp.is_active(1)
    assert rp.unclean_enabled("any") and rp.min_isr("any") == 2


def test_snapshot_is_a_full_reset(scenario_dir):
    out = scenario_dir("topic-churn")
    _, snaps = list_log_dir(out / "__cluster_metadata-0")
    snap = snaps[-1]
    log = Log()
    rp, _ = run([log.topic("gone", TID), log.part(TID, 0, [1], [1], 1)])
    recs = [r for _b, rs in iter_file(snap) for r in rs]
    steps = rp.load_snapshot(recs, snap.offset)
    assert TID not in rp.topics
    assert [s.kind for s in steps if s.topic_id == TID] == [DELETED]
    assert {s.kind for s in steps if s.topic_id != TID} == {SNAPSHOT}
    assert all(s.offset == snap.offset - 1 for s in steps)
    assert rp.metadata_version == 27 and rp.brokers


@pytest.mark.parametrize("log_dir", real_log_dirs(), ids=lambda p: str(p).split("kraft-real/")[-1])
def test_real_logs_replay_and_keep_invariants(log_dir):
    _rp, steps = replay_dir(log_dir)
    assert all(s.after is not None for s in steps)
    violations = check_log_dir(log_dir)
    assert errors(violations) == [], [str(v) for v in errors(violations)[:5]]


def test_real_logs_with_interesting_content():
    """The real logs exercise what the rules are about (else the test above proves little)."""
    kinds = set()
    types = set()
    for d in real_log_dirs():
        _, steps = replay_dir(d)
        kinds |= {s.kind for s in steps}
        types |= {s.record.type for s in steps if s.record is not None}
        if any(s.after.leader_recovery_state == 1 for s in steps):
            kinds.add("recovering")
        if any(s.after.last_known_elr for s in steps):
            kinds.add("lke")
    assert {CREATED, CHANGED, DELETED, "recovering", "lke"} <= kinds
