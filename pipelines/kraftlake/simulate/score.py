"""Scoring what the pipeline found against the simulator's ground truth (`labels.jsonl`).

The demo, `benchmarks/bench_events.py` and the label tests all use these, so they measure
the same thing in the same way: an event is identified by (topic id, partition, offset,
event type), and a pipeline event counts as found only when a label has that exact key.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from kraftlake.kraft.events import EVENT_TYPES

if TYPE_CHECKING:
    from rich.console import Console

# (topic_id, partition_id, offset, event_type): the identity of an event in labels.jsonl
EventKey = tuple[str, int, int, str]


def read_labels(sim_dir: Path) -> list[dict[str, Any]]:
    """The lines of `labels.jsonl` (one per change record and partition that is an event).

    Args:
        sim_dir: a directory `simulate_cluster` wrote.

    Returns:
        One dict per line: offset, timestamp, topic name and id, partition id, `events`.

    Example:
        >>> import tempfile
        >>> from pathlib import Path
        >>> from kraftlake import simulate_cluster
        >>> sim = Path(tempfile.mkdtemp()) / "sim"
        >>> summary = simulate_cluster(sim, scenario="broker-crash", seed=1, hours=0.1)
        >>> from kraftlake import read_labels
        >>> labels = read_labels(sim)
        >>> len(labels) == summary["labels"], sorted(labels[0])
        (True, ['events', 'offset', 'partition_id', 'timestamp', 'topic_id', 'topic_name'])
    """
    with open(sim_dir / "labels.jsonl") as f:
        return [json.loads(line) for line in f if line.strip()]


def label_keys(labels: Iterable[dict[str, Any]]) -> set[EventKey]:
    """Keys of every labelled event (a label line may name several).

    Args:
        labels: `read_labels`' lines.

    Returns:
        A set of (topic id, partition id, offset, event type).

    Example:
        >>> from kraftlake import label_keys
        >>> label_keys([{"topic_id": "t", "partition_id": 0, "offset": 7,
        ...              "events": ["isr_shrink", "under_min_isr"]}]) == {
        ...     ("t", 0, 7, "isr_shrink"), ("t", 0, 7, "under_min_isr")}
        True
    """
    return {(x["topic_id"], x["partition_id"], x["offset"], e)
            for x in labels for e in x["events"]}


def event_keys(rows: Iterable[Any]) -> set[EventKey]:
    """Keys of `partition_events` rows (Spark Rows or dicts). All rows count, snapshot rows
    (seq 1) included: labels have none, so any such event is a false positive.

    Args:
        rows: `partition_events` rows (e.g. `lake_events`' dicts).

    Returns:
        A set of (topic id, partition id, offset, event type), as `label_keys` makes.

    Example:
        >>> from kraftlake import event_keys
        >>> event_keys([{"topic_id": "t", "partition_id": 0, "offset": 7,
        ...              "event_type": "isr_shrink"}])
        {('t', 0, 7, 'isr_shrink')}
    """
    return {(r["topic_id"], r["partition_id"], r["offset"], r["event_type"]) for r in rows}


@dataclass
class Score:
    """Per event type: true positives, false positives (pipeline only), false negatives.

    `compare` makes one; `precision(t)` and `recall(t)` of event type `t`, `exact` when
    nothing differs, `types()` the event types seen, `add` sums another into this one.

    Example:
        >>> from kraftlake import compare
        >>> s = compare({("t", 0, 7, "isr_shrink")}, {("t", 0, 7, "isr_shrink"),
        ...                                           ("t", 0, 9, "isr_expand")})
        >>> s.exact, s.precision("isr_expand"), s.recall("isr_expand")
        (False, 1.0, 0.0)
    """

    tp: Counter = field(default_factory=Counter)
    fp: Counter = field(default_factory=Counter)
    fn: Counter = field(default_factory=Counter)
    fp_examples: dict[str, list[EventKey]] = field(default_factory=dict)
    fn_examples: dict[str, list[EventKey]] = field(default_factory=dict)

    def types(self) -> list[str]:
        seen = set(self.tp) | set(self.fp) | set(self.fn)
        return [t for t in EVENT_TYPES if t in seen] + sorted(seen - set(EVENT_TYPES))

    def precision(self, t: str) -> float:
        d = self.tp[t] + self.fp[t]
        return self.tp[t] / d if d else 1.0

    def recall(self, t: str) -> float:
        d = self.tp[t] + self.fn[t]
        return self.tp[t] / d if d else 1.0

    @property
    def exact(self) -> bool:
        return not (+self.fp) and not (+self.fn)

    def add(self, other: Score) -> None:
        self.tp.update(other.tp)
        self.fp.update(other.fp)
        self.fn.update(other.fn)


def compare(events: set[EventKey], labels: set[EventKey], examples: int = 5) -> Score:
    """Precision/recall bookkeeping of pipeline events against labels, by exact key.

    Args:
        events: the pipeline's keys (`event_keys`).
        labels: the ground truth's keys (`label_keys`).
        examples: keys kept per event type of each kind of difference.

    Returns:
        The `Score`.

    Example:
        >>> from kraftlake import compare
        >>> compare({("t", 0, 7, "isr_shrink")}, {("t", 0, 7, "isr_shrink")}).exact
        True
    """
    s = Score()
    for k in events & labels:
        s.tp[k[3]] += 1
    for k in sorted(events - labels, key=lambda k: (k[2], k[0], k[1])):
        s.fp[k[3]] += 1
        s.fp_examples.setdefault(k[3], [])
        if len(s.fp_examples[k[3]]) < examples:
            s.fp_examples[k[3]].append(k)
    for k in sorted(labels - events, key=lambda k: (k[2], k[0], k[1])):
        s.fn[k[3]] += 1
        s.fn_examples.setdefault(k[3], [])
        if len(s.fn_examples[k[3]]) < examples:
            s.fn_examples[k[3]].append(k)
    return s


def print_score(console: Console, score: Score, events: list[dict[str, Any]],
                n_labels: int) -> None:
    """Print the check of `events` (the lake's `partition_events` rows of the simulated
    cluster) against its `n_labels` labelled events: an exact match, or what differs by event
    type with examples. `kraftlake demo` prints it below the incidents
    (`report.console.print_incidents`).

    Args:
        console: a `rich` console to print on.
        score: `compare`'s result for `events`.
        events: the `partition_events` rows compared.
        n_labels: the number of labelled events.

    Example:
        >>> from rich.console import Console
        >>> from kraftlake import compare, print_score
        >>> row = {"topic_id": "t", "partition_id": 0, "offset": 7, "event_type": "isr_shrink"}
        >>> key = ("t", 0, 7, "isr_shrink")
        >>> print_score(Console(width=100, no_color=True), compare({key}, {key}), [row], 1)
        ground truth: 1 events == 1 labelled events (labels.jsonl): exact match
    """
    n_ev = len(event_keys(events))
    if score.exact:
        console.print(f"[bold green]ground truth: {n_ev} events == {n_labels} labelled events "
                      f"(labels.jsonl): exact match[/]")
    else:
        fp, fn = sum(score.fp.values()), sum(score.fn.values())
        console.print(f"[bold red]ground truth: {n_ev} events vs {n_labels} labelled: "
                      f"{fp} not in labels, {fn} missed[/]")
        for name in score.types():
            if score.fp[name] or score.fn[name]:
                console.print(f"  {name}: +{score.fp[name]} -{score.fn[name]}  e.g. "
                              f"extra {score.fp_examples.get(name, [])[:2]} "
                              f"missed {score.fn_examples.get(name, [])[:2]}")
