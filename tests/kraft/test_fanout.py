"""Which partitions a RemoveTopicRecord or a ClearElrRecord reaches (`kraft.fanout.reached`),
held to Kafka's behaviour, and the sequential replay that calls it. Silver's call is held
to the same vectors by tests/fold/test_fanout.py.

Kafka sources (apache/kafka, paths from the repository root):
metadata/src/main/java/org/apache/kafka/controller/ReplicationControlManager.java
`replay(RemoveTopicRecord)`, `replay(ClearElrRecord)` (`replayClearAllElrs`,
`replayClearTopicElrs`), and their vectors in
metadata/src/test/java/org/apache/kafka/image/TopicsDeltaTest.java (`testClearElrRecords`,
`testClearElrRecordOnNonExistingTopic`, `testClearElrRecords_All_ForDeletedTopics`,
`testClearElrRecords_Single_ForDeletedTopics`).
"""

from __future__ import annotations

import pytest

from kraftlake.codec.records import Record
from kraftlake.kraft.events import ELR_CLEARED
from kraftlake.kraft.fanout import UnknownTopic, reached
from kraftlake.kraft.records import (
    CLEAR_ELR_RECORD,
    PARTITION_CHANGE_RECORD,
    PARTITION_RECORD,
    REMOVE_TOPIC_RECORD,
    TOPIC_RECORD,
)
from kraftlake.reference.replay import Replay

FOO, FOO2, BAR, BAR2 = "0hHJ3X5ZQ-CFfQ5xgpj90w", "FOO2AAAAAAAAAAAAAAAAAA", \
    "f62ptyETTjet8SL5ZeREiw", "BAR2AAAAAAAAAAAAAAAAAA"


def test_remove_topic_reaches_each_of_its_partitions():
    """RCM.replay(RemoveTopicRecord) walks `topic.parts`: a topic of N partitions, N pairs
    (by partition id here), none of another topic."""
    parts = {FOO: {3: "s", 0: "s", 2: "s", 1: "s"}, BAR: {0: "s"}}
    assert reached(REMOVE_TOPIC_RECORD, FOO, None, parts, {"foo": FOO, "bar": BAR}) == [
        (FOO, 0), (FOO, 1), (FOO, 2), (FOO, 3)]
    assert reached(REMOVE_TOPIC_RECORD, BAR, None, {BAR: []}, {"bar": BAR}) == []


def test_remove_of_an_unknown_topic_reaches_nothing():
    """RCM.replay(RemoveTopicRecord) throws UnknownTopicIdException for a topic id it does
    not hold."""
    with pytest.raises(UnknownTopic):
        reached(REMOVE_TOPIC_RECORD, BAR, None, {FOO: [0]}, {"foo": FOO})


@pytest.mark.parametrize("name", ["", None])
def test_clear_elr_without_a_name_reaches_every_topic(name):
    """`replayClearAllElrs` (TopicsDeltaTest.testClearElrRecords: `new ClearElrRecord()`
    clears foo's and bar's partitions), topic by topic."""
    parts = {FOO: [1, 0], BAR: [0]}
    assert reached(CLEAR_ELR_RECORD, None, name, parts, {"foo": FOO, "bar": BAR}) == [
        (FOO, 0), (FOO, 1), (BAR, 0)]


def test_clear_elr_with_a_name_reaches_that_topic_only():
    """`replayClearTopicElrs` looks the name up in `topicsByName`; an unknown name throws
    (testClearElrRecordOnNonExistingTopic)."""
    parts = {FOO: [0, 1], BAR: [0]}
    ids = {"foo": FOO, "bar": BAR}
    assert reached(CLEAR_ELR_RECORD, None, "bar", parts, ids) == [(BAR, 0)]
    with pytest.raises(UnknownTopic):
        reached(CLEAR_ELR_RECORD, None, "non-exist", parts, ids)


def test_a_record_naming_its_partition_is_no_fan_out():
    with pytest.raises(ValueError):
        reached(PARTITION_CHANGE_RECORD, FOO, None, {FOO: [0]}, {"foo": FOO})


# ------------------------------------------------------------ the replay


def _partition(tid: str, pid: int = 0, elr: bool = True) -> dict:
    return {"topic_id": tid, "partition_id": pid, "replicas": [0, 1, 2, 3], "isr": [0, 1],
            "leader": 0, "eligible_leader_replicas": [2] if elr else [],
            "last_known_elr": [3] if elr else []}


# TopicsDeltaTest.testClearElrRecords_All_ForDeletedTopics / _Single_ForDeletedTopics: foo
# (with ELR) deleted and created again as FOO2, bar created, deleted and created again as
# BAR2; the clears reach the new topics only.
DELETED_AND_CREATED = [
    (REMOVE_TOPIC_RECORD, {"topic_id": FOO}),
    (TOPIC_RECORD, {"name": "foo", "topic_id": FOO2}),
    (PARTITION_RECORD, _partition(FOO2)),
    (TOPIC_RECORD, {"name": "bar", "topic_id": BAR}),
    (PARTITION_RECORD, _partition(BAR, elr=False)),
    (REMOVE_TOPIC_RECORD, {"topic_id": BAR}),
    (TOPIC_RECORD, {"name": "bar", "topic_id": BAR2}),
    (PARTITION_RECORD, _partition(BAR2)),
]


@pytest.mark.parametrize("clears", [[""], ["foo", "bar"]], ids=["all", "single"])
def test_replay_clears_the_topics_created_again(clears):
    """The replay hands `reached` its image at each record: the removals end foo's and
    bar's first partitions, the clears (all topics, or each by name) reach FOO2 and BAR2."""
    rp = Replay()
    rp.apply(_rec(0, TOPIC_RECORD, {"name": "foo", "topic_id": FOO}))
    rp.apply(_rec(1, PARTITION_RECORD, _partition(FOO)))
    recs = [*DELETED_AND_CREATED, *((CLEAR_ELR_RECORD, {"topic_name": n}) for n in clears)]
    steps = [s for i, (t, d) in enumerate(recs, 2) for s in rp.apply(_rec(i, t, d))]
    assert [(s.topic_id, s.partition_id) for s in steps if s.deleted] == [(FOO, 0), (BAR, 0)]
    assert [(s.topic_id, s.partition_id) for s in steps if s.kind == ELR_CLEARED] == [
        (FOO2, 0), (BAR2, 0)]
    assert rp.problems == []


def _rec(off: int, typ: str, data: dict) -> Record:
    return Record(off, 0, 1, False, typ, 0, 0, data, None)
