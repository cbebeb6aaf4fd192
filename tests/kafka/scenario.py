"""Real incidents, driven with Kafka's own tools against a running `KafkaCluster`.

One sequence, run once per test session, covers what kraftlake claims to detect: topic
churn, an ISR shrink from a paused follower, fencing after kill -9, an ELR election after
clean (SIGTERM) shutdowns, a min.insync.replicas change (ClearElrRecord), unclean elections
through the topic config and through `kafka-leader-election --election-type UNCLEAN` with
the recovery that follows, a reassignment and a preferred election. Each step waits for
Kafka to report the state it was after, so the log is the same shape on a slow machine.
"""

from __future__ import annotations

import json
import re
import shutil
import signal
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .cluster import KafkaCluster

TOPICS = "org.apache.kafka.tools.TopicCommand"
ELECT = "org.apache.kafka.tools.LeaderElectionCommand"
REASSIGN = "org.apache.kafka.tools.reassign.ReassignPartitionsCommand"
CONFIG = "kafka.admin.ConfigCommand"
SHELL = "org.apache.kafka.shell.MetadataShell"
QUORUM = "org.apache.kafka.tools.MetadataQuorumCommand"
# `kafka-topics --describe` filters: what each lists (TopicCommand.PartitionDescription)
FILTERS = {"under_replicated": "--under-replicated-partitions",  # |isr| < |replicas|
           "under_min_isr": "--under-min-isr-partitions",  # no leader, or |isr| < min ISR
           "unavailable": "--unavailable-partitions"}  # no leader, or a leader not live


def wait_for(what: str, check: Callable[[], bool], timeout: float = 90) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if check():
            return
        time.sleep(1)
    raise AssertionError(f"Kafka never reached: {what} (after {timeout:.0f} s)")


def produce(c: KafkaCluster, topic: str, records: int = 300) -> None:
    """acks=1 producing, so an out-of-sync replica really is behind. Records go to the
    topic's partitions in turn (the default sticky partitioner can put a few hundred small
    records all into one or two partitions, and tests read partition 0)."""
    c.tool("org.apache.kafka.tools.ProducerPerformance", "--topic", topic,
           "--num-records", str(records), "--record-size", "100", "--throughput", "-1",
           "--producer-props", f"bootstrap.servers={c.bootstrap}", "acks=1",
           "partitioner.class=org.apache.kafka.clients.producer.RoundRobinPartitioner",
           "delivery.timeout.ms=30000", "request.timeout.ms=10000")


def create(c: KafkaCluster, topic: str, assignment: str, *configs: str) -> None:
    args = ["--create", "--topic", topic, "--replica-assignment", assignment]
    for conf in configs:
        args += ["--config", conf]
    c.topics(*args)


def alter_topic(c: KafkaCluster, topic: str, config: str) -> None:
    c.tool(CONFIG, "--bootstrap-server", c.bootstrap, "--entity-type", "topics",
           "--entity-name", topic, "--alter", "--add-config", config)


def part(c: KafkaCluster, topic: str, p: int = 0) -> dict[str, object]:
    return c.describe(topic)[(topic, p)]


@dataclass
class StepView:
    """Kafka's view right after one scenario step, between two committed metadata offsets."""

    step: str
    high_watermark: int  # the quorum's before Kafka was asked: every record below committed
    high_watermark_after: int  # and after (it moves all the time: the controller's NoOps)
    describe: dict[tuple[str, int], dict[str, object]]  # kafka-topics --describe
    listed: dict[str, set[tuple[str, int]]]  # FILTERS key -> the partitions Kafka lists


def high_watermark(c: KafkaCluster) -> int:
    """The metadata quorum's high watermark (`kafka-metadata-quorum describe --status`)."""
    out = c.tool(QUORUM, "--bootstrap-controller", f"127.0.0.1:{c.controller.port}",
                 "describe", "--status").stdout
    m = re.search(r"HighWatermark:\s+(\d+)", out)
    if m is None:
        raise RuntimeError(f"kafka-metadata-quorum printed no HighWatermark:\n{out}")
    return int(m.group(1))


def listed(c: KafkaCluster, flag: str) -> set[tuple[str, int]]:
    """The partitions `kafka-topics --describe FLAG` lists."""
    out = c.topics("--describe", flag)
    return {(t, int(p)) for t, p in re.findall(r"Topic: (\S+)\s+Partition: (\d+)", out)}


def view(c: KafkaCluster, step: str) -> StepView:
    """Kafka's view after `step`, bracketed by two reads of the high watermark: where the log
    holds no partition change between the two, the view is the state at either."""
    hw = high_watermark(c)
    describe = c.describe()
    seen = {kind: listed(c, flag) for kind, flag in FILTERS.items()}
    return StepView(step, hw, high_watermark(c), describe, seen)


@dataclass
class Incidents:
    """The cluster after the scenario, and copies of what it wrote."""

    cluster: KafkaCluster
    steps: list[str]
    controller_log: Path  # a copy of the controller's __cluster_metadata-0
    observer_log: Path  # a copy of broker 2's (an observer's) __cluster_metadata-0
    describe: dict[tuple[str, int], dict[str, object]]  # kafka-topics --describe
    counters: dict[str, int]  # the controller's election counters (JMX)
    shell: dict[tuple[str, int], dict[str, object]]  # metadata shell, per partition
    stream_lake: Path | None = None  # `kraftlake stream` tailed the live controller log here
    views: list[StepView] = field(default_factory=list)  # Kafka's view after each step


COUNTERS = ("UncleanLeaderElectionsPerSec", "ElectionFromEligibleLeaderReplicasPerSec")


def copy_log(src: Path, dest: Path) -> Path:
    """A copy of a live `__cluster_metadata-0` (segments, snapshots; no index files)."""
    out = dest / "__cluster_metadata-0"
    out.mkdir(parents=True)
    for f in sorted(src.iterdir()):
        if f.suffix in (".log", ".checkpoint"):
            shutil.copy2(f, out / f.name)
    return out

def observe(c: KafkaCluster, steps: list[str], work: Path) -> Incidents:
    """Kafka's own view once the scenario has settled, and copies of the logs it wrote."""
    settle(c)
    describe = c.describe()
    counters = {name: c.jmx(name) for name in COUNTERS}
    # a snapshot the controller writes after this moment holds the state just described
    since = time.time() + 1
    wait_for("a snapshot of the controller's log written after the scenario",
             lambda: any(f.stat().st_mtime > since for f in
                         c.controller.metadata_log.glob("*.checkpoint")))
    controller_log = copy_log(c.controller.metadata_log, work / "controller")
    snapshot = max(controller_log.glob("*.checkpoint"))
    return Incidents(c, steps, controller_log,
                     copy_log(c.nodes[2].metadata_log, work / "broker-2"),
                     describe, counters, shell_partitions(c, snapshot, set(describe)))


def settle(c: KafkaCluster) -> None:
    """Wait until every partition is led and nothing is being reassigned or recovered."""
    def quiet() -> bool:
        parts = c.describe().values()
        return all(p["Leader"] != -1 and "Adding" not in p for p in parts)
    wait_for("every partition led", quiet)


def shell_partitions(c: KafkaCluster, snapshot: Path, expected: set[tuple[str, int]]
                     ) -> dict[tuple[str, int], dict[str, Any]]:
    """The metadata shell's PartitionRegistration of every partition in `snapshot` (a copy:
    the shell refuses a directory a running node has locked)."""
    want = {f"/image/topics/byName/{t}/{p}" for t, p in expected}
    for _ in range(5):  # see below: the shell may answer before it has loaded everything
        listing = c.tool(SHELL, "--snapshot", str(snapshot), "find",
                         "/image/topics/byName").stdout
        paths = [p for p in listing.split()
                 if re.fullmatch(r"/image/topics/byName/[^/]+/\d+", p)]
        if want <= set(paths):
            break
    assert want <= set(paths), f"the metadata shell lacks {want - set(paths)}:\n{listing}"
    # one shell for every partition (`cat` prints its targets in order); it may run its
    # command before it has loaded the whole snapshot ("No such file or directory" for a
    # path `find` just listed, and one registration fewer): ask again
    for _ in range(5):
        text = c.tool(SHELL, "--snapshot", str(snapshot), "cat", *paths).stdout
        regs = re.findall(r"PartitionRegistration\((.*)\)", text)
        if len(regs) == len(paths):
            break
    assert len(regs) == len(paths), f"the metadata shell printed {len(regs)} " \
        f"PartitionRegistrations for {len(paths)} partitions:\n{text}"
    parts: dict[tuple[str, int], dict[str, Any]] = {}
    for path, reg in zip(paths, regs, strict=True):
        fields = dict(re.findall(r"(\w+)=(\[[^\]]*\]|[^,]+)", reg))
        _, _, _, _, topic, p = path.split("/")
        parts[(topic, int(p))] = {"leaderEpoch": int(fields["leaderEpoch"]),
                                  "partitionEpoch": int(fields["partitionEpoch"]),
                                  "leaderRecoveryState": fields["leaderRecoveryState"]}
    return parts


def run(c: KafkaCluster, work: Path, views: list[StepView] | None = None) -> list[str]:
    """Drive every incident; returns the steps done, in order (for failure messages).
    `views`: Kafka's view after each step is appended to it."""
    steps: list[str] = []

    def step(name: str) -> None:
        steps.append(f"{time.strftime('%H:%M:%S')} {name}")
        if views is not None:
            views.append(view(c, name))

    # topic churn
    create(c, "churn", "2:3:4,3:4:2")
    c.topics("--delete", "--topic", "churn")
    step("churn created and deleted")

    # ISR shrink: follower 4 paused until the leader drops it, then resumed
    create(c, "orders", "2:3:4,3:4:2,4:2:3", "min.insync.replicas=2")
    produce(c, "orders")
    c.signal(4, signal.SIGSTOP)
    wait_for("broker 4 out of orders-0's ISR", lambda: 4 not in part(c, "orders")["Isr"])
    c.signal(4, signal.SIGCONT)
    wait_for("broker 4 back in orders-0's ISR", lambda: 4 in part(c, "orders")["Isr"])
    step("isr shrink and expand (SIGSTOP/SIGCONT of broker 4)")

    # ELR: clean shutdowns of 4 then 3 then the leader 2; ELR member 3 comes back first
    create(c, "elr", "2:3:4", "min.insync.replicas=2")
    produce(c, "elr")
    for b in (4, 3, 2):
        c.signal(b, signal.SIGTERM)
    wait_for("elr-0 leaderless", lambda: part(c, "elr")["Leader"] == -1)
    c.start_node(3)
    wait_for("elr-0 led by 3", lambda: part(c, "elr")["Leader"] == 3)
    c.start_node(2)
    c.start_node(4)
    wait_for("elr-0 fully in sync", lambda: sorted(part(c, "elr")["Isr"]) == [2, 3, 4])
    step("elr election (SIGTERM 4, 3, 2; start 3)")

    # min.insync.replicas changed: the controller writes a ClearElrRecord
    alter_topic(c, "elr", "min.insync.replicas=1")
    step("min.insync.replicas of elr changed")

    # unclean election through the topic config, then recovery
    create(c, "unclean", "2:3")
    produce(c, "unclean")
    c.signal(3, signal.SIGKILL)
    wait_for("3 out of unclean-0's ISR", lambda: part(c, "unclean")["Isr"] == [2])
    produce(c, "unclean")
    c.signal(2, signal.SIGKILL)
    c.start_node(3)
    wait_for("unclean-0 leaderless", lambda: part(c, "unclean")["Leader"] == -1)
    alter_topic(c, "unclean", "unclean.leader.election.enable=true")
    wait_for("unclean-0 led by 3", lambda: part(c, "unclean")["Leader"] == 3)
    c.start_node(2)
    step("unclean election by topic config (kill -9 3, 2; start 3)")

    # unclean election through kafka-leader-election --election-type UNCLEAN
    create(c, "forced", "4:2")
    produce(c, "forced")
    c.signal(2, signal.SIGKILL)
    wait_for("2 out of forced-0's ISR", lambda: part(c, "forced")["Isr"] == [4])
    c.signal(4, signal.SIGKILL)
    c.start_node(2)
    wait_for("forced-0 leaderless", lambda: part(c, "forced")["Leader"] == -1)
    c.tool(ELECT, "--bootstrap-server", c.bootstrap, "--election-type", "UNCLEAN",
           "--topic", "forced", "--partition", "0", check=False)
    wait_for("forced-0 led by 2", lambda: part(c, "forced")["Leader"] == 2)
    c.start_node(4)
    step("unclean election by kafka-leader-election (kill -9 2, 4; start 2)")

    # reassignment, then a preferred election back to the first replica
    plan = work / "reassign.json"
    plan.write_text(json.dumps({"version": 1, "partitions": [
        {"topic": "orders", "partition": 1, "replicas": [2, 4, 3]}]}))
    c.tool(REASSIGN, "--bootstrap-server", c.bootstrap, "--execute",
           "--reassignment-json-file", str(plan))
    wait_for("orders-1 reassigned",
             lambda: part(c, "orders", 1)["Replicas"] == [2, 4, 3]
             and "Adding" not in part(c, "orders", 1))
    c.tool(ELECT, "--bootstrap-server", c.bootstrap, "--election-type", "PREFERRED",
           "--all-topic-partitions", check=False)
    wait_for("orders-1 led by its preferred replica 2",
             lambda: part(c, "orders", 1)["Leader"] == 2)
    step("reassignment of orders-1 and preferred election")

    return steps
