"""`fold.silver.committed` (metadata transactions) == a sequential reading of the markers.

Kafka's rule is the broker loader's, `metadata/src/main/java/org/apache/kafka/image/loader/
MetadataBatchLoader.java` (`replay`, `loadBatch`): records between BeginTransaction and
AbortTransaction never take effect, records after a Begin whose End has not been written yet
are held back until it is, and a marker `replay` throws on (a Begin inside an open
transaction, an End or Abort with none open) is handed to the fault handler by `loadBatch`
and ignored, so the outer transaction stays open and keeps its records. The sequential
reading below applies `kraft.records.marker_refusal` record by record; `committed` applies
the rule to the markers alone (`kraft.records.transactions`) and drops the ranges it names.
Each example is two Spark jobs over several clusters (the markers, the records).
"""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pyspark.sql import types as T

from kraftlake.fold.silver import committed, transaction_markers
from kraftlake.kraft.records import TRANSACTION_MARKERS, marker_refusal

# Spark held against the sequential rules: over two partitions, as on a real input
pytestmark = pytest.mark.usefixtures("several_partitions")

BEGIN, END, ABORT = TRANSACTION_MARKERS
KINDS = ["PartitionChangeRecord", "PartitionChangeRecord", BEGIN, END, ABORT]
SCHEMA = T.StructType([T.StructField(n, t) for n, t in [
    ("cluster_id", T.StringType()), ("source", T.StringType()),
    ("snapshot_role", T.StringType()), ("snapshot_end_offset", T.LongType()),
    ("offset", T.LongType()), ("seq", T.IntegerType()), ("position", T.LongType()),
    ("timestamp", T.TimestampType()), ("record_type", T.StringType()),
    ("data", T.StringType())]])


def reference(types: list[str]) -> tuple[list[int], int | None]:
    """(offsets of records that take effect, offset of the Begin still open at the end)."""
    kept, held, begin = [], [], None
    for off, kind in enumerate(types):
        if kind in TRANSACTION_MARKERS:
            if marker_refusal(kind, begin is not None) is not None:
                continue  # ignored: the state stays as it was
            if kind == BEGIN:
                held, begin = [], off
            else:
                if kind == END:
                    kept += held
                held, begin = [], None
        elif begin is None:
            kept.append(off)
        else:
            held.append(off)
    return kept, begin


def _committed(spark, logs: list[list[str]]) -> tuple[dict[str, list[int]], dict[str, int]]:
    rows = [(f"c{i}", "log", None, None, off, 0, off, None, kind, "{}")
            for i, types in enumerate(logs) for off, kind in enumerate(types)]
    rel = spark.createDataFrame(rows, SCHEMA)
    done, pending = committed(rel, transaction_markers(rel).toArrow())
    got_kept: dict[str, list[int]] = {}
    for r in done.collect():
        got_kept.setdefault(r.cluster_id, []).append(r.offset)
    return {k: sorted(v) for k, v in got_kept.items()}, pending


def test_nested_begin_is_ignored_like_kafkas_loader(spark):
    """MetadataBatchLoader.replay throws on a Begin inside an open transaction and
    loadBatch skips it: the records before and after it commit together at the End, fall
    together at an Abort, and stay held (from the outer Begin) while none came yet."""
    c = "PartitionChangeRecord"
    kept, pending = _committed(spark, [
        [BEGIN, c, BEGIN, c, END, c],  # 1, 3 commit at the End; 5 is outside
        [BEGIN, c, BEGIN, c, ABORT, c],  # 1, 3 dropped
        [c, BEGIN, c, BEGIN, c],  # still open from offset 1
        [END, c, ABORT, c],  # unmatched End / Abort: ignored
    ])
    assert kept == {"c0": [1, 3, 5], "c1": [5], "c2": [0], "c3": [1, 3]}
    assert pending == {"c2": 1}


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                                 HealthCheck.function_scoped_fixture])
@given(st.lists(st.lists(st.sampled_from(KINDS), max_size=40), min_size=1, max_size=4))
def test_committed_equals_the_sequential_rule(spark, logs):
    got_kept, got_pending = _committed(spark, logs)
    for i, types in enumerate(logs):
        kept, open_begin = reference(types)
        assert got_kept.get(f"c{i}", []) == kept, types
        assert got_pending.get(f"c{i}") == open_begin, types


def test_snapshot_records_inside_an_aborted_or_open_range_are_kept(spark):
    """A snapshot's records carry the snapshot's last log offset, which can fall inside a
    transaction of the log that was aborted or is still open: they are Kafka's committed
    state all the same (a snapshot holds only what took effect)."""
    c = "PartitionChangeRecord"
    log = [("c0", "log", None, None, off, 0, off, None, kind, "{}")
           for off, kind in enumerate([BEGIN, c, c, ABORT, BEGIN, c, c])]
    snap = [("c0", "snapshot", "reset", 3, 2, 1, 7, None, "PartitionRecord", "{}"),
            ("c0", "snapshot", "reset", 6, 5, 1, 8, None, "PartitionRecord", "{}")]
    rel = spark.createDataFrame(log + snap, SCHEMA)
    done, pending = committed(rel, transaction_markers(rel).toArrow())
    assert sorted((r.source, r.offset) for r in done.collect()) == [
        ("snapshot", 2), ("snapshot", 5)]
    assert pending == {"c0": 4}
