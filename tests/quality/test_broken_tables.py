"""Each silver/gold expectation, broken alone by one crafted edit of a lake built from real logs.

The base is the session's real lake (every suite passes on it, see test_real_lakes); an edit
changes one or two cells or rows of one table, the suites reading that table are validated
again, and exactly the targeted expectation must fail - with the broken row in its sample.
"""

from __future__ import annotations

from collections.abc import Callable

import pyarrow as pa
import pytest

from kraftlake.quality.suites import checks
from tests.quality import crafted as C
from tests.quality.conftest import affected, assert_only_failure, validate

Edit = Callable[[pa.Table], pa.Table]


def _closed(pred: Callable[[dict], bool] = lambda r: True) -> Callable[[dict], bool]:
    """A timeline row that is not the partition's current state (so current is unaffected)."""
    return lambda r: r["valid_to_offset"] is not None and pred(r)


def _timeline(pred: Callable[[dict], bool], column: str, value: Callable[[dict], object]) -> Edit:
    def edit(t: pa.Table) -> pa.Table:
        i = C.find_row(t, _closed(pred))
        return C.set_cell(t, i, column, value(t.slice(i, 1).to_pylist()[0]))
    return edit


def _cell(pred: Callable[[dict], bool], column: str, value: Callable[[dict], object]) -> Edit:
    def edit(t: pa.Table) -> pa.Table:
        i = C.find_row(t, pred)
        return C.set_cell(t, i, column, value(t.slice(i, 1).to_pylist()[0]))
    return edit


def _multi(*edits: Callable[[pa.Table], pa.Table]) -> Edit:
    def edit(t: pa.Table) -> pa.Table:
        for e in edits:
            t = e(t)
        return t
    return edit


def _recovery_event(started_delta: int, duration: int) -> Edit:
    """Add a recovery_completed event on an existing partition_created event's state."""
    def edit(t: pa.Table) -> pa.Table:
        i = C.find_row(t, lambda r: r["event_type"] == "partition_created")
        row = t.slice(i, 1).to_pylist()[0]
        row.update(event_type="recovery_completed", detection="crafted",
                   prev_leader_recovery_state=1, new_leader_recovery_state=0,
                   recovery_started_offset=row["offset"] + started_delta,
                   recovery_duration_ms=duration)
        return pa.concat_tables([t, pa.Table.from_pylist([row], schema=t.schema)])
    return edit


def _dup_and_drop(t: pa.Table) -> pa.Table:
    """Duplicate the first current row and drop the last: same count, one key twice."""
    return pa.concat_tables([C.drop_row(t, t.num_rows - 1), t.slice(0, 1)])


CHANGE = lambda r: r["record_type"] == "PartitionChangeRecord"  # noqa: E731
ANY = lambda r: True  # noqa: E731

# (suite, expectation) -> {table: edit}
CASES: dict[tuple[str, str], dict[str, Edit]] = {
    ("partition_changes", "partition_changes_volume"): {"partition_changes": C.empty},
    ("partition_changes", "no_unexpected_nulls"): {
        "partition_changes": _cell(lambda r: r["is_reset"], "leader_epoch", lambda r: None)},
    ("partition_changes", "topic_id_resolves"): {
        "topics": lambda t: C.drop_row(t, C.find_row(t, ANY))},
    ("partition_changes", "change_targets_live_partition"): {
        "partition_changes": _cell(CHANGE, "partition_id", lambda r: 9999)},
    ("partition_timeline", "partition_timeline_volume"): {
        "partition_timeline": C.empty, "partition_events": C.empty,
        "partition_current": C.empty},
    ("partition_timeline", "no_unexpected_nulls"): {
        "partition_timeline": _timeline(ANY, "last_known_elr", lambda r: None)},
    ("partition_timeline", "leader_in_isr"): {
        "partition_timeline": _timeline(ANY, "leader", lambda r: 9999)},
    ("partition_timeline", "isr_subset_of_replicas"): {
        "partition_timeline": _timeline(ANY, "isr", lambda r: [*r["isr"], 9999])},
    ("partition_timeline", "elr_disjoint_from_isr"): {
        "partition_timeline": _timeline(lambda r: bool(r["isr"]), "eligible_leader_replicas",
                                        lambda r: [r["isr"][0]])},
    ("partition_timeline", "leader_recovery_state_valid"): {
        "partition_timeline": _timeline(ANY, "leader_recovery_state", lambda r: 2)},
    ("partition_timeline", "recovering_isr_at_most_one"): {
        "partition_timeline": _multi(
            _timeline(lambda r: len(r["isr"]) > 1, "recovering_since_offset",
                      lambda r: r["valid_from_offset"]),
            _timeline(lambda r: len(r["isr"]) > 1, "leader_recovery_state", lambda r: 1))},
    ("partition_timeline", "leader_epoch_non_decreasing"): {
        "partition_timeline": _timeline(CHANGE, "leader_epoch", lambda r: -1)},
    ("partition_timeline", "partition_epoch_plus_one"): {
        "partition_timeline": _timeline(CHANGE, "partition_epoch",
                                        lambda r: r["partition_epoch"] + 5)},
    ("partition_timeline", "valid_from_before_valid_to"): {
        "partition_timeline": _timeline(ANY, "valid_to_offset",
                                        lambda r: r["valid_from_offset"])},
    ("partition_events", "partition_events_volume"): {"partition_events": C.empty},
    ("partition_events", "no_unexpected_nulls"): {
        "partition_events": _cell(ANY, "timestamp", lambda r: None)},
    ("partition_events", "event_type_known"): {
        "partition_events": _cell(ANY, "event_type", lambda r: "coffee_break")},
    ("partition_events", "event_in_timeline"): {
        "partition_events": _cell(lambda r: r["event_type"] != "partition_deleted", "offset",
                                  lambda r: r["offset"] + 10_000_000)},
    ("partition_events", "recovery_started_before_completion"): {
        "partition_events": _recovery_event(started_delta=5, duration=100)},
    ("partition_events", "recovery_duration_non_negative"): {
        "partition_events": _recovery_event(started_delta=-5, duration=-100)},
    ("partition_current", "current_covers_timeline"): {
        "partition_current": lambda t: C.drop_row(t, 0)},
    ("partition_current", "no_unexpected_nulls"): {
        "partition_current": _cell(ANY, "valid_from_ts", lambda r: None)},
    ("partition_current", "one_row_per_partition"): {"partition_current": _dup_and_drop},
    ("partition_current", "current_matches_timeline"): {
        "partition_current": _cell(ANY, "leader_epoch", lambda r: r["leader_epoch"] + 1)},
}


def test_every_table_expectation_has_a_case():
    """Every expectation of the silver/gold suites is broken by exactly one case here."""
    names = {(s, c.name) for s in ["partition_changes", "partition_timeline",
                                   "partition_events", "partition_current"]
             for c in checks(s)}
    assert names == set(CASES)


@pytest.mark.parametrize("suite,name", sorted(CASES), ids=lambda v: str(v))
def test_broken_table_fails_only_its_expectation(spark, qctx, pristine, tmp_path, suite, name):
    edits = CASES[(suite, name)]
    lake = C.edited_copy(pristine, tmp_path / "lake", edits)
    run = validate(spark, qctx, lake, affected(list(edits)))
    out = assert_only_failure(run, suite, name)
    # the right reason: GX names the offending rows (or the observed table-level value)
    assert out.unexpected_sample or out.observed_value is not None, out
