"""The event rules of `kraft.events` applied to the reference replay's steps, one at a time.

This is the plain sequential reading the Spark kernel must reproduce (the hypothesis test),
the events the report's oracle groups into incidents, and what the simulator's decided labels
are held against without Spark (tests/simulate/test_scenarios.py).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from kraftlake.reference.replay import Step


def events_of(step: Step) -> list[str]:
    """The event names of one replay step (`Step.events`, detections dropped)."""
    return [e for e, _ in step.events()]


def event_lines(steps: Iterable[Step]) -> list[dict[str, Any]]:
    """labels.jsonl-shaped lines of the steps that have events."""
    return [{"offset": st.offset, "timestamp": st.timestamp, "topic_name": st.topic_name,
             "topic_id": st.topic_id, "partition_id": st.partition_id, "events": ev}
            for st in steps if (ev := events_of(st))]
