"""Which events drop a broker (`incidents._batch_drops`), on the edge cases of its lists:
empty and null ISRs, a leader of -1 (none), a null new leader, no events at all; and which
drop moves an outage's start (`_near_drops`, `_moved`). The expected drops are read off the
rule as the module states it: a broker leaves when the previous ISR holds it and the new one
does not, or when it was the leader and is no more."""

from __future__ import annotations

from datetime import UTC, datetime

import numpy as np
import pyarrow as pa
import pytest

from kraftlake.incidents import (
    _OUTAGE_ARROW,
    DROP_ARROW,
    SAME_WRITE_MS,
    _batch_drops,
    _first_drops,
    _moved,
    _outage_keys,
)

SCHEMA = pa.schema([("cluster_id", pa.string()), ("offset", pa.int64()),
                    ("timestamp", pa.timestamp("us", "UTC")),
                    ("prev_isr", pa.list_(pa.int32())), ("new_isr", pa.list_(pa.int32())),
                    ("prev_leader", pa.int32()), ("new_leader", pa.int32())])


def _events(*rows: tuple) -> pa.Table:
    return pa.Table.from_pylist([dict(zip(SCHEMA.names, ("c", *r), strict=True))
                                 for r in rows], SCHEMA)


def _got(events: pa.Table, batch_rows: int = 1_000_000) -> dict[int, list[int]]:
    """broker -> the offsets of the events that drop it, looked at `batch_rows` at a time."""
    drops = pa.concat_tables([DROP_ARROW.empty_table(), *(
        _batch_drops(b) for b in events.to_batches(batch_rows))])
    brokers, offsets = drops["broker"].to_numpy(), drops["offset"].to_numpy()
    return {int(b): np.unique(offsets[brokers == b]).tolist() for b in np.unique(brokers)}


def _outages(*runs: tuple[int, int, datetime | None]) -> pa.Table:
    """Outages of cluster "c" (broker, start offset, start time) as `outage_runs` makes them."""
    return pa.Table.from_pylist([
        {"cluster_id": "c", "broker_id": b, "cause": "broker_fenced", "start_offset": o,
         "start_ts": t, "end_offset": None, "end_ts": None, "window_ms": 0}
        for b, o, t in runs], _OUTAGE_ARROW)


def _starts(outages: pa.Table, events: pa.Table) -> list[tuple[int, datetime | None]]:
    """Each outage's start once the events' drops moved it (`broker_outages`' driver side)."""
    moved = _moved(outages, _first_drops(_outage_keys(outages), events.to_batches(2)))
    return list(zip(moved["start_offset"].to_pylist(), moved["start_ts"].to_pylist(),
                    strict=True))


def test_no_events_drop_nobody() -> None:
    assert _got(SCHEMA.empty_table()) == {}


@pytest.mark.parametrize("batch_rows", [1_000_000, 2])
def test_lists_empty_null_and_leaders_none(batch_rows: int) -> None:
    """The same drops whether the events are looked at together or two at a time."""
    t = datetime(2026, 1, 1, tzinfo=UTC)
    events = _events(
        (10, t, [1, 2, 3], [], 1, -1),        # everyone leaves; 1 was the leader
        (11, t, [4], None, -1, 5),            # a null new ISR holds nobody; -1 led nothing
        (12, t, None, [6], 6, None),          # a null new leader: 6 no longer leads
        (13, t, [7, 8], [8, 7], 7, 7),        # same members, same leader: no drop
        (14, None, [9], [], None, None),      # no time: still a drop (looked up without it)
        (15, t, [1], [], 1, None),            # 1 again, by both rules at once: one drop
    )
    assert _got(events, batch_rows) == {1: [10, 15], 2: [10], 3: [10], 4: [11], 6: [12],
                                        9: [14]}


def test_an_outage_starts_at_its_first_drop_in_the_same_controller_write() -> None:
    """A change dropping the outage's broker at an earlier offset, at most SAME_WRITE_MS
    before the broker record, moves the outage's start to the earliest such change; a drop
    of another broker, too early, at or after the start, or without a time moves nothing."""
    t = datetime(2026, 1, 1, tzinfo=UTC)
    ms = SAME_WRITE_MS / 1000

    def at(seconds: float) -> datetime:
        return datetime.fromtimestamp(t.timestamp() + seconds, UTC)

    events = _events(
        (10, at(-2 * ms), [1, 2], [2], 1, 2),   # 1 dropped, but two writes before
        (11, at(-ms), [1, 2], [2], 2, 2),       # 1 dropped, exactly SAME_WRITE_MS before
        (12, at(-0.5 * ms), [1, 3], [3], 3, 3),  # 1 again: a later drop of the same write
        (13, at(-0.1 * ms), [4], [], 4, -1),    # 4 dropped, but 4's outage has no time
        (14, None, [5], [], 5, -1),             # 5 dropped at no known time
        (21, at(0), [6], [], 6, -1),            # 6 dropped after its outage's record
    )
    outages = _outages((1, 20, t), (2, 20, t), (4, 20, None), (5, 20, t), (6, 20, t))
    assert _starts(outages, events) == [(11, at(-ms)), (20, t), (20, None), (20, t), (20, t)]
    assert _starts(outages, _events()) == [(20, t), (20, t), (20, None), (20, t), (20, t)]
