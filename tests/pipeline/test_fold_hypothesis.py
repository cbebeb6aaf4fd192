"""Spark fold == sequential reference replay on generated change sequences.

Each example folds several independent sequences (one cluster id each) in one Spark job.
Sequences mix PartitionRecord (creation and reset), PartitionChangeRecord with every field
independently absent / empty / set, ClearElrRecord (one topic or all) and RemoveTopicRecord.
"""

from __future__ import annotations

import json

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kraftlake.codec.records import Record
from kraftlake.reference.replay import Replay
from kraftlake.sources.decode import source_spark_schema
from tests.pipeline.foldcheck import normalise, replay_rows, spark_fold_rows

TOPICS = [("t0", "AAAAAAAAAAAAAAAAAAAAZA"), ("t1", "AAAAAAAAAAAAAAAAAAAAZQ")]
DIR = "AAAAAAAAAAAAAAAAAAABAA"
brokers = st.lists(st.integers(0, 4), max_size=4, unique=True)
maybe = lambda s: st.one_of(st.none(), s)  # noqa: E731


@st.composite
def partition_record(draw):
    _name, tid = draw(st.sampled_from(TOPICS))
    reps = draw(brokers)
    return "PartitionRecord", 2, {
        "partition_id": draw(st.integers(0, 1)), "topic_id": tid, "replicas": reps,
        "isr": draw(brokers), "removing_replicas": draw(brokers), "adding_replicas": draw(brokers),
        "leader": draw(st.integers(-1, 4)), "leader_epoch": draw(st.integers(0, 5)),
        "partition_epoch": draw(st.integers(0, 5)),
        "directories": draw(st.sampled_from([[], [DIR] * len(reps)])),
        "leader_recovery_state": draw(st.integers(0, 1)),
        "eligible_leader_replicas": draw(maybe(brokers)), "last_known_elr": draw(maybe(brokers))}


@st.composite
def change_record(draw):
    _name, tid = draw(st.sampled_from(TOPICS))
    reps = draw(maybe(brokers))
    return "PartitionChangeRecord", 2, {
        "partition_id": draw(st.integers(0, 1)), "topic_id": tid, "isr": draw(maybe(brokers)),
        "leader": draw(st.sampled_from([-2, -2, -1, 0, 1, 2])), "replicas": reps,
        "removing_replicas": draw(maybe(brokers)), "adding_replicas": draw(maybe(brokers)),
        "leader_recovery_state": draw(st.sampled_from([-1, -1, 0, 1])),
        "directories": draw(st.sampled_from([None, None, [], [DIR] * len(reps or [])])),
        "eligible_leader_replicas": draw(maybe(brokers)), "last_known_elr": draw(maybe(brokers))}


@st.composite
def clear_elr(draw):
    return "ClearElrRecord", 0, {"topic_name": draw(st.sampled_from(["", "t0", "t1"]))}


@st.composite
def remove_topic(draw):
    return "RemoveTopicRecord", 0, {"topic_id": draw(st.sampled_from(TOPICS))[1]}


records = st.lists(st.one_of(partition_record(), change_record(), change_record(),
                             change_record(), clear_elr(), remove_topic()), max_size=25)


def _sequence(body):
    head = [("TopicRecord", 0, {"name": n, "topic_id": t}) for n, t in TOPICS]
    return head + body


def _fold_many(spark, seqs):
    rows = []
    expected = {}
    for i, seq in enumerate(seqs):
        cid = f"h{i}"
        rp = Replay()
        steps = []
        for off, (typ, ver, data) in enumerate(seq):
            rec = Record(off, 1_700_000_000_000 + off, 1, False, typ, 0, ver, data, None)
            steps += rp.apply(rec)
            rows.append({"cluster_id": cid, "source": "log", "offset": off, "position": off,
                         "timestamp": None, "control": False, "record_type": typ,
                         "version": ver, "data": json.dumps(data), "row_kind": "record"})
        expected[cid] = normalise(replay_rows(steps))
    schema = source_spark_schema()
    df = spark.createDataFrame([tuple(r.get(f.name) for f in schema.fields) for r in rows],
                               schema)
    got: dict[str, list] = {}
    for r in spark_fold_rows(spark, df):
        got.setdefault(r.pop("cluster_id"), []).append(r)
    return expected, {k: normalise(v) for k, v in got.items()}


@settings(max_examples=10, deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                                   HealthCheck.data_too_large])
@given(st.lists(records, min_size=6, max_size=6))
def test_spark_fold_equals_replay(spark, bodies):
    seqs = [_sequence(b) for b in bodies]
    expected, got = _fold_many(spark, seqs)
    for cid, exp in expected.items():
        assert got.get(cid, []) == exp, cid
