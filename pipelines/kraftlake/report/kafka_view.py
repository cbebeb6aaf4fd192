"""kraftlake's findings held against what Kafka itself reported about the same log.

An example log real Kafka wrote (`examples/real-incident`) is saved with `kafka-view.json`:
the controller's JMX election counters, `kafka-topics --describe` and the metadata shell's
view of every partition. `print_kafka_view` compares the lake's events and
`partition_current` with them, so the demo's answer is checked by Kafka, not by kraftlake.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

from rich.console import Console
from rich.table import Table

from ..kraft.partition import RECOVERED, RECOVERING

# event type -> the controller's JMX meter counting the same elections
KAFKA_COUNTERS = {"unclean_election": "UncleanLeaderElectionsPerSec",
                  "elr_election": "ElectionFromEligibleLeaderReplicasPerSec"}
# LeaderRecoveryState as the metadata shell prints it
LRS_NAMES = {"RECOVERED": RECOVERED, "RECOVERING": RECOVERING}


def print_kafka_view(console: Console, events: list[dict[str, Any]],
                     current: dict[tuple[str, int], Any], view: dict[str, Any]) -> bool:
    """Hold what kraftlake found against what Kafka itself reported (kafka-view.json beside
    the example): election counts against the controller's JMX counters, partition_current
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
