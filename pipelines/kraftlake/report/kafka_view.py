"""kraftlake's findings held against what Kafka itself reported about the same log.

An example log real Kafka wrote (`examples/real-incident`) is saved with `kafka-view.json`:
the controller's JMX election counters, `kafka-topics --describe` and the metadata shell's
view of every partition, and (recorded since the gauges were added) the controller's gauges
of its metadata image. `print_kafka_view` compares the lake's events, `partition_current`
and broker records with them, so the demo's answer is checked by Kafka, not by kraftlake.
The tests on a real cluster hold the lake against the same gauges after every scenario
step, counted by the same `lake_gauges`.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping
from typing import Any

from rich.console import Console
from rich.table import Table

from ..kraft.brokers import broker_state
from ..kraft.partition import NO_LEADER, RECOVERED, RECOVERING
from .data import fenced_of

# event type -> the controller's JMX meter counting the same elections
KAFKA_COUNTERS = {"unclean_election": "UncleanLeaderElectionsPerSec",
                  "elr_election": "ElectionFromEligibleLeaderReplicasPerSec"}
# LeaderRecoveryState as the metadata shell prints it
LRS_NAMES = {"RECOVERED": RECOVERED, "RECOVERING": RECOVERING}
# The controller's gauges of its metadata image (kafka.controller:type=KafkaController,
# Kafka's ControllerMetadataMetricsPublisher), as `lake_gauges` counts them
GAUGES = ("FencedBrokerCount", "ActiveBrokerCount", "OfflinePartitionsCount",
          "PreferredReplicaImbalanceCount", "GlobalTopicCount", "GlobalPartitionCount")


def fenced_brokers(brokers: Iterable[Mapping[str, Any]]) -> dict[int, bool]:
    """Registered broker -> fenced, after `brokers` table rows in log order
    (`kraft.brokers.broker_state`)."""
    states: dict[int, dict[str, Any]] = {}
    for r in brokers:
        states[r["broker_id"]] = broker_state(r, states.get(r["broker_id"], {}))
    return fenced_of(states)


def lake_gauges(states: Iterable[Mapping[str, Any]], fenced: Mapping[int, bool]
                ) -> dict[str, int]:
    """GAUGES as the lake has them: `states` every partition's state (topic_name, leader,
    replicas: partition_current, or the timeline as of an offset), `fenced` from
    `fenced_brokers`. OfflinePartitionsCount counts partitions without a leader,
    PreferredReplicaImbalanceCount those whose leader is not their first replica (a
    leaderless one included: PartitionRegistration.hasPreferredLeader)."""
    states = list(states)
    return {
        "FencedBrokerCount": sum(fenced.values()),
        "ActiveBrokerCount": sum(not f for f in fenced.values()),
        "OfflinePartitionsCount": sum(s["leader"] == NO_LEADER for s in states),
        "PreferredReplicaImbalanceCount": sum(
            not s["replicas"] or s["leader"] != s["replicas"][0] for s in states),
        "GlobalTopicCount": len({s["topic_name"] for s in states}),
        "GlobalPartitionCount": len(states)}


def _print_gauges(console: Console, current: dict[tuple[str, int], Any],
                  fenced: Mapping[int, bool], view: dict[str, Any]) -> bool:
    """The lake's GAUGES against the controller's recorded ones (True: all equal); a view
    recorded before the gauges were says so and counts as agreeing."""
    theirs = view.get("controller_gauges")
    if theirs is None:
        console.print("[dim]this view has no controller gauges (recorded before "
                      "scripts/record_real_incident.py kept them)[/]")
        return True
    ours = lake_gauges(current.values(), fenced)
    t = Table(title="kraftlake vs Kafka's controller (JMX gauges at the end)",
              title_justify="left")
    for c in ("gauge", "kraftlake", "Kafka", ""):
        t.add_column(c)
    for name in GAUGES:
        same = ours[name] == theirs[name]
        t.add_row(name, str(ours[name]), str(theirs[name]),
                  "[green]equal[/]" if same else "[red]differs[/]")
    console.print(t)
    return all(ours[name] == theirs[name] for name in GAUGES)


def print_kafka_view(console: Console, events: list[dict[str, Any]],
                     current: dict[tuple[str, int], Any], fenced: Mapping[int, bool],
                     view: dict[str, Any]) -> bool:
    """Hold what kraftlake found against what Kafka itself reported (kafka-view.json beside
    the example): election counts against the controller's JMX counters, partition_current
    and the brokers' fencing (`fenced_brokers`) against its gauges, partition_current
    against kafka-topics --describe and the metadata shell. True when all agree."""
    ok = True
    counts = Counter(e["event_type"] for e in events)
    t = Table(title="kraftlake vs Kafka's controller (JMX counters)", title_justify="left")
    for c in ("event", "kraftlake", "Kafka", ""):
        t.add_column(c)
    for event, counter in KAFKA_COUNTERS.items():
        theirs = view["controller_counters"][counter]
        same = counts[event] == theirs
        ok &= same
        t.add_row(event, str(counts[event]), f"{theirs} ({counter})",
                  "[green]equal[/]" if same else "[red]differs[/]")
    console.print(t)
    ok &= _print_gauges(console, current, fenced, view)
    shell = {(r["topic"], r["partition"]): r for r in view["metadata_shell"]}
    t = Table(title="partition_current vs kafka-topics --describe and the metadata shell",
              title_justify="left")
    for c in ("partition", "leader", "isr", "elr", "leader epoch", "recovery", ""):
        t.add_column(c)
    for k in view["describe"]:
        ours = current.get((k["topic"], k["partition"])) or {}
        sh = shell.get((k["topic"], k["partition"]), {})
        want = (k["Leader"], k["Isr"], k.get("Elr", []), sh.get("leaderEpoch"),
                LRS_NAMES.get(sh.get("leaderRecoveryState")))
        got = (ours.get("leader"), ours.get("isr"), ours.get("eligible_leader_replicas") or [],
               ours.get("leader_epoch"), ours.get("leader_recovery_state"))
        ok &= want == got
        t.add_row(f"{k['topic']}:{k['partition']}", *(str(x) for x in got),
                  "[green]equal[/]" if want == got else f"[red]Kafka {want}[/]")
    console.print(t)
    console.print("[bold green]kraftlake agrees with Kafka[/]" if ok else
                  "[bold red]kraftlake disagrees with Kafka (rows above)[/]")
    return ok
