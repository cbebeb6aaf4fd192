"""Kafka's own test vectors T1-T32 (docs/semantics.md 6.1) against the controller model."""

from __future__ import annotations

import pytest

from kraftlake.codec.records import decode_metadata_value, encode_metadata_value
from kraftlake.kraft.builder import (
    Election,
    build_partition_change,
    reassignment_target,
    revert_reassignment,
)
from kraftlake.kraft.partition import LOST_DIR, MIGRATING_DIR, UNASSIGNED_DIR, PartitionRegistration
from kraftlake.simulate.controller import Controller, ControllerConfig, ListSink

TID = "AAAAAAAAAAAAAAAAAAAAZA"
MV = 14  # 3.6-IV2: "MV >= 3.6, ELR disabled" unless a vector says otherwise
MV_ELR = 27


def ps(r, i, leader, le=0, pe=0, *, lrs=0, elr=(), lke=(), add=(), rem=(), dirs=None):
    return PartitionRegistration(replicas=tuple(r), isr=tuple(i), removing_replicas=tuple(rem),
                          adding_replicas=tuple(add), leader=leader, leader_epoch=le,
                          partition_epoch=pe, leader_recovery_state=lrs,
                          eligible_leader_replicas=tuple(elr), last_known_elr=tuple(lke),
                          directories=tuple(dirs) if dirs else (MIGRATING_DIR,) * len(r))


def all_but(*bad):
    return lambda r: r >= 0 and r not in bad


def build(part, *, acc=None, mv=MV, m=2, elr=False, **kw):
    return build_partition_change(part, TID, 0, acceptable=acc or all_but(),
                                  metadata_version=mv, min_isr=m, elr_enabled=elr, **kw)


def fields(data):
    """The written fields of a change record (ids dropped)."""
    return {k: v for k, v in (data or {}).items() if k not in ("topic_id", "partition_id")}


FOO = ps([2, 1, 3], [2, 1, 3], 1, 100, 200)
BAR = ps([1, 2, 3, 4], [1, 2, 3], 1, 100, 200, rem=[1], add=[4])


def apply(part, data):
    new, problem = part.merge(data)
    assert problem is None
    return new


def test_t1_merge():
    p = ps([1, 2, 3], [1, 2], 1)
    after = apply(p, {"leader": 3, "isr": [3]})
    assert (after.isr, after.leader, after.leader_epoch, after.partition_epoch) == ((3,), 3, 1, 1)


def test_t2_merge_with_reassignment_data():
    d1, d2, d3 = "AAAAAAAAAAAAAAAAAAAAZQ", "AAAAAAAAAAAAAAAAAAAAZg", "AAAAAAAAAAAAAAAAAAAAZw"
    p = ps([1, 2, 3], [1, 2, 3], 1, 100, 200, dirs=[d1, d2, d3])
    a = apply(p, {"removing_replicas": [3], "adding_replicas": [4], "replicas": [1, 2, 3, 4],
                  "directories": [d1, d2, d3, UNASSIGNED_DIR]})
    assert (a.replicas, a.removing_replicas, a.adding_replicas) == ((1, 2, 3, 4), (3,), (4,))
    assert (a.leader_epoch, a.partition_epoch) == (100, 201)
    b = apply(a, {"isr": [1, 2, 4], "removing_replicas": [], "adding_replicas": [],
                  "replicas": [1, 2, 4], "directories": [d1, d2, UNASSIGNED_DIR]})
    assert (b.replicas, b.isr, b.removing_replicas, b.adding_replicas) == \
        ((1, 2, 4), (1, 2, 4), (), ())
    assert (b.leader_epoch, b.partition_epoch) == (100, 202)


def test_t3_migrating_directories_from_real_bytes():
    raw = encode_metadata_value("PartitionRecord", 0, {
        "partition_id": 0, "topic_id": TID, "replicas": [0, 1], "isr": [0, 1],
        "removing_replicas": [], "adding_replicas": [], "leader": 0, "leader_epoch": 0,
        "partition_epoch": 0})
    dec = decode_metadata_value(raw)
    assert dec.error is None
    assert PartitionRegistration.from_record(dec.data).directories == (MIGRATING_DIR, MIGRATING_DIR)


def test_t4_isr_change_does_not_bump_leader_epoch():
    d = build(FOO, acc=all_but(3), target_isr=[2, 1])
    assert fields(d.data) == {"isr": [2, 1]}
    a = apply(FOO, d.data)
    assert (a.leader, a.leader_epoch, a.partition_epoch) == (1, 100, 201)


@pytest.mark.parametrize("mv", [8, 11])  # 3.4-IV0, 3.5-IV2
def test_t5_isr_shrink_bumps_leader_epoch_before_3_6(mv):
    d = build(FOO, acc=all_but(3), mv=mv, target_isr=[2, 1])
    assert fields(d.data) == {"isr": [2, 1], "leader": 1}
    a = apply(FOO, d.data)
    assert (a.leader_epoch, a.partition_epoch) == (101, 201)


def test_t6_isr_change_and_leader_change():
    d = build(FOO, acc=all_but(3), target_isr=[2, 3])
    assert fields(d.data) == {"isr": [2, 3], "leader": 2}
    assert apply(FOO, d.data).leader_epoch == 101


@pytest.mark.parametrize("mv,elr", [(MV, False), (17, False), (MV_ELR, False), (MV_ELR, True)])
def test_t7_unclean_election(mv, elr):
    d = build(FOO, acc=all_but(3), mv=mv, elr=elr, election=Election.UNCLEAN, target_isr=[3])
    assert fields(d.data) == {"isr": [2], "leader": 2, "leader_recovery_state": 1}
    a = apply(FOO, d.data)
    assert (a.isr, a.leader, a.leader_recovery_state, a.leader_epoch, a.partition_epoch) == \
        ((2,), 2, 1, 101, 201)
    assert d.unclean


def test_t8_unclean_election_clears_elr_and_last_known():
    p = ps([2, 1, 3], [], -1, 100, 200, elr=[3], lke=[2])
    d = build(p, acc=lambda r: r == 1, mv=MV_ELR, elr=True, election=Election.UNCLEAN)
    assert fields(d.data) == {"isr": [1], "leader": 1, "leader_recovery_state": 1,
                              "eligible_leader_replicas": [], "last_known_elr": []}


@pytest.mark.parametrize("mv,expect", [
    (3, {"leader": 1, "isr": [1], "leader_recovery_state": 1}),
    (2, {"leader": 1, "isr": [1]}),
])
def test_t9_recovering_only_from_3_2(mv, expect):
    p = ps([1, 2, 3], [2, 3], -1)
    d = build(p, acc=lambda r: r == 1, mv=mv, election=Election.UNCLEAN)
    assert fields(d.data) == expect


def test_t10_leadership_change_keeps_recovering():
    p = ps([1, 2, 3], [1], 1, 100, 200, lrs=1)
    a_rec = build(p, acc=lambda r: False, target_isr=[])
    assert fields(a_rec.data) == {"leader": -1}
    a = apply(p, a_rec.data)
    assert (a.leader, a.isr, a.leader_recovery_state, a.leader_epoch) == (-1, (1,), 1, 101)
    b_rec = build(a, acc=all_but())
    assert fields(b_rec.data) == {"leader": 1}
    b = apply(a, b_rec.data)
    assert (b.leader, b.isr, b.leader_recovery_state, b.leader_epoch) == (1, (1,), 1, 102)


def test_t11_isr_shrink_below_min_isr_fills_elr():
    p = ps([1, 2, 3, 4], [1, 2, 3, 4], 1, 100, 200)
    d = build(p, mv=MV_ELR, elr=True, m=3, target_isr=[1, 2])
    assert fields(d.data) == {"isr": [1, 2], "eligible_leader_replicas": [3, 4]}
    a = apply(p, d.data)
    assert (a.leader_epoch, a.partition_epoch, a.last_known_elr) == (100, 201, ())


def test_t12_isr_expand_above_min_isr_clears_elr():
    p = ps([1, 2, 3, 4], [1, 2], 1, 100, 200, elr=[3], lke=[4])
    d = build(p, mv=MV_ELR, elr=True, m=3, target_isr=[1, 2, 3])
    assert fields(d.data) == {"isr": [1, 2, 3], "eligible_leader_replicas": [],
                              "last_known_elr": []}
    assert apply(p, d.data).leader_epoch == 100


@pytest.mark.parametrize("lkl,expect", [
    (True, {"eligible_leader_replicas": [2]}),
    (False, {"eligible_leader_replicas": [2], "last_known_elr": [3]}),
])
def test_t13_unclean_shutdown_leaves_elr(lkl, expect):
    p = ps([1, 2, 3, 4], [1], 1, elr=[2, 3])
    d = build(p, acc=all_but(3), mv=MV_ELR, elr=True, m=3, target_isr=[1],
              unclean_shutdown=[3], use_last_known_leader=lkl)
    assert fields(d.data) == expect


def test_t14_elr_member_can_be_elected():
    p = ps([1, 2, 3, 4], [1], 1, 100, 200, elr=[3])
    d = build(p, acc=all_but(1), mv=MV_ELR, elr=True, m=3, target_isr=[],
              election=Election.PREFERRED)
    assert fields(d.data) == {"leader": 3, "isr": [3], "eligible_leader_replicas": [1]}
    assert d.from_elr and not d.unclean
    a = apply(p, d.data)
    assert (a.leader_recovery_state, a.leader_epoch, a.partition_epoch) == (0, 101, 201)


def test_t15_isr_can_shrink_to_zero_then_unclean_shutdown():
    p = ps([1, 2, 3, 4], [1, 2, 3, 4], 1, 100, 200)
    d = build(p, acc=lambda r: False, mv=MV_ELR, elr=True, m=3, target_isr=[])
    assert fields(d.data) == {"isr": [], "leader": -1, "eligible_leader_replicas": [1, 2, 3, 4],
                              "last_known_elr": [1]}
    a = apply(p, d.data)
    assert (a.leader_epoch, a.partition_epoch) == (101, 201)
    d2 = build(a, acc=lambda r: False, mv=MV_ELR, elr=True, m=3, target_isr=[],
               unclean_shutdown=[2])
    assert fields(d2.data) == {"eligible_leader_replicas": [1, 3, 4]}
    assert apply(a, d2.data).last_known_elr == (1,)


def test_t16_elect_last_known_leader():
    p = ps([1, 2, 3, 4], [], -1, 100, 200, lke=[1])
    d = build(p, mv=MV_ELR, elr=True, m=3, election=Election.PREFERRED)
    assert fields(d.data) == {"leader": 1, "isr": [1], "leader_recovery_state": 1,
                              "last_known_elr": []}
    assert d.unclean


def test_t17_last_known_leader_blocked_by_elr():
    p = ps([1, 2, 3, 4], [], -1, elr=[3], lke=[1])
    d = build(p, acc=all_but(3), mv=MV_ELR, elr=True, m=3, election=Election.PREFERRED)
    assert d.data is None


def test_t18_isr_enlargement_completes_reassignment():
    d = build(BAR, acc=all_but(3), target_isr=[1, 2, 3, 4])
    assert fields(d.data) == {"replicas": [2, 3, 4], "isr": [2, 3, 4], "leader": 2,
                              "removing_replicas": [], "adding_replicas": []}
    a = apply(BAR, d.data)
    assert (a.leader_epoch, a.partition_epoch) == (101, 201)


def test_t18_with_directories():
    d = build(BAR, acc=all_but(3), mv=17, target_isr=[1, 2, 3, 4],
              default_dir=lambda r: UNASSIGNED_DIR)
    assert len(d.data["directories"]) == 3


def test_t19_revert_reassignment():
    replicas, isr, unclean = revert_reassignment(BAR)
    assert (replicas, isr, unclean) == ([1, 2, 3], [1, 2, 3], False)
    d = build(BAR, acc=all_but(3), target_replicas=replicas, target_isr=isr,
              target_removing=[], target_adding=[])
    assert fields(d.data) == {"replicas": [1, 2, 3], "leader": 1, "removing_replicas": [],
                              "adding_replicas": []}
    a = apply(BAR, d.data)
    assert (a.leader_epoch, a.partition_epoch) == (101, 201)


def test_t20_removing_and_adding_reassignment():
    replicas, removing, adding = reassignment_target(FOO, [1, 2])
    d = build(FOO, acc=all_but(3), target_replicas=replicas, target_removing=removing)
    assert fields(d.data) == {"replicas": [1, 2], "isr": [2, 1], "leader": 1}
    assert (apply(FOO, d.data).leader_epoch, apply(FOO, d.data).partition_epoch) == (101, 201)
    replicas, removing, adding = reassignment_target(FOO, [1, 2, 3, 4])
    assert (removing, adding) == ([], [4])
    d = build(FOO, acc=all_but(3), mv=MV_ELR, target_replicas=replicas, target_adding=adding,
              default_dir=lambda r: UNASSIGNED_DIR)
    assert fields(d.data) == {"replicas": [1, 2, 3, 4], "adding_replicas": [4],
                              "directories": [MIGRATING_DIR] * 3 + [UNASSIGNED_DIR]}
    a = apply(FOO, d.data)
    assert (a.leader_epoch, a.partition_epoch) == (100, 201)


def test_t21_stopped_leader_demoted_after_reassignment():
    p = ps([2, 3, 0, 1], [0, 1], 0, rem=[0, 1], add=[2, 3])
    d = build(p, acc=lambda r: False, mv=2, target_isr=[0, 1, 2, 3])
    assert fields(d.data) == {"replicas": [2, 3], "isr": [2, 3], "removing_replicas": [],
                              "adding_replicas": [], "leader": -1}
    a = apply(p, d.data)
    assert (a.leader_epoch, a.partition_epoch) == (1, 1)


def test_t22_preferred_election():
    p = ps([1, 2, 3], [1, 2, 3], 2, 5, 7)
    d = build(p, election=Election.PREFERRED)
    assert fields(d.data) == {"leader": 1}
    assert apply(p, d.data).leader_epoch == 6


def test_t23_reassignment_start_complete_cancel():
    p = ps([3, 2, 1], [3, 2, 1], 3)
    replicas, removing, adding = reassignment_target(p, [0, 2, 1])
    start = build(p, target_replicas=replicas, target_removing=removing, target_adding=adding)
    assert fields(start.data) == {"replicas": [0, 2, 1, 3], "removing_replicas": [3],
                                  "adding_replicas": [0]}
    mid = apply(p, start.data)
    done = build(mid, target_isr=[3, 0, 2, 1])
    assert fields(done.data) == {"replicas": [0, 2, 1], "isr": [0, 2, 1], "leader": 0,
                                 "removing_replicas": [], "adding_replicas": []}
    r, i, _ = revert_reassignment(mid)
    cancel = build(mid, target_replicas=r, target_isr=i, target_removing=[], target_adding=[])
    assert fields(cancel.data) == {"replicas": [2, 1, 3], "leader": 3, "removing_replicas": [],
                                   "adding_replicas": []}


# ---------------------------------------------------------------- controller-level vectors


def controller(brokers, *, mv=27, elr=False, min_isr=1):
    sink = ListSink()
    c = Controller(ControllerConfig(mv, elr_enabled=elr, default_min_isr=min_isr), sink)
    c.bootstrap()
    if min_isr != 1 and not elr:
        c.set_config("min.insync.replicas", str(min_isr))
    for b in brokers:
        c.register_broker(b)
        c.unfence(b)
    return c, sink


def topic(c, assignments, configs=None):
    tid = c.create_topic("foo", len(assignments), len(assignments[0]), configs,
                         assignments=assignments)
    assert tid is not None
    return tid


def pcrs(sink, since):
    return [r for r in sink.records[since:] if r.type == "PartitionChangeRecord"]


def test_t24_controlled_shutdown():
    c, sink = controller([0, 1, 2])
    tid = topic(c, [[0, 1, 2]])
    n = len(sink.records)
    epoch = c.image.brokers[0].epoch
    c.controlled_shutdown(0)
    recs = sink.records[n:]
    assert recs[0].type == "BrokerRegistrationChangeRecord" and recs[0].version == 1
    assert recs[0].data == {"broker_id": 0, "broker_epoch": epoch, "in_controlled_shutdown": 1}
    assert fields(recs[1].data) == {"isr": [1, 2], "leader": 1}
    assert c.partition((tid, 0)).leader == 1


def test_t25_fence_multiple_brokers():
    c, sink = controller([0, 1, 2, 3, 4])
    tid = topic(c, [[1, 2, 3], [2, 3, 4], [0, 2, 1]])
    for b in (2, 3):
        n = len(sink.records)
        c.fence(b)
        recs = sink.records[n:]
        assert recs[-1].type == "BrokerRegistrationChangeRecord"
        assert recs[-1].data["fenced"] == 1
        assert all(r.type == "PartitionChangeRecord" for r in recs[:-1])
    p0, p1, p2 = (c.partition((tid, i)) for i in range(3))
    assert (p0.isr, p0.leader) == ((1,), 1)
    assert (p1.isr, p1.leader) == ((4,), 4)
    assert p2.isr == (0, 1) and p2.leader != 2


def test_t26_elect_unclean_leaders_without_elr():
    c, _sink = controller([1, 2, 3], mv=13)
    tid = topic(c, [[1, 2, 3]])
    for b in (2, 3, 1):
        c.fence(b)
    p = c.partition((tid, 0))
    assert (p.isr, p.leader) == ((1,), -1)
    assert c.elect((tid, 0), Election.UNCLEAN) is None  # ELIGIBLE_LEADERS_NOT_AVAILABLE
    c.unfence(2)
    assert c.partition((tid, 0)).leader == -1  # not in the ISR: no clean election
    step = c.elect((tid, 0), Election.UNCLEAN)
    assert fields(step.record.data) == {"leader": 2, "isr": [2], "leader_recovery_state": 1}


def test_t27_unclean_election_for_leaderless_partitions_at_unfence():
    c, sink = controller([0, 1, 2, 3, 4])
    tid = topic(c, [[1, 2, 4], [1, 3, 4], [0, 2, 4]],
                {"unclean.leader.election.enable": "true"})
    for b in (0, 1, 2, 3, 4):
        c.fence(b)
    assert [(c.partition((tid, i)).isr, c.partition((tid, i)).leader) for i in range(3)] == \
        [((4,), -1)] * 3
    n = len(sink.records)
    c.unfence(2)
    recs = pcrs(sink, n)
    assert [(r.data["partition_id"], fields(r.data)) for r in recs] == [
        (0, {"leader": 2, "isr": [2], "leader_recovery_state": 1}),
        (2, {"leader": 2, "isr": [2], "leader_recovery_state": 1})]
    assert (c.partition((tid, 1)).isr, c.partition((tid, 1)).leader) == ((4,), -1)


def test_t27_dynamic_config_sweep():
    c, _sink = controller([0, 1, 2, 3, 4])
    tid = topic(c, [[1, 2, 4]])
    for b in (0, 1, 2, 3, 4):
        c.fence(b)
    c.unfence(2)
    assert c.partition((tid, 0)).leader == -1
    c.set_config("unclean.leader.election.enable", "true", "foo")
    steps = c.unclean_sweep()
    assert [fields(s.record.data) for s in steps] == [
        {"leader": 2, "isr": [2], "leader_recovery_state": 1}]


def test_t28_elr_shrink_and_expand():
    c, _sink = controller([0, 1, 2], elr=True, min_isr=2)
    tid = topic(c, [[0, 1, 2]])
    s1 = c.alter_partition((tid, 0), [0])
    assert fields(s1.record.data) == {"isr": [0], "eligible_leader_replicas": [1, 2]}
    s2 = c.alter_partition((tid, 0), [0, 1])
    assert fields(s2.record.data) == {"isr": [0, 1], "eligible_leader_replicas": []}


def t29_setup():
    c, sink = controller([0, 1, 2, 3], elr=True, min_isr=3)
    tid = topic(c, [[0, 1, 2, 3]])
    got = []
    for b in (1, 2, 3):
        n = len(sink.records)
        c.fence(b)
        got.append([fields(r.data) for r in pcrs(sink, n)])
    return c, sink, tid, got


def test_t29_elr_clean_election():
    c, sink, tid, got = t29_setup()
    assert got == [[{"isr": [0, 2, 3]}], [{"isr": [0, 3], "eligible_leader_replicas": [2]}],
                   [{"isr": [0], "eligible_leader_replicas": [2, 3]}]]
    n = len(sink.records)
    c.unfence(2)
    c.unfence(3)
    assert pcrs(sink, n) == []
    c.fence(0)
    assert [fields(r.data) for r in pcrs(sink, n)] == [
        {"isr": [2], "leader": 2, "eligible_leader_replicas": [0, 3]}]
    p = c.partition((tid, 0))
    assert (p.leader, p.isr, set(p.eligible_leader_replicas), p.last_known_elr) == \
        (2, (2,), {0, 3}, ())


def test_t30_elr_unclean_shutdown():
    c, sink, tid, _ = t29_setup()
    n = len(sink.records)
    c.register_broker(3, clean=False)
    assert [fields(r.data) for r in pcrs(sink, n)] == [{"eligible_leader_replicas": [2]}]
    n = len(sink.records)
    c.register_broker(0, clean=False)
    assert [fields(r.data) for r in pcrs(sink, n)] == [
        {"isr": [], "leader": -1, "last_known_elr": [0]}]
    p = c.partition((tid, 0))
    assert (p.isr, p.leader, p.eligible_leader_replicas, p.last_known_elr) == \
        ((), -1, (2,), (0,))


@pytest.mark.parametrize("isr,recovered", [
    ([0, 1, 2, 3], True),  # 3 is not a replica
    ([1, 2], True),  # lacks the leader
    ([0, 0, 1], True),  # duplicate
    ([0], False),  # RECOVERED -> RECOVERING
])
def test_t31_invalid_alter_partition_writes_nothing(isr, recovered):
    c, sink = controller([0, 1, 2, 3])
    tid = topic(c, [[0, 1, 2]])
    n = len(sink.records)
    assert c.alter_partition((tid, 0), isr, recovered=recovered) is None
    assert len(sink.records) == n


def test_t31_recovering_with_large_isr_rejected():
    c, sink = controller([0, 1, 2])
    tid = topic(c, [[0, 1, 2]], {"unclean.leader.election.enable": "true"})
    c.alter_partition((tid, 0), [0])
    c.fence(0)  # unclean: 1 elected with ISR [1], RECOVERING
    p = c.partition((tid, 0))
    assert (p.leader, p.isr, p.leader_recovery_state) == (1, (1,), 1)
    n = len(sink.records)
    assert c.alter_partition((tid, 0), [1, 2], recovered=False) is None
    assert len(sink.records) == n
    step = c.alter_partition((tid, 0), [1, 2])  # the new leader's expansion completes recovery
    assert fields(step.record.data) == {"isr": [1, 2], "leader_recovery_state": 0}


def test_t32_update_directories():
    s, nine, u, pdir = ("AAAAAAAAAAAAAAAAAAAAZQ", "AAAAAAAAAAAAAAAAAAAACQ", UNASSIGNED_DIR,
                        "AAAAAAAAAAAAAAAAAAAAcA")
    p = ps([2, 1, 3], [2, 1, 3], 2, 10, 20, dirs=[s, nine, u])
    d = build(p, mv=MV_ELR, target_directories={3: pdir, 1: LOST_DIR})
    assert fields(d.data) == {"directories": [s, LOST_DIR, pdir]}
    a = apply(p, d.data)
    assert (a.leader_epoch, a.partition_epoch) == (10, 21)
