"""kraftlake's findings held against what Kafka itself reported about the same log.

An example log real Kafka wrote (`examples/real-incident`) is saved with `kafka-view.json`:
the controller's JMX election counters, `kafka-topics --describe` and the metadata shell's
view of every partition, and (recorded since the gauges were added) the controller's gauges
of its metadata image. `print_kafka_view` compares the lake's events, `partition_current`
and broker records with them, so the demo's answer is checked by Kafka, not by kraftlake.
The gauges are counted by `kraft.gauges.controller_gauges`, the rule the tests on a real
cluster hold the lake (and the stream's live gauges) to after every scenario step.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from typing import Any

from rich.console import Console
from rich.table import Table

from ..kraft.gauges import GAUGES, controller_gauges
from ..kraft.partition import RECOVERED, RECOVERING

# event type -> the controller's JMX meter counting the same elections
KAFKA_COUNTERS = {"unclean_election": "UncleanLeaderElectionsPerSec",
                  "elr_election": "ElectionFromEligibleLeaderReplicasPerSec"}
# LeaderRecoveryState as the metadata shell prints it
LRS_NAMES = {"RECOVERED": RECOVERED, "RECOVERING": RECOVERING}


def _print_gauges(console: Console, current: dict[tuple[str, int], Any],
                  fenced: Mapping[int, bool], view: dict[str, Any]) -> bool:
    """The lake's GAUGES against the controller's recorded ones (True: all equal); a view
    recorded before the gauges were says so and counts as agreeing."""
    theirs = view.get("controller_gauges")
    if theirs is None:
        console.print("[dim]this view has no controller gauges (recorded before "
                      "scripts/record_real_incident.py kept them)[/]")
        return True
    ours = controller_gauges(current.values(), fenced)
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
    and the brokers' fencing (`kraft.brokers.fenced_brokers`) against its gauges,
    partition_current
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
