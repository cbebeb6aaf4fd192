"""kraftlake's reading of a real controller's log equals what Kafka itself reports.

The session's cluster ran the incident scenario (scenario.py); Kafka's own view of the end
state was taken right after (conftest.Incidents): `kafka-topics --describe` per partition,
the metadata shell on a snapshot written after the scenario, the controller's election
counters over JMX. Two lakes are held against that view: `kraftlake ingest` of a copy of
the controller's log taken after the scenario (retention had deleted its first segments, so
it starts at a snapshot), and the lake `kraftlake stream` built while it tailed the live log
(the whole history). Their tables are read with delta-rs (a second Delta engine, no JVM to
start for a read; `kraftlake sql` has its own tests in tests/cli and tests/cluster).
"""

from __future__ import annotations

from collections import Counter
from itertools import pairwise
from pathlib import Path
from typing import Any

import deltalake
import pytest
from click.testing import CliRunner

from kraftlake.cli import main

from .cluster import log_start
from .scenario import Incidents


def kraftlake(*args: str) -> str:
    """`kraftlake ARGS` in this process (click's runner on the real command group). Callers
    hold the `spark` fixture, so the command runs on the worker's warm session with the
    tests' settings; as a process of its own, each ingest paid a JVM start, a new Spark
    session and its JIT compilation, more than the ingest of these small logs itself."""
    out = CliRunner().invoke(main, list(args), env={"COLUMNS": "200"})
    assert out.exit_code == 0, f"kraftlake {' '.join(args)}: {out.exception!r}\n{out.output}"
    return out.stdout


def table(lake: Path, name: str, columns: list[str]) -> list[dict[str, Any]]:
    """The rows of one lake table (those columns), read with delta-rs; none when nothing was
    ever written to it (a table is created by its first write)."""
    path = str(lake / name)
    if not deltalake.DeltaTable.is_deltatable(path):
        return []
    return deltalake.DeltaTable(path).to_pyarrow_table(columns=columns).to_pylist()


def ingest(log: Path, cluster_id: str, lake: Path) -> Path:
    kraftlake("ingest", str(log), "--lake", str(lake), "--cluster-id", cluster_id)
    return lake


def read_current(lake: Path) -> dict[tuple[str, int], dict[str, Any]]:
    rows = table(lake, "partition_current", [
        "topic_name", "partition_id", "leader", "leader_epoch", "partition_epoch", "isr",
        "eligible_leader_replicas", "last_known_elr", "replicas", "leader_recovery_state"])
    return {(r["topic_name"], r["partition_id"]): r for r in rows}


@pytest.fixture(scope="module")
def lake(spark, incidents: Incidents, tmp_path_factory: pytest.TempPathFactory) -> Path:
    return ingest(incidents.controller_log, incidents.cluster.cluster_id,
                  tmp_path_factory.mktemp("lake"))


@pytest.fixture(scope="module")
def current(lake: Path) -> dict[tuple[str, int], dict[str, Any]]:
    return read_current(lake)


def test_partition_current_equals_kafka_topics_describe(incidents: Incidents,
                                                        current) -> None:
    assert_equals_describe(incidents, current)


def test_observer_log_gives_kafkas_view_too(spark, incidents: Incidents, tmp_path: Path
                                            ) -> None:
    """A broker's copy of the metadata log (an observer's, written by replication, with its
    own segment rolls and snapshots) ingested alone gives the same current state."""
    observer = ingest(incidents.observer_log, incidents.cluster.cluster_id, tmp_path / "lake")
    assert_equals_describe(incidents, read_current(observer))


def test_live_stream_of_the_controller_log_gives_kafkas_view(incidents: Incidents) -> None:
    """`kraftlake stream` tailed the controller's live log while the scenario ran (rolls every
    16 KiB, snapshots every 10 s, retention after 3 min): a few triggers after the end its
    lake is Kafka's view."""
    assert incidents.stream_lake is not None
    assert_equals_describe(incidents, read_current(incidents.stream_lake))


def assert_equals_describe(incidents: Incidents,
                           current: dict[tuple[str, int], dict[str, Any]]) -> None:
    kafka = incidents.describe
    assert kafka, "kafka-topics --describe printed no partitions"
    mismatches = []
    for (topic, p), k in sorted(kafka.items()):
        ours = current.get((topic, p))
        if ours is None:
            mismatches.append(f"{topic}-{p}: not in partition_current")
            continue
        want = {"leader": k["Leader"], "replicas": k["Replicas"], "isr": k["Isr"],
                "eligible_leader_replicas": k.get("Elr", []),
                "last_known_elr": k.get("LastKnownElr", [])}
        got = {key: ours[key] if ours[key] is not None else [] for key in want}
        got["leader"] = ours["leader"]
        if got != want:
            mismatches.append(f"{topic}-{p}: kafka {want} kraftlake {got}")
    live = {key for key in current if key[0] in {t for t, _ in kafka}}
    assert not mismatches, "\n".join(mismatches)
    assert live == set(kafka), f"partitions only kraftlake has: {live - set(kafka)}"
    # deleted topics are gone in both
    assert not any(t == "churn" for t, _ in current)


def test_partition_current_equals_metadata_shell(incidents: Incidents, current) -> None:
    shell = incidents.shell
    assert shell, "the metadata shell printed no partitions"
    recovery = {"RECOVERED": 0, "RECOVERING": 1}
    mismatches = []
    for (topic, p), k in sorted(shell.items()):
        ours = current[(topic, p)]
        want = (k["leaderEpoch"], k["partitionEpoch"], recovery[k["leaderRecoveryState"]])
        got = (ours["leader_epoch"], ours["partition_epoch"], ours["leader_recovery_state"])
        if want != got:
            mismatches.append(f"{topic}-{p}: shell (epoch, partition epoch, recovery) {want}, "
                              f"kraftlake {got}")
    assert not mismatches, "\n".join(mismatches)


def test_live_stream_read_what_retention_then_deleted(incidents: Incidents) -> None:
    """Retention deleted the controller's first segments while the scenario ran: the copy
    taken after it starts at a later offset (ingested above from its snapshot). The stream
    had read them live: its lake holds every log offset from 0 on, and no gap."""
    first = log_start(incidents.controller_log)
    assert first > 0, "retention deleted no segment"
    lake = incidents.stream_lake
    offsets = {r["offset"] for r in table(lake, "records", ["offset", "source"])
               if r["source"] == "log"}
    assert set(range(first)) <= offsets, sorted(set(range(first)) - offsets)[:20]
    gaps = [r for r in table(lake, "quarantine", ["kind", "reason"]) if r["kind"] == "gap"]
    assert not gaps, gaps


def test_no_partition_change_comes_before_its_partition(incidents: Incidents) -> None:
    """Kafka writes a ClearElrRecord between a new topic's TopicRecord and its
    PartitionRecords when the topic has its own min.insync.replicas (`orders`, `elr` here);
    it clears the partitions that exist then, i.e. none of the new topic's. So no partition
    change in the lake precedes its partition's first full state (quality's orphan check)."""
    lake = incidents.stream_lake
    recs = sorted((r["offset"], r["record_type"]) for r in
                  table(lake, "records", ["offset", "record_type", "source"])
                  if r["source"] == "log")
    assert any(a[1] == "ClearElrRecord" and b[1] == "PartitionRecord"
               for a, b in pairwise(recs)), "no topic was created with a ClearElrRecord"
    rows = table(lake, "partition_changes", ["topic_id", "partition_id", "offset", "seq",
                                             "is_reset", "is_delete", "record_type"])
    first: dict[tuple[str, int], tuple[int, int]] = {}
    for r in rows:
        if r["is_reset"]:
            k = (r["topic_id"], r["partition_id"])
            first[k] = min(first.get(k, (r["offset"], r["seq"])), (r["offset"], r["seq"]))
    never = (float("inf"), 0)  # a partition without a full state
    early = [r for r in rows if not r["is_reset"] and not r["is_delete"]
             and (r["offset"], r["seq"]) < first.get((r["topic_id"], r["partition_id"]), never)]
    assert not early, early[:5]


def test_election_events_equal_controller_counters(incidents: Incidents) -> None:
    """The stream's lake (the whole history: the log copy lost its start to retention)."""
    lake = incidents.stream_lake
    ours = Counter(r["event_type"] for r in table(lake, "partition_events", ["event_type"]))
    kafka = incidents.counters
    assert kafka["UncleanLeaderElectionsPerSec"] >= 2, f"scenario made too few: {kafka}"
    assert kafka["ElectionFromEligibleLeaderReplicasPerSec"] >= 1, kafka
    assert (ours.get("unclean_election", 0), ours.get("elr_election", 0)) == (
        kafka["UncleanLeaderElectionsPerSec"], kafka["ElectionFromEligibleLeaderReplicasPerSec"]
    ), f"kraftlake {ours}, Kafka's controller {kafka}"
    # every unclean election here recovered (LeaderRecoveryState 1 -> 0)
    assert ours.get("recovery_completed", 0) == kafka["UncleanLeaderElectionsPerSec"], ours


def _as_of(rows: list[dict[str, Any]], at: int, start: str, end: str) -> list[dict[str, Any]]:
    """The rows in force after the record at offset `at`: start <= at < end (null: open)."""
    return [r for r in rows if r[start] <= at and (r[end] is None or r[end] > at)]


def test_lake_at_each_step_equals_kafkas_view(incidents: Incidents) -> None:
    """After every scenario step Kafka's view was taken between two reads of the quorum's
    high watermark (scenario.view); where the log holds no partition change between them,
    the view is the state at that offset. The stream's lake (the whole history) as of that
    offset: its timeline states are `--describe`'s
    leader, ISR and replicas; its open intervals are what Kafka's filters list:
    under_replicated = `--under-replicated-partitions`, offline = `--unavailable-partitions`
    (every leader of a settled step is live), under_min_isr or offline =
    `--under-min-isr-partitions` (TopicCommand counts a leaderless partition under min ISR;
    no topic here has fewer replicas than its min.insync.replicas, so the broker's cap that
    kraftlake applies changes nothing)."""
    lake = incidents.stream_lake
    tl = table(lake, "partition_timeline", ["topic_name", "partition_id", "valid_from_offset",
                                            "seq", "valid_to_offset", "leader", "isr",
                                            "replicas"])
    iv = table(lake, "partition_intervals", ["topic_name", "partition_id", "kind",
                                             "start_offset", "end_offset"])
    views = incidents.views
    assert len(views) == len(incidents.steps)
    changes = sorted({r["valid_from_offset"] for r in tl}
                     | {r["valid_to_offset"] for r in tl if r["valid_to_offset"] is not None})
    problems, compared, moved = [], 0, []
    for v in views:
        at = v.high_watermark - 1
        if any(at < o < v.high_watermark_after for o in changes):
            moved.append(v.step)  # a partition changed while Kafka was asked
            continue
        states: dict[tuple[str, int], dict[str, Any]] = {}
        for r in sorted(_as_of(tl, at, "valid_from_offset", "valid_to_offset"),
                        key=lambda r: (r["valid_from_offset"], r["seq"])):
            states[(r["topic_name"], r["partition_id"])] = r
        ours = {k: (r["leader"], r["isr"], r["replicas"]) for k, r in states.items()}
        kafka = {k: (d["Leader"], d["Isr"], d["Replicas"]) for k, d in v.describe.items()}
        if ours != kafka:
            problems.append(f"{v.step} @ {at}: states differ: "
                            f"{sorted(set(ours.items()) ^ set(kafka.items()))}")
        open_: dict[str, set[tuple[str, int]]] = {}
        for r in _as_of(iv, at, "start_offset", "end_offset"):
            open_.setdefault(r["kind"], set()).add((r["topic_name"], r["partition_id"]))
        offline = open_.get("offline", set())
        for kind, want in (("under_replicated", open_.get("under_replicated", set())),
                           ("unavailable", offline),
                           ("under_min_isr", open_.get("under_min_isr", set()) | offline)):
            if want != v.listed[kind]:
                problems.append(f"{v.step} @ {at}: {kind}: kafka {sorted(v.listed[kind])}, "
                                f"kraftlake {sorted(want)}")
        compared += 1
    assert not problems, "\n".join(problems)
    # a step during whose view a partition changed is not compared
    assert compared >= len(views) - 2, moved
    print(f"\n{compared} of {len(views)} steps compared; Kafka listed under-replicated: "
          f"{[sorted(v.listed['under_replicated']) for v in views]}")

