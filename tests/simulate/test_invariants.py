"""Each invariant check fires on input that breaks it (and stays quiet on input that keeps it)."""

from __future__ import annotations

import shutil

import pytest

from kraftlake.codec.batch import build_batch, encode_batch
from kraftlake.codec.logfiles import list_log_dir
from kraftlake.codec.records import (
    Record,
    control_key,
    encode_control_value,
    encode_metadata_value,
)
from kraftlake.kraft.partition import MIGRATING_DIR, PartitionRegistration
from kraftlake.reference.replay import CHANGED, CREATED, Context, Replay, Step
from kraftlake.simulate.writer import LogWriter
from tests.simulate.invariants import (
    check_log_dir,
    check_problems,
    check_segments,
    check_step,
    errors,
)

TID = "AAAAAAAAAAAAAAAAAAAAZA"


def ps(r, i, leader, le=0, pe=0, **kw):
    return PartitionRegistration(tuple(r), tuple(i), leader=leader, leader_epoch=le,
                          partition_epoch=pe, directories=(MIGRATING_DIR,) * len(r), **kw)


def step(before, after, data, *, kind=CHANGED, version=2, mv=27, min_isr=1, elr=1):
    rtype = "PartitionChangeRecord" if kind == CHANGED else "PartitionRecord"
    rec = Record(10, 1, 1, False, rtype, 5, version, {"topic_id": TID, "partition_id": 0,
                                                      **data}, None)
    return Step(10, 1, TID, "t", 0, kind, rec, before, after, Context(mv, elr, min_isr, False,
                                                                      False))


def numbers(vs):
    return sorted({(v.level, v.invariant) for v in vs})


B = ps([1, 2, 3], [1, 2, 3], 1, 5, 9)


@pytest.mark.parametrize("after,data,kw,expect", [
    (ps([1, 2, 3], [1, 2], 1, 5, 10), {"isr": [1, 2]}, {}, []),
    (ps([1, 2, 3], [1, 2], 1, 5, 11), {"isr": [1, 2]}, {}, [("E", 6)]),
    (ps([1, 2, 3], [1, 2], 1, 5, 10), {"isr": [1, 2], "leader": 1}, {"mv": 27},
     [("E", 7), ("E", 25)]),
    (ps([1, 2, 3], [1, 2], 1, 6, 10), {"isr": [1, 2], "leader": 1}, {"mv": 27}, [("E", 25)]),
    (ps([1, 2, 3], [1, 2], 1, 5, 10), {"isr": [1, 2]}, {"mv": 8, "version": 0},
     [("E", 25)]),
    (ps([1, 2, 3], [2, 3], 1, 6, 10), {"isr": [2, 3], "leader": 1},
     {"mv": 8, "version": 0}, [("E", 10)]),
    (ps([1, 2, 3], [1, 4], 1, 5, 10), {"isr": [1, 4]}, {}, [("E", 11)]),
    (ps([1, 2, 3], [], -1, 6, 10), {"isr": [], "leader": -1}, {"version": 1, "mv": 17},
     [("E", 12)]),
    (ps([1, 2, 3], [1], 1, 5, 10, eligible_leader_replicas=(1, 2)),
     {"isr": [1], "eligible_leader_replicas": [1, 2]}, {"min_isr": 3}, [("E", 13)]),
    (ps([1, 2, 3], [1], 1, 5, 10, eligible_leader_replicas=(2,)),
     {"isr": [1], "eligible_leader_replicas": [2]}, {"min_isr": 1}, [("W", 15)]),
    (ps([1, 2, 3], [1, 2, 3], 1, 5, 10, leader_recovery_state=1),
     {"leader_recovery_state": 1}, {}, [("E", 20), ("W", 19)]),
    (ps([1, 2, 3], [2], 2, 6, 10, leader_recovery_state=1),
     {"leader": 2, "isr": [2], "leader_recovery_state": 1}, {"mv": 2, "version": 0},
     [("E", 21)]),
    (ps([1, 2, 3], [1, 2, 3], 1, 5, 10), {"isr": [1, 2, 3]}, {"version": 0, "mv": 27},
     [("E", 22)]),
    (ps([1, 2], [1, 2], 1, 5, 10), {"replicas": [1, 2], "isr": [1, 2]}, {}, [("E", 24)]),
])
def test_change_checks(after, data, kw, expect):
    vs = check_step(step(B, after, data, **kw))
    assert numbers(vs) == sorted(expect)


def test_new_partition_checks():
    good = ps([1, 2], [1, 2], 1)
    assert check_step(step(None, good, {}, kind=CREATED)) == []
    bad = ps([1, 2], [2, 1], 2, 3, 3)
    assert ("E", 9) in numbers(check_step(step(None, bad, {}, kind=CREATED)))
    rp = Replay()  # no broker is registered: the ISR cannot be the active replicas
    assert any("active" in v.message for v in check_step(step(None, good, {}, kind=CREATED),
                                                         rp))


def test_problem_mapping():
    rp = Replay()
    rp.apply(Record(0, 0, 1, False, "PartitionChangeRecord", 5, 0,
                    {"topic_id": TID, "partition_id": 0, "leader": 1}, None))
    assert numbers(check_problems(rp.problems)) == [("E", 5)]


def _batch(base, epoch, values, control=None):
    return encode_batch(build_batch(base, epoch, 1000 + base, values, control_keys=control))


def test_segment_framing_checks(tmp_path):
    noop = encode_metadata_value("NoOpRecord", 0, {})
    lcm = encode_control_value("LeaderChangeMessage", {"version": 0, "leader_id": 1,
                                                       "voters": [], "granting_voters": []})
    d = tmp_path / "__cluster_metadata-0"
    d.mkdir()
    raw = (_batch(0, 1, [lcm], [control_key("LeaderChangeMessage")]) + _batch(1, 1, [noop])
           + _batch(3, 1, [noop])  # gap: offset 2 missing
           + _batch(4, 0, [noop])  # epoch goes back
           + _batch(5, 2, [noop])  # new epoch without a LeaderChangeMessage
           + _batch(6, 2, [b"\x01\x63\x00"]))  # unknown apiKey 99
    (d / "00000000000000000000.log").write_bytes(raw)
    segs, _ = list_log_dir(d)
    assert numbers(check_segments(segs)) == [("E", 1), ("E", 2), ("E", 3)]


def test_snapshot_checks(scenario_dir, tmp_path):
    src = scenario_dir("reassignment")
    out = tmp_path / "copy"
    shutil.copytree(src, out)
    log = out / "__cluster_metadata-0"
    assert errors(check_log_dir(log)) == []
    _, snaps = list_log_dir(log)
    snap = snaps[0]
    # a snapshot whose content disagrees with the log at its end offset
    w = LogWriter(out)
    w.write_snapshot([("FeatureLevelRecord", 0, {"name": "metadata.version",
                                                 "feature_level": 27})],
                     end_offset=snap.offset, epoch=snap.epoch, last_contained_ts=0, ts=1)
    assert ("E", 29) in numbers(check_log_dir(log))
    # a snapshot without its header batch
    raw = snap.path.read_bytes()
    first_len = int.from_bytes(raw[8:12], "big") + 12
    snap.path.write_bytes(raw[first_len:])
    assert ("E", 30) in numbers(check_log_dir(log))
