"""What the kernel needs to know of the cluster at an offset, as small histories.

The rules judge a partition step with two cluster facts in force at its offset: the
topic's configured min.insync.replicas (topic value, else the cluster default, else the
controllers' static default: `kraft.configs.resolve_min_isr`) and metadata.version (None
before any FeatureLevelRecord: logs below 3.3-IV0 have none). Both change rarely, so they
travel to the executors as sorted histories (a broadcast value of a few kilobytes) and are
looked up by bisection, instead of as-of joins against every partition row. The same
collect gives each cluster's attribution window history (`kraft.timing`), which the
incidents' broker outages read. The increment adds the offsets it could not read
(`unknown`), which no history can answer for.

Points are (offset, seq): a value written at (o, s) is in force for rows at (o, s) and after,
so a snapshot's configs (seq 1 at its end offset - 1) apply to the snapshot's own partitions.
RemoveTopicRecord drops the topic's configs (Kafka's `ConfigurationsDelta`): a topic
re-created under the same name does not inherit them, so a deletion is a point with no value.
"""

from __future__ import annotations

from bisect import bisect_right
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar

import pyarrow as pa

from ..kraft.configs import (
    CLUSTER_DEFAULT,
    MIN_ISR,
    RESOURCE_BROKER,
    RESOURCE_TOPIC,
    resolve_min_isr,
)
from ..kraft.timing import TIMING_KEYS, ConfigPoint, window_history
from ..kraft.versions import MV_FEATURE

Point = tuple[int, int]  # (offset, seq)
END: Point = (2**63, 0)  # after every offset: no later point
T = TypeVar("T")
ConfigValue = str | None  # a config's value as written; None: deleted with its topic


@dataclass
class History(Generic[T]):
    """Values over (offset, seq) points, in order; `at` is the value in force (None before
    the first point)."""

    points: list[Point] = field(default_factory=list)
    values: list[T] = field(default_factory=list)

    @classmethod
    def of(cls, entries: list[tuple[int, int, T]]) -> History[T]:
        entries = sorted(entries, key=lambda e: (e[0], e[1]))
        return cls([(o, s) for o, s, _ in entries], [v for _, _, v in entries])

    def at(self, offset: int, seq: int) -> T | None:
        return self.span(offset, seq)[0]

    def span(self, offset: int, seq: int) -> tuple[T | None, Point]:
        """The value in force at (offset, seq), and the point the next value starts at
        (`END`: none does): until then, `at` answers the same."""
        i = bisect_right(self.points, (offset, seq))
        return (self.values[i - 1] if i else None), (
            self.points[i] if i < len(self.points) else END)


@dataclass
class ClusterContext:
    """One cluster's topic names and the histories the rules read (see the module doc)."""

    topic_names: dict[str, str]  # topic id -> name
    topic_min_isr: dict[str, History[ConfigValue]]  # topic name -> its own min.insync.replicas
    cluster_min_isr: History[ConfigValue]
    metadata_version: History[int]  # feature levels
    default_min_isr: int
    # (offset, seq, attribution window in ms) from there on: `kraft.timing.window_history`
    windows: list[tuple[int, int, int]] = field(default_factory=lambda: window_history([]))
    # the increment's unknown offsets, [lo, hi) with the damaged batch's time (microseconds,
    # None when unreadable), in order: every live partition's state is carried across them
    # and marked uncertain (`fold.kernel`)
    unknown: list[tuple[int, int, int | None]] = field(default_factory=list)

    def min_isr(self, topic_name: str | None, offset: int, seq: int) -> int | None:
        return self.min_isr_span(topic_name, offset, seq)[0]

    def min_isr_span(self, topic_name: str | None, offset: int, seq: int
                     ) -> tuple[int | None, Point]:
        """`min_isr`, and the point from which it may differ: a partition's changes ask
        at every step, and the answer changes only with a config record."""
        own = self.topic_min_isr.get(topic_name) if topic_name is not None else None
        topic_value, topic_until = (None, END) if own is None else own.span(offset, seq)
        cluster_value, cluster_until = self.cluster_min_isr.span(offset, seq)
        return resolve_min_isr(topic_value, cluster_value, self.default_min_isr), min(
            topic_until, cluster_until)

    def mv(self, offset: int, seq: int) -> int | None:
        return self.metadata_version.at(offset, seq)

    def mv_span(self, offset: int, seq: int) -> tuple[int | None, Point]:
        """`mv`, and the point from which it may differ (`History.span`)."""
        return self.metadata_version.span(offset, seq)


def _in_context(r: dict[str, Any]) -> bool:
    """A configs row the kernel's rules read: a min.insync.replicas of a topic or of the
    cluster default, a broker config of the attribution window's keys, metadata.version."""
    if r["kind"] == "feature":
        return bool(r["name"] == MV_FEATURE)
    if r["kind"] != "config":
        return False
    broker = r["resource_type"] == RESOURCE_BROKER
    if r["name"] == MIN_ISR:
        return bool(r["resource_type"] == RESOURCE_TOPIC or (
            broker and r["resource_name"] == CLUSTER_DEFAULT))
    return bool(broker and r["name"] in TIMING_KEYS)


def cluster_contexts(configs: pa.Table, topics: pa.Table,
                     default_min_isr: int) -> dict[str, ClusterContext]:
    """The context of every cluster in `configs` (rows of the configs table) and `topics`
    (cluster_id, topic_id, topic_name, deleted_offset), as Arrow: the driver holds both for
    a small increment, and the rows the rules read are few (`_in_context`)."""
    fields = ["cluster_id", "kind", "resource_type", "resource_name", "name", "offset",
              "seq", "value", "feature_level"]
    # each row once: an increment's configs are the held rows and its own, which a re-run
    # may hold twice
    cfg = {tuple(r[f] for f in fields): r for r in configs.select(fields).to_pylist()
           if _in_context(r)}
    names: dict[str, dict[str, str]] = {}
    own: dict[str, dict[str, list[tuple[int, int, ConfigValue]]]] = {}
    cluster: dict[str, list[tuple[int, int, ConfigValue]]] = {}
    mv: dict[str, list[tuple[int, int, int]]] = {}
    timing: dict[str, list[ConfigPoint]] = {}
    for r in cfg.values():
        cid = r["cluster_id"]
        if r["kind"] == "feature":
            mv.setdefault(cid, []).append((r["offset"], r["seq"], r["feature_level"]))
        elif r["name"] in TIMING_KEYS:
            timing.setdefault(cid, []).append(
                (r["offset"], r["seq"], r["name"], r["resource_name"], r["value"]))
        elif r["resource_type"] == RESOURCE_TOPIC:
            own.setdefault(cid, {}).setdefault(r["resource_name"], []).append(
                (r["offset"], r["seq"], r["value"]))
        else:
            cluster.setdefault(cid, []).append((r["offset"], r["seq"], r["value"]))
    for t in topics.select(["cluster_id", "topic_id", "topic_name", "deleted_offset"]
                           ).to_pylist():
        cid = t["cluster_id"]
        names.setdefault(cid, {})[t["topic_id"]] = t["topic_name"]
        if t["deleted_offset"] is not None and t["topic_name"] is not None:
            own.setdefault(cid, {}).setdefault(t["topic_name"], []).append(
                (t["deleted_offset"], 0, None))
    return {cid: ClusterContext(
        topic_names=names.get(cid, {}),
        topic_min_isr={k: History.of(v) for k, v in own.get(cid, {}).items()},
        cluster_min_isr=History.of(cluster.get(cid, [])),
        metadata_version=History.of(mv.get(cid, [])), default_min_isr=default_min_isr,
        windows=window_history(timing.get(cid, [])))
        for cid in {*names, *own, *cluster, *mv, *timing}}
