"""`fold.silver.committed` (metadata transactions) == a sequential reading of the markers.

Kafka's rule (kraft-semantics, metadata transactions): records between BeginTransaction and
AbortTransaction never take effect; records after a Begin whose End has not been written
yet are held back until it is. Each example is one Spark job over several clusters.
"""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pyspark.sql import types as T

from kraftlake.fold.silver import MARKERS, committed

BEGIN, END, ABORT = MARKERS
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
        if kind == BEGIN:
            held, begin = [], off  # a Begin inside an open one: its records are dropped
        elif kind == END:
            kept += held
            held, begin = [], None
        elif kind == ABORT:
            held, begin = [], None
        elif begin is None:
            kept.append(off)
        else:
            held.append(off)
    return kept, begin


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                                 HealthCheck.function_scoped_fixture])
@given(st.lists(st.lists(st.sampled_from(KINDS), max_size=40), min_size=1, max_size=4))
def test_committed_equals_the_sequential_rule(spark, logs):
    rows = [(f"c{i}", "log", None, None, off, 0, off, None, kind, "{}")
            for i, types in enumerate(logs) for off, kind in enumerate(types)]
    done, pending = committed(spark.createDataFrame(rows, SCHEMA))
    got_kept: dict[str, list[int]] = {}
    for r in done.collect():
        got_kept.setdefault(r.cluster_id, []).append(r.offset)
    got_pending = {r.cluster_id: r.pending_txn_from for r in pending.collect()}
    for i, types in enumerate(logs):
        kept, open_begin = reference(types)
        assert sorted(got_kept.get(f"c{i}", [])) == kept, types
        assert got_pending.get(f"c{i}") == open_begin, types
