"""kraftlake's reading of a real controller's log equals what Kafka itself reports.

The session's cluster ran the incident scenario (scenario.py); Kafka's own view of the end
state was taken right after (conftest.Incidents): `kafka-topics --describe` per partition,
the metadata shell on a snapshot holding the scenario's last change, the controller's election
counters over JMX. Two lakes are held against that view: `kraftlake ingest` of a copy of
the controller's log taken after the scenario (retention had deleted its first segments, so
it starts at a snapshot), and the lake `kraftlake stream` built while it tailed the live log
(the whole history). Their tables are read with delta-rs (a second Delta engine, no JVM to
start for a read; `kraftlake sql` has its own tests in tests/cli and tests/cluster).

Kafka's view was also taken after every step (scenario.view: `--describe` and its filters,
the controller's gauges over JMX, what the step's tools reported doing); the stream's lake
as of each step's committed offset is held against it (the tests from `History` on).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from itertools import pairwise
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from rich.console import Console

from kraftlake.cli import main
from kraftlake.kraft.brokers import broker_state, fenced_brokers, fenced_of
from kraftlake.kraft.configs import RESOURCE_BROKER
from kraftlake.kraft.gauges import controller_gauges
from kraftlake.kraft.timing import TIMING_KEYS, attribution_window_ms, window_history
from kraftlake.report.data import (
    lake_brokers,
    lake_current,
    lake_events,
)
from kraftlake.report.kafka_view import print_kafka_view
from tests.lake_rows import table_dicts

from .cluster import log_start
from .scenario import FILTERS, LAGGING_STEP, Incidents, Partition, StepView


def kraftlake(*args: str) -> str:
    """`kraftlake ARGS` in this process (click's runner on the real command group). Callers
    hold the `spark` fixture, so the command runs on the worker's warm session with the
    tests' settings; as a process of its own, each ingest paid a JVM start, a new Spark
    session and its JIT compilation, more than the ingest of these small logs itself."""
    out = CliRunner().invoke(main, list(args), env={"COLUMNS": "200"})
    assert out.exit_code == 0, f"kraftlake {' '.join(args)}: {out.exception!r}\n{out.output}"
    return out.stdout


def table(lake: Path, name: str, columns: list[str]) -> list[dict[str, Any]]:
    """The rows of one lake table (those columns), read with delta-rs (`table_dicts`)."""
    return table_dicts(lake / name, columns)


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


@dataclass
class History:
    """The stream's lake (the whole history) as the step-by-step tests read it."""

    timeline: list[dict[str, Any]]
    intervals: list[dict[str, Any]]
    events: list[dict[str, Any]]
    brokers: list[dict[str, Any]]

    def states(self, at: int) -> dict[Partition, dict[str, Any]]:
        """Every partition's timeline state valid after offset `at`."""
        out: dict[Partition, dict[str, Any]] = {}
        for r in sorted(_as_of(self.timeline, at, "valid_from_offset", "valid_to_offset"),
                        key=lambda r: (r["valid_from_offset"], r["seq"])):
            out[(r["topic_name"], r["partition_id"])] = r
        return out

    def open_intervals(self, at: int) -> dict[str, set[Partition]]:
        """kind -> the partitions with an interval of that kind open after offset `at`."""
        out: dict[str, set[Partition]] = {}
        for r in _as_of(self.intervals, at, "start_offset", "end_offset"):
            out.setdefault(r["kind"], set()).add((r["topic_name"], r["partition_id"]))
        return out

    def _fenced_after_each(self) -> Iterator[tuple[int, dict[int, bool]]]:
        """(offset, registered broker -> fenced) after each broker record."""
        states: dict[int, dict] = {}
        for r in sorted(self.brokers, key=lambda r: (r["offset"], r["seq"])):
            states[r["broker_id"]] = broker_state(r, states.get(r["broker_id"], {}))
            yield r["offset"], fenced_of(states)

    def fenced(self, at: int) -> dict[int, bool]:
        """Registered broker -> fenced, after offset `at`."""
        return fenced_brokers(sorted((r for r in self.brokers if r["offset"] <= at),
                                     key=lambda r: (r["offset"], r["seq"])))

    def events_in(self, event: str, start: int, end: int) -> set[Partition]:
        """The partitions with an `event` at an offset in [start, end)."""
        return {(r["topic_name"], r["partition_id"]) for r in self.events
                if r["event_type"] == event and start <= r["offset"] < end}

    def changes(self) -> list[int]:
        """Every offset at which a partition state or a broker's fencing changed (a broker
        record may change neither: the controller rewrites a fenced broker's registration
        when its session times out after a clean shutdown)."""
        brokers, before = set(), {}
        for offset, state in self._fenced_after_each():
            if state != before:
                brokers.add(offset)
            before = state
        return sorted({r["valid_from_offset"] for r in self.timeline}
                      | {r["valid_to_offset"] for r in self.timeline
                         if r["valid_to_offset"] is not None} | brokers)


@pytest.fixture(scope="module")
def history(incidents: Incidents) -> History:
    lake = incidents.stream_lake
    assert lake is not None
    return History(
        table(lake, "partition_timeline", [
            "topic_name", "partition_id", "valid_from_offset", "seq", "valid_to_offset",
            "leader", "isr", "replicas", "adding_replicas", "removing_replicas",
            "eligible_leader_replicas", "last_known_elr"]),
        table(lake, "partition_intervals", ["topic_name", "partition_id", "kind",
                                            "start_offset", "end_offset"]),
        table(lake, "partition_events", ["topic_name", "partition_id", "offset",
                                         "event_type"]),
        table(lake, "brokers", ["offset", "seq", "record_type", "broker_id", "fenced"]))


@pytest.fixture(scope="module")
def settled(incidents: Incidents, history: History) -> list[tuple[StepView, int]]:
    """The views taken while the log held no partition or broker change between the two
    reads of the high watermark (scenario.view), each with the offset it shows the state
    after: the state there is the state Kafka was asked about."""
    changes = history.changes()
    views = incidents.views
    assert len(views) == len(incidents.steps)
    out = [(v, v.high_watermark - 1) for v in views
           if not any(v.high_watermark - 1 < o < v.high_watermark_after for o in changes)]
    skipped = [v.step for v in views if all(v is not w for w, _ in out)]
    # a step during whose view something changed is not compared
    assert len(skipped) <= 2, skipped
    print(f"\nsteps not compared (a change while Kafka was asked): {skipped}")
    return out


def windows(views: list[StepView]) -> list[tuple[StepView, int, int]]:
    """Each step with the log offsets [start, end) its doings fall in: from the previous
    view's high watermark (0 for the first) to its own."""
    starts = [0] + [v.high_watermark for v in views[:-1]]
    return [(v, lo, v.high_watermark) for v, lo in zip(views, starts, strict=True)]


def test_lake_at_each_step_equals_kafkas_view(incidents: Incidents, history: History,
                                              settled) -> None:
    """After every scenario step Kafka's view was taken between two reads of the quorum's
    high watermark (scenario.view); where the log holds no change between them, the view is
    the state at that offset. The stream's lake (the whole history) as of that offset: its
    timeline states are `--describe`'s leader, ISR, replicas, adding and removing replicas,
    ELR and last known ELR; its
    open intervals are what
    Kafka's filters list: under_replicated = `--under-replicated-partitions`, offline =
    `--unavailable-partitions` (every leader of a settled step is live), under_min_isr or
    offline = `--under-min-isr-partitions` (TopicCommand counts a leaderless partition under
    min ISR; no topic here has fewer replicas than its min.insync.replicas, so the broker's
    cap that kraftlake applies changes nothing)."""
    problems = []
    for v, at in settled:
        ours = {k: (r["leader"], r["isr"], r["replicas"], r["adding_replicas"] or [],
                    r["removing_replicas"] or [], r["eligible_leader_replicas"] or [],
                    r["last_known_elr"] or []) for k, r in history.states(at).items()}
        kafka = {k: (d["Leader"], d["Isr"], d["Replicas"], d.get("Adding Replicas", []),
                     d.get("Removing Replicas", []), d.get("Elr", []),
                     d.get("LastKnownElr", [])) for k, d in v.describe.items()}
        if ours != kafka:
            problems.append(f"{v.step} @ {at}: states differ: kafka "
                            f"{ {k: x for k, x in kafka.items() if ours.get(k) != x} }, "
                            f"kraftlake { {k: x for k, x in ours.items() if kafka.get(k) != x} }")
        open_ = history.open_intervals(at)
        offline = open_.get("offline", set())
        for kind, want in (("under_replicated", open_.get("under_replicated", set())),
                           ("unavailable", offline),
                           ("under_min_isr", open_.get("under_min_isr", set()) | offline)):
            if want != v.listed[kind]:
                problems.append(f"{v.step} @ {at}: {kind}: kafka {sorted(v.listed[kind])}, "
                                f"kraftlake {sorted(want)}")
    assert not problems, "\n".join(problems)
    views = incidents.views
    # the scenario pauses with three brokers down: Kafka lists partitions in every filter
    for kind in FILTERS:
        assert any(v.listed[kind] for v, _ in settled), \
            f"no compared step lists {kind}: {[v.step for v, _ in settled]}"
    print(f"\n{len(settled)} of {len(views)} steps compared; Kafka listed "
          f"under-replicated / unavailable: "
          f"{[(len(v.listed['under_replicated']), len(v.listed['unavailable'])) for v in views]}")


def test_controller_gauges_at_each_step_equal_the_lake(history: History, settled) -> None:
    """The controller's gauges of its metadata image (JMX, read once its committed offset
    reached the step's), each held against the lake as of that offset, counted as the demo
    counts them (kraft.gauges.controller_gauges): OfflinePartitionsCount = timeline states
    without a leader = open `offline` intervals; PreferredReplicaImbalanceCount = states
    whose leader is not their first replica (Kafka's PartitionRegistration.hasPreferredLeader:
    a leaderless partition counts); Fenced- and ActiveBrokerCount = registered brokers fenced
    / not fenced in the brokers table; topics and partitions = the timeline's."""
    problems = []
    for v, at in settled:
        ours = controller_gauges(history.states(at).values(), history.fenced(at))
        offline_intervals = len(history.open_intervals(at).get("offline", set()))
        if ours != v.gauges or offline_intervals != v.gauges["OfflinePartitionsCount"]:
            problems.append(f"{v.step} @ {at}: Kafka {v.gauges}, kraftlake {ours}, "
                            f"open offline intervals {offline_intervals}")
    assert not problems, "\n".join(problems)
    gauges = {v.step: v.gauges for v, _ in settled}
    for name in ("OfflinePartitionsCount", "FencedBrokerCount",
                 "PreferredReplicaImbalanceCount"):
        assert any(g[name] > 0 for g in gauges.values()), f"{name} 0 at every step: {gauges}"


# a live gauge of the stream (kraftlake.metrics) -> the controller's JMX gauge it counts
SCRAPED_GAUGES = {"kraftlake_offline_partitions": "OfflinePartitionsCount",
                  "kraftlake_preferred_replica_imbalance": "PreferredReplicaImbalanceCount",
                  "kraftlake_active_brokers": "ActiveBrokerCount",
                  "kraftlake_fenced_brokers": "FencedBrokerCount",
                  "kraftlake_topics": "GlobalTopicCount",
                  "kraftlake_partitions": "GlobalPartitionCount"}
# an event counter of the stream -> the controller's ControllerStats meter of it
SCRAPED_COUNTERS = {"events:unclean_election": "UncleanLeaderElectionsPerSec",
                    "events:elr_election": "ElectionFromEligibleLeaderReplicasPerSec"}


def test_scraped_gauges_at_each_step_equal_the_controllers_jmx(
        incidents: Incidents, history: History, settled) -> None:
    """The live stream's `/metrics` (scraped after each of its micro-batches) held against
    Kafka after every step: a scrape whose state is the step's (no partition or broker
    change between the offset it shows and the view's) has the controller's JMX gauges
    (kafka.controller:type=KafkaController) and election meters' counts
    (type=ControllerStats: unclean, ELR); its under-replicated partitions are as many as
    `kafka-topics --describe --under-replicated-partitions` listed, its partitions under
    min ISR and recovering as many as the lake's open intervals at that offset."""
    changes = history.changes()
    scrapes = incidents.scrapes
    assert scrapes, "the live stream's /metrics was never scraped"
    problems, compared = [], []
    for v, at in settled:
        same = [s for s in scrapes if "kraftlake_last_applied_offset" in s and not any(
            min(at, s["kraftlake_last_applied_offset"]) < o
            <= max(at, s["kraftlake_last_applied_offset"]) for o in changes)]
        if not same:
            continue
        s = same[-1]
        compared.append((v.step, s))
        open_ = history.open_intervals(at)
        want = {**{g: v.gauges[j] for g, j in SCRAPED_GAUGES.items()},
                **{e: v.counters[j] for e, j in SCRAPED_COUNTERS.items()},
                "kraftlake_under_replicated_partitions": len(v.listed["under_replicated"]),
                "kraftlake_under_min_isr_partitions": len(open_.get("under_min_isr", ())),
                "kraftlake_recovering_partitions": len(open_.get("recovering", ()))}
        got = {k: int(s.get(k, -1)) for k in want}
        if got != want:
            problems.append(f"{v.step} @ {at} (scraped at offset "
                            f"{s['kraftlake_last_applied_offset']:.0f}): Kafka {want}, "
                            f"/metrics {got}")
    assert not problems, "\n".join(problems)
    missed = [v.step for v, _ in settled if v.step not in {step for step, _ in compared}]
    assert len(missed) <= 2, f"no scrape of these steps' state: {missed}"
    for name in ("kraftlake_offline_partitions", "kraftlake_fenced_brokers",
                 "events:unclean_election", "events:elr_election"):
        assert any(s[name] > 0 for _, s in compared), f"{name} 0 in every compared scrape"
    print(f"\n{len(compared)} of {len(settled)} settled steps compared with a scrape; the "
          f"scenario waited {incidents.waited:.0f} s in all for the stream to catch up; "
          f"{len(scrapes)} micro-batches")


# what the scenario's tools alone make: in every step, the lake's events of these types are
# the partitions the tools reported (none where no tool reported any)
BY_TOOLS_ONLY = ("partition_created", "partition_deleted", "reassignment_started",
                 "reassignment_completed", "reassignment_cancelled")


def test_events_of_each_step_are_what_kafkas_tools_did(incidents: Incidents,
                                                       history: History) -> None:
    """Each step's events held against what Kafka's tools reported doing in it
    (scenario.Said): partitions `--create` created; partitions deleted = listed by the
    previous step's `--describe` or created in this step, and not listed by this one's;
    reassignments `kafka-reassign-partitions --execute` started, `--cancel` cancelled and
    `--verify` reported completed. Elections held against `kafka-leader-election`'s list of
    partitions it elected, within the high watermarks read around the tool (the controller
    elects on its own too, e.g. at a broker's shutdown)."""
    problems, asked = [], Counter()
    previous: set[Partition] = set()
    for v, lo, hi in windows(incidents.views):
        kafka: dict[str, set[Partition]] = {e: set() for e in BY_TOOLS_ONLY}
        for s in v.said:
            if s.start is None:
                kafka[s.event] |= s.partitions
        kafka["partition_deleted"] = (previous | kafka["partition_created"]) - set(v.describe)
        previous = set(v.describe)
        held = [(event, want, lo, hi) for event, want in kafka.items()]
        held += [(s.event, s.partitions, s.start, s.end) for s in v.said if s.start is not None]
        for event, want, start, end in held:
            asked[event] += len(want)
            got = history.events_in(event, start, end)
            if got != want:
                problems.append(f"{v.step} [{start}, {end}): {event}: Kafka {sorted(want)}, "
                                f"kraftlake {sorted(got)}")
    assert not problems, "\n".join(problems)
    for event in (*BY_TOOLS_ONLY, "preferred_election", "unclean_election"):
        assert asked[event], f"no tool of the scenario reported a {event}: {asked}"
    print(f"\nevents Kafka's tools reported, per type: {dict(asked)}")


def test_reassignments_kafka_listed_ongoing_are_in_the_timeline(incidents: Incidents,
                                                                history: History) -> None:
    """A reassignment `kafka-reassign-partitions --list` (the admin API's
    listPartitionReassignments) showed ongoing during a step is a timeline state of that
    step: the same replicas, adding and removing replicas."""
    listed = 0
    for v, lo, hi in windows(incidents.views):
        for (topic, p), (replicas, adding, removing) in v.ongoing.items():
            listed += 1
            ours = [(r["replicas"], r["adding_replicas"] or [], r["removing_replicas"] or [])
                    for r in history.timeline
                    if (r["topic_name"], r["partition_id"]) == (topic, p)
                    and lo <= r["valid_from_offset"] < hi]
            assert (replicas, adding, removing) in ours, \
                f"{v.step}: Kafka listed {topic}-{p} {(replicas, adding, removing)}; " \
                f"the timeline in [{lo}, {hi}) has {ours}"
    assert listed, "Kafka listed no ongoing reassignment"


def test_changes_between_describes_have_their_events(incidents: Incidents, history: History,
                                                     settled) -> None:
    """Between two consecutive compared views, a partition whose ISR lost a member has an
    isr_shrink in the lake, one whose ISR gained a member an isr_expand, and one whose
    leader changed an election (clean, ELR, unclean) or, leaderless now, a leader_offline;
    one whose ELR or last known ELR changed (as a set) an elr_change.
    (Kafka's describes show net changes only: a member that left and came back within a
    step is the simulator's and the rules' business, not this test's.)"""
    elections = ("clean_election", "elr_election", "unclean_election")
    problems, checked = [], 0
    for (a, at_a), (b, at_b) in pairwise(settled):
        for key in set(a.describe) & set(b.describe):
            before, after = a.describe[key], b.describe[key]
            need = []
            if set(before["Isr"]) - set(after["Isr"]):
                need.append(("isr_shrink",))
            if set(after["Isr"]) - set(before["Isr"]):
                need.append(("isr_expand",))
            if before["Leader"] != after["Leader"]:
                need.append(("leader_offline",) if after["Leader"] == -1 else elections)
            if any(set(before.get(k, [])) != set(after.get(k, []))
                   for k in ("Elr", "LastKnownElr")):
                need.append(("elr_change",))
            for kinds in need:
                checked += 1
                if not any(key in history.events_in(k, at_a + 1, at_b + 1) for k in kinds):
                    problems.append(f"{key} between {a.step!r} and {b.step!r}: "
                                    f"{before} -> {after} without {' or '.join(kinds)}")
    assert not problems, "\n".join(problems)
    assert checked >= 5, f"only {checked} changes between consecutive describes"


def test_under_replication_before_an_unrelated_shutdown_is_its_own_cause(
        incidents: Incidents, settled) -> None:
    """The scenario's last two steps: lagging-0 under-replicated (follower 3 held out of its
    ISR, broker 3 never fenced), then broker 4, which holds no replica of it, shut down
    cleanly later than the attribution window the rule reads from this log (kraft.timing:
    the brokers' replica.lag.time.max.ms, which the scenario wrote as the cluster default,
    and Kafka's broker.session.timeout.ms). The incident the under-replication
    opens takes the shutdown in, but names the under-replication its cause, not the
    shutdown. And Kafka listed lagging-0 under-replicated when it was: that step is compared
    (the lake's open intervals then equal `--under-replicated-partitions`)."""
    lake = incidents.stream_lake
    [(view, at)] = [(v, at) for v, at in settled if v.step == LAGGING_STEP] or [(None, -1)]
    assert view is not None, f"the step {LAGGING_STEP!r} was not compared"
    assert ("lagging", 0) in view.listed["under_replicated"], view.listed
    [span] = [r for r in _as_of(table(lake, "partition_intervals", [
        "topic_name", "partition_id", "kind", "start_offset", "start_ts", "end_offset"]),
        at, "start_offset", "end_offset") if (r["topic_name"], r["partition_id"], r["kind"])
        == ("lagging", 0, "under_replicated")]
    [inc] = _as_of(table(lake, "incidents", [
        "incident_id", "start_offset", "end_offset", "cause", "cause_broker", "brokers"]),
        span["start_offset"], "start_offset", "end_offset")
    shutdowns = [r for r in table(lake, "brokers", ["offset", "timestamp", "broker_id",
                                                    "in_controlled_shutdown"])
                 if r["broker_id"] == 4 and r["in_controlled_shutdown"] and r["offset"] > at]
    assert shutdowns, "no controlled shutdown of broker 4 after the lagging step"
    shutdown = min(shutdowns, key=lambda r: r["offset"])
    configs = [(r["offset"], r["seq"], r["name"], r["resource_name"], r["value"])
               for r in table(lake, "configs", ["offset", "seq", "kind", "resource_type",
                                                "resource_name", "name", "value"])
               if r["kind"] == "config" and r["name"] in TIMING_KEYS
               and r["resource_type"] == RESOURCE_BROKER]
    assert configs, "the scenario's cluster default of replica.lag.time.max.ms is not in the log"
    window = [ms for o, _, ms in window_history(configs) if o <= shutdown["offset"]][-1]
    assert window < attribution_window_ms({}), "the window is still Kafka's defaults"
    gap = (shutdown["timestamp"] - span["start_ts"]).total_seconds() * 1000
    assert gap > window, f"the shutdown came {gap:.0f} ms after the shrink, within {window}"
    assert inc["start_offset"] == span["start_offset"], \
        f"the incident began before lagging-0's under-replication: {inc}"
    assert inc["end_offset"] is None or inc["end_offset"] > shutdown["offset"], inc
    assert inc["brokers"] == [4], f"broker 4's outage alone in it (3 never fenced): {inc}"
    assert (inc["cause"], inc["cause_broker"]) == ("under_replicated", None), inc


def test_demo_comparison_of_the_real_cluster_agrees(spark, incidents: Incidents) -> None:
    """`kraftlake demo --example`'s comparison (report.kafka_view) on this cluster's view as
    scripts/record_real_incident.py saves it (`Incidents.kafka_view`), against the stream's
    lake (the whole history: election counts need every election): counters, the gauges
    of the end, `--describe` and the metadata shell all agree, and it says so."""
    lake, cid = incidents.stream_lake, incidents.cluster.cluster_id
    view = incidents.kafka_view()
    assert view["controller_gauges"]["GlobalPartitionCount"] == len(incidents.describe)
    out = Console(record=True, width=200)
    ok = print_kafka_view(out, lake_events(spark, lake, cid), lake_current(spark, lake, cid),
                          fenced_brokers(lake_brokers(spark, lake, cid)), view)
    text = out.export_text()
    assert ok, text
    assert "JMX gauges at the end" in text and "differs" not in text, text
