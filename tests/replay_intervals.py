"""The README's partition trouble intervals over the reference replay's steps, one at a time.

A plain sweep, restated from the README rather than imported from `kraftlake.kraft.troubles`:
the report's oracle (tests/report/oracle.py) and the hypothesis test of the kernel
(tests/fold/test_fold_hypothesis.py) hold kraftlake's intervals against it.
"""

from __future__ import annotations

from collections import defaultdict

from kraftlake.reference.replay import DELETED, Step


def kinds_of(state, min_isr: int | None) -> set[str]:
    """The README's interval kinds a partition state is in."""
    n_isr, n_rep = len(state.isr), len(state.replicas)
    # Kafka's replication factor: replicas being added by a reassignment do not count
    factor = len([r for r in state.replicas if r not in (state.adding_replicas or ())])
    out = set()
    if state.leader == -1:
        out.add("offline")
    if min_isr is not None and n_isr < min(min_isr, n_rep):  # None: unparseable, no threshold
        out.add("under_min_isr")
    if state.leader_recovery_state == 1:
        out.add("recovering")
    if state.adding_replicas or state.removing_replicas:
        out.add("reassigning")
    if n_isr == 1 < factor:
        out.add("single_isr")
    if n_isr < factor:
        out.add("under_replicated")
    return out


class IntervalSweep:
    """Feed it every step in log order (`step`), then `close`: `intervals` maps
    (topic_id, partition_id, kind, start offset) to the end offset (None = still open). A
    kind starts at the first step whose state is in it and ends at the first that is not, or
    at the partition's deletion."""

    def __init__(self) -> None:
        self.intervals: dict[tuple, int | None] = {}
        self._open: dict[tuple, dict[str, int]] = defaultdict(dict)

    def step(self, st: Step) -> None:
        key = (st.topic_id, st.partition_id)
        if st.kind == DELETED:
            for kind, start in self._open.pop(key, {}).items():
                self.intervals[(*key, kind, start)] = st.offset
            return
        now = kinds_of(st.after, st.context.min_isr)
        for kind in list(self._open[key]):
            if kind not in now:
                self.intervals[(*key, kind, self._open[key].pop(kind))] = st.offset
        for kind in now - set(self._open[key]):
            self._open[key][kind] = st.offset

    def close(self) -> dict[tuple, int | None]:
        for key, kinds in self._open.items():
            for kind, start in kinds.items():
                self.intervals[(*key, kind, start)] = None
        self._open.clear()
        return self.intervals
