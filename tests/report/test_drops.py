"""Which events drop a broker (`incidents.drop_rows`, then `_drops`), on the edge
cases of its lists: empty and null ISRs, a leader of -1 (none), a null new leader, no events
at all. The expected drops are read off the rule as the module states it: a broker leaves when the
previous ISR holds it and the new one does not, or when it was the leader and is no more."""

from __future__ import annotations

from datetime import UTC, datetime

import pyarrow as pa
import pytest

from kraftlake import incidents
from kraftlake.incidents import _drops, drop_rows

SCHEMA = pa.schema([("cluster_id", pa.string()), ("offset", pa.int64()),
                    ("timestamp", pa.timestamp("us", "UTC")),
                    ("prev_isr", pa.list_(pa.int32())), ("new_isr", pa.list_(pa.int32())),
                    ("prev_leader", pa.int32()), ("new_leader", pa.int32())])


def _events(*rows: tuple) -> pa.Table:
    return pa.Table.from_pylist([dict(zip(SCHEMA.names, ("c", *r), strict=True))
                                 for r in rows], SCHEMA)


def _got(events: pa.Table) -> dict[int, list[int]]:
    return {b: d.offsets.tolist() for b, d in sorted(_drops(drop_rows(events)).items())}


def test_no_events_drop_nobody() -> None:
    assert _got(SCHEMA.empty_table()) == {}


@pytest.mark.parametrize("batch_rows", [1_000_000, 2])
def test_lists_empty_null_and_leaders_none(batch_rows: int, monkeypatch) -> None:
    """The same drops whether the events are looked at together or two at a time."""
    monkeypatch.setattr(incidents, "_BATCH_ROWS", batch_rows)
    t = datetime(2026, 1, 1, tzinfo=UTC)
    events = _events(
        (10, t, [1, 2, 3], [], 1, -1),        # everyone leaves; 1 was the leader
        (11, t, [4], None, -1, 5),            # a null new ISR holds nobody; -1 led nothing
        (12, t, None, [6], 6, None),          # a null new leader: 6 no longer leads
        (13, t, [7, 8], [8, 7], 7, 7),        # same members, same leader: no drop
        (14, None, [9], [], None, None),      # no time: still a drop (looked up without it)
        (15, t, [1], [], 1, None),            # 1 again, by both rules at once: one drop
    )
    assert _got(events) == {1: [10, 15], 2: [10], 3: [10], 4: [11], 6: [12], 9: [14]}
    nine = _drops(drop_rows(events))[9]
    assert not nine.timed[0]
    assert nine.first_near(20, 0) is None  # a drop with no time is never "near"
    assert _drops(drop_rows(events))[1].first_near(11, int(t.timestamp() * 1e6)) == (
        10, int(t.timestamp() * 1e6))
