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
from typing import Generic, TypeVar

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

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
        i = bisect_right(self.points, (offset, seq))
        return self.values[i - 1] if i else None


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
        own = self.topic_min_isr.get(topic_name) if topic_name is not None else None
        return resolve_min_isr(None if own is None else own.at(offset, seq),
                               self.cluster_min_isr.at(offset, seq), self.default_min_isr)

    def mv(self, offset: int, seq: int) -> int | None:
        return self.metadata_version.at(offset, seq)


def cluster_contexts(configs: DataFrame, topics: DataFrame,
                     default_min_isr: int) -> dict[str, ClusterContext]:
    """Collect the context of every cluster in `configs` and `topics`: its
    `min.insync.replicas` and `metadata.version` records and the broker records of the
    attribution window's keys (rows of the configs table), and its topics (id, name,
    deleted_offset)."""
    config = F.col("kind") == "config"
    broker = F.col("resource_type") == RESOURCE_BROKER
    cfg = configs.filter(
        (config & (F.col("name") == MIN_ISR)
         & ((F.col("resource_type") == RESOURCE_TOPIC)
            | (broker & (F.col("resource_name") == CLUSTER_DEFAULT))))
        | (config & broker & F.col("name").isin(*TIMING_KEYS))
        | ((F.col("kind") == "feature") & (F.col("name") == MV_FEATURE))
    ).select("cluster_id", "kind", "resource_type", "resource_name", "name", "offset", "seq",
             "value", "feature_level").distinct().collect()
    tops = topics.select("cluster_id", "topic_id", "topic_name", "deleted_offset").collect()
    names: dict[str, dict[str, str]] = {}
    own: dict[str, dict[str, list[tuple[int, int, ConfigValue]]]] = {}
    cluster: dict[str, list[tuple[int, int, ConfigValue]]] = {}
    mv: dict[str, list[tuple[int, int, int]]] = {}
    timing: dict[str, list[ConfigPoint]] = {}
    for r in cfg:
        if r.kind == "feature":
            mv.setdefault(r.cluster_id, []).append((r.offset, r.seq, r.feature_level))
        elif r.name in TIMING_KEYS:
            timing.setdefault(r.cluster_id, []).append(
                (r.offset, r.seq, r.name, r.resource_name, r.value))
        elif r.resource_type == RESOURCE_TOPIC:
            own.setdefault(r.cluster_id, {}).setdefault(r.resource_name, []).append(
                (r.offset, r.seq, r.value))
        else:
            cluster.setdefault(r.cluster_id, []).append((r.offset, r.seq, r.value))
    for t in tops:
        names.setdefault(t.cluster_id, {})[t.topic_id] = t.topic_name
        if t.deleted_offset is not None and t.topic_name is not None:
            own.setdefault(t.cluster_id, {}).setdefault(t.topic_name, []).append(
                (t.deleted_offset, 0, None))
    return {cid: ClusterContext(
        topic_names=names.get(cid, {}),
        topic_min_isr={k: History.of(v) for k, v in own.get(cid, {}).items()},
        cluster_min_isr=History.of(cluster.get(cid, [])),
        metadata_version=History.of(mv.get(cid, [])), default_min_isr=default_min_isr,
        windows=window_history(timing.get(cid, [])))
        for cid in {*names, *own, *cluster, *mv, *timing}}
