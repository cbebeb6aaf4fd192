"""Silver's fan-out (`fold.silver.fanned_out`): the partitions existing at each
RemoveTopicRecord and ClearElrRecord of a cluster, handed to `kraft.fanout.reached`, as
rows. Plain Arrow in, Arrow out (what Spark's cogroup hands it and takes back), no Spark.
Kafka's vectors are tests/kraft/test_fanout.py's (TopicsDeltaTest)."""

from __future__ import annotations

from datetime import UTC, datetime

import pyarrow as pa
import pytest

from kraftlake.fold.silver import fanned_out
from kraftlake.kraft.records import CLEAR_ELR_RECORD, REMOVE_TOPIC_RECORD
from tests.kraft.test_fanout import BAR, BAR2, DELETED_AND_CREATED, FOO, FOO2


@pytest.mark.parametrize(("clears", "expected"), [
    ([""], [(FOO2, 10), (BAR2, 10)]),
    (["foo", "bar"], [(FOO2, 10), (BAR2, 11)]),
], ids=["all", "single"])
def test_reaches_the_topics_created_again(clears, expected):
    """TopicsDeltaTest.testClearElrRecords_All_ForDeletedTopics / _Single_ForDeletedTopics
    as silver sees them: foo's partition known before the increment, the others created
    in it (offsets 2..9); a delete row per partition a RemoveTopicRecord reaches, a clear
    row (ELR = LastKnownElr = []) per partition a ClearElrRecord reaches, among those
    existing at it: a name names its newest topic."""
    recs = [(i, t, d) for i, (t, d) in enumerate(
        [*DELETED_AND_CREATED, *((CLEAR_ELR_RECORD, {"topic_name": n}) for n in clears)], 2)]
    names = {FOO: "foo", FOO2: "foo", BAR: "bar", BAR2: "bar"}
    created = [(d["topic_id"], names[d["topic_id"]], i) for i, _t, d in recs
               if "partition_id" in d]
    out = fanned_out(_records([r for r in recs if r[1] in (REMOVE_TOPIC_RECORD,
                                                           CLEAR_ELR_RECORD)]),
                     _candidates([(FOO, "foo", None), *created]))
    assert sorted(_rows(out)) == sorted([
        (FOO, 2, True, None, None), (BAR, 7, True, None, None),
        *((tid, off, False, [], []) for tid, off in expected)])
    assert out.schema.field("partition_id").type == pa.int32()


def test_a_clear_never_reaches_a_partition_created_after_it():
    """ConfigurationControlManager.createClearElrRecordsAsNeeded writes the ClearElrRecord of
    a topic created with its own min.insync.replicas before the topic's PartitionRecords."""
    out = fanned_out(_records([(3, CLEAR_ELR_RECORD, {"topic_name": "foo"}),
                               (5, CLEAR_ELR_RECORD, {"topic_name": ""})]),
                     _candidates([(FOO, "foo", 4), (BAR, "bar", None)]))
    assert sorted((r[0], r[1]) for r in _rows(out)) == sorted([(BAR, 5), (FOO, 5)])


def test_an_unknown_topic_reaches_nothing():
    out = fanned_out(_records([(3, CLEAR_ELR_RECORD, {"topic_name": "nope"}),
                               (4, REMOVE_TOPIC_RECORD, {"topic_id": BAR})]),
                     _candidates([(FOO, "foo", None)]))
    assert out.num_rows == 0


def _rows(out: pa.Table) -> list[tuple]:
    return list(zip(*(out.column(c).to_pylist() for c in (
        "topic_id", "offset", "is_delete", "eligible_leader_replicas", "last_known_elr")),
        strict=True))


def _records(recs: list[tuple[int, str, dict]]) -> pa.Table:
    ts = datetime(2026, 1, 1, tzinfo=UTC)
    n = len(recs)
    return pa.table({
        "cluster_id": ["c"] * n,
        "topic_id": pa.array([d.get("topic_id") for _i, _t, d in recs], pa.string()),
        "topic_name": pa.array([d.get("topic_name") for _i, _t, d in recs], pa.string()),
        "offset": pa.array([i for i, _t, _d in recs], pa.int64()),
        "seq": pa.array([0] * n, pa.int32()), "position": pa.array([0] * n, pa.int64()),
        "timestamp": pa.array([ts] * n, pa.timestamp("us", tz="UTC")),
        "record_type": [t for _i, t, _d in recs], "source": ["log"] * n})


def _candidates(parts: list[tuple[str, str, int | None]]) -> pa.Table:
    """(topic id, name, offset of its first full state; None: known before)."""
    return pa.table({
        "cluster_id": ["c"] * len(parts), "topic_id": [t for t, _n, _s in parts],
        "partition_id": pa.array([0] * len(parts), pa.int32()),
        "topic_name": [n for _t, n, _s in parts],
        "since_offset": pa.array([s for _t, _n, s in parts], pa.int64()),
        "since_seq": pa.array([None if s is None else 0 for _t, _n, s in parts], pa.int32())})
