"""Real incidents, driven with Kafka's own tools against a running `KafkaCluster`.

One sequence, run once per test session, covers what kraftlake claims to detect: topic
churn, ISR shrinks from the fencing of a paused broker, fencing after kill -9, an ELR
election after clean (SIGTERM) shutdowns, a min.insync.replicas change (ClearElrRecord),
unclean elections through the topic config and through `kafka-leader-election
--election-type UNCLEAN` with the recovery that follows, a throttled reassignment listed
while it lasts and cancelled, two reassignments completed and a preferred election, and an
under-replication longer than the attribution window of incident causes followed by an
unrelated controlled shutdown. Each step waits for Kafka to report the state it was after,
so the log is the same shape on a slow machine.

What Kafka's tools say they did is kept with the step (`Said`): the topics `--create`
created, the partitions `kafka-leader-election` elected, the reassignments
`kafka-reassign-partitions` started, cancelled and verified completed, and the reassignments
it listed as ongoing; the tests hold the lake's events of that step against it.
"""

from __future__ import annotations

import json
import re
import shutil
import signal
import subprocess
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kraftlake.kraft.configs import CLUSTER_DEFAULT
from kraftlake.kraft.gauges import GAUGES
from kraftlake.kraft.timing import REPLICA_LAG_TIME_MAX_MS as LAG_KEY
from kraftlake.kraft.timing import attribution_window_ms
from tests.polling import wait_until

from .cluster import REPLICA_LAG_TIME_MAX_MS, KafkaCluster, changes_end, java, run_tool, tail

TOPICS = "org.apache.kafka.tools.TopicCommand"
ELECT = "org.apache.kafka.tools.LeaderElectionCommand"
REASSIGN = "org.apache.kafka.tools.reassign.ReassignPartitionsCommand"
CONFIG = "kafka.admin.ConfigCommand"
SHELL = "org.apache.kafka.shell.MetadataShell"
QUORUM = "org.apache.kafka.tools.MetadataQuorumCommand"
# records produced to `moving` (100 B each): about 16 fetches of the cluster's
# replica.fetch.max.bytes, so a follower throttled after its first fetch stays behind
MOVING_RECORDS = 10_000
# The last step's under-replication: `lagging` is led by broker 5, which holds no other
# replica, so its own replica.lag.time.max.ms (a static setting of broker 5 alone) drops the
# paused follower 3 after 2-3 s, well before the controller would fence 3 (its
# broker.session.timeout.ms, Kafka's 9 s). A paused broker must not become a broker outage.
NODE_SETTINGS = {5: {"replica.lag.time.max.ms": "2000"}}
# produced to `lagging` around the pause (100 B each, 10 s): the follower falls some 100
# fetches of replica.fetch.max.bytes behind, minutes at 1 B/s
LAGGING_RECORDS, LAGGING_PER_SECOND = 20_000, 2_000
LAGGING_STEP = "lagging-0's follower 3 paused out of the ISR, held out by a 1 B/s throttle"
# `kafka-topics --describe` filters: what each lists (TopicCommand.PartitionDescription)
STEP = 90  # s: how long the scenario waits for Kafka to reach the state of one step
FILTERS = {"under_replicated": "--under-replicated-partitions",  # |isr| < replicas not adding
           "under_min_isr": "--under-min-isr-partitions",  # no leader, or |isr| < min ISR
           "unavailable": "--unavailable-partitions"}  # no leader, or a leader not live


def _producer(c: KafkaCluster, topic: str, records: int, per_second: int) -> list[str]:
    """ProducerPerformance's arguments: acks=1 producing, so an out-of-sync replica really is
    behind. Records go to the topic's partitions in turn (the default sticky partitioner can
    put a few hundred small records all into one or two partitions, and tests read partition
    0). `per_second` -1: as fast as it can."""
    return ["org.apache.kafka.tools.ProducerPerformance", "--topic", topic,
            "--num-records", str(records), "--record-size", "100",
            "--throughput", str(per_second),
            "--producer-props", f"bootstrap.servers={c.bootstrap}", "acks=1",
            "partitioner.class=org.apache.kafka.clients.producer.RoundRobinPartitioner",
            "delivery.timeout.ms=30000", "request.timeout.ms=10000"]


def produce(c: KafkaCluster, topic: str, records: int = 300) -> None:
    c.tool(*_producer(c, topic, records, -1))


@contextmanager
def producing(c: KafkaCluster, topic: str, records: int, per_second: int, out: Path
              ) -> Iterator[None]:
    """A producer writing to `topic` in the background while the block runs (its output to
    `out`); it must have finished all its records after the block."""
    with open(out, "w") as f:
        proc = subprocess.Popen(java(c.version, *_producer(c, topic, records, per_second)),
                                stdout=f, stderr=subprocess.STDOUT)
    try:
        yield
        proc.wait(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 0, f"the producer exited {proc.returncode}:\n{tail(out)}"


def wait_shrunk(c: KafkaCluster, leader: int, topic: str, out: int, since: int,
                timeout: float = 30) -> None:
    """Until broker `leader`'s server.log (after byte `since`) says the ISR of `topic`-0 is
    one without broker `out`: the leader's shrink committed. The leader says so in one of
    two lines, whichever reaches it first: Partition's "ISR updated to" (the controller's
    answer to its AlterPartition) or, when the metadata log's new registration arrives
    before that answer, the "Skipped the become-leader state change" line that prints the
    registration with its `isr=[...]` (seen in a run on 2026-11-26, where the first never
    came). Polled every 0.1 s, where asking a tool (a JVM start, seconds on a busy machine)
    would leave a paused follower paused until the controller fenced it. (A leader drops a
    silent follower only while records are written: one with the leader's log end offset is
    in sync however long it is silent, Partition.getOutOfSyncReplicas.)"""
    node = c.nodes[leader]
    name = re.escape(topic).encode()
    lines = (re.compile(rb"\[Partition " + name + rb"-0 broker=" + str(leader).encode()
                        + rb"\] ISR updated to ([\d,]+) "),
             re.compile(rb"\[Broker id=" + str(leader).encode() + rb"\] Skipped the "
                        rb"become-leader state change for " + name + rb"-0 .*?"
                        rb"PartitionRegistration\(replicas=\[[\d, ]*\], .*?isr=\[([\d, ]*)\]"))

    def shrunk() -> bool:
        with open(node.log, "rb") as f:
            f.seek(since)
            text = f.read()
        return any(str(out).encode() not in m.group(1).replace(b" ", b"").split(b",")
                   for line in lines for m in line.finditer(text))

    wait_until(f"broker {leader} logs {topic}-0's ISR without {out}", shrunk, timeout,
               interval=0.1, detail=lambda: tail(node.log, 30))


def fully_in_sync(c: KafkaCluster) -> bool:
    """Every partition led, its ISR all its replicas, nothing being reassigned: no partition
    trouble open (an unclean election's recovery ends with its first ISR expansion)."""
    return all(p["Leader"] != -1 and sorted(p["Isr"]) == sorted(p["Replicas"])
               and "Adding Replicas" not in p for p in c.describe().values())


def settle_isr(c: KafkaCluster) -> None:
    """Until a step's brokers are back in every ISR (a restarted or resumed broker rejoins
    its partitions one by one over a few seconds): Kafka's view after the step is then taken
    while the log holds no partition change, which the step-by-step comparison needs."""
    wait_until("every partition back in sync", lambda: fully_in_sync(c), STEP)


def create(c: KafkaCluster, topic: str, assignment: str, *configs: str) -> Said:
    """The topic's partitions, as `--create` reports them created (one per assignment)."""
    args = ["--create", "--topic", topic, "--replica-assignment", assignment]
    for conf in configs:
        args += ["--config", conf]
    out = c.topics(*args)
    assert f"Created topic {topic}." in out, out
    return Said("partition_created", {(topic, p) for p in range(assignment.count(",") + 1)})


def alter_topic(c: KafkaCluster, topic: str, config: str) -> None:
    c.tool(CONFIG, "--bootstrap-server", c.bootstrap, "--entity-type", "topics",
           "--entity-name", topic, "--alter", "--add-config", config)


def part(c: KafkaCluster, topic: str, p: int = 0) -> dict[str, object]:
    return c.describe(topic)[(topic, p)]


# The last offset the controller has seen committed. Not LastAppliedRecordOffset: on the
# active controller that counts records appended but not yet committed
# (OffsetControlManager.handleScheduleAppend).
COMMITTED = "LastCommittedRecordOffset"


Partition = tuple[str, int]


@dataclass
class Said:
    """What one of Kafka's tools reported doing: `event` (the kraftlake event type it is held
    against) for `partitions`, between log offsets `start` (inclusive) and `end` (exclusive),
    both high watermarks read around the tool; None: anywhere in the step."""

    event: str
    partitions: set[Partition]
    start: int | None = None
    end: int | None = None


@dataclass
class StepView:
    """Kafka's view right after one scenario step, between two committed metadata offsets."""

    step: str
    high_watermark: int  # the quorum's before Kafka was asked: every record below committed
    high_watermark_after: int  # and after (it moves all the time: the controller's NoOps)
    describe: dict[Partition, dict[str, object]]  # kafka-topics --describe
    listed: dict[str, set[Partition]]  # FILTERS key -> the partitions Kafka lists
    gauges: dict[str, int]  # GAUGES -> the controller's value
    counters: dict[str, int]  # COUNTERS -> the controller's count (read after `gauges`)
    said: list[Said] = field(default_factory=list)  # what the step's tools reported doing
    # `kafka-reassign-partitions --list` during the step: partition -> (replicas, adding,
    # removing) of each reassignment it listed as ongoing
    ongoing: dict[Partition, tuple[list[int], list[int], list[int]]] = field(
        default_factory=dict)


def high_watermark(c: KafkaCluster) -> int:
    """The metadata quorum's high watermark (`kafka-metadata-quorum describe --status`)."""
    out = c.tool(QUORUM, "--bootstrap-controller", f"127.0.0.1:{c.controller.port}",
                 "describe", "--status").stdout
    m = re.search(r"HighWatermark:\s+(\d+)", out)
    if m is None:
        raise RuntimeError(f"kafka-metadata-quorum printed no HighWatermark:\n{out}")
    return int(m.group(1))


def listed(c: KafkaCluster, flag: str) -> set[Partition]:
    """The partitions `kafka-topics --describe FLAG` lists."""
    out = c.topics("--describe", flag)
    return {(t, int(p)) for t, p in re.findall(r"Topic: (\S+)\s+Partition: (\d+)", out)}


def gauges(c: KafkaCluster, committed: int) -> dict[str, int]:
    """The controller's GAUGES, read once its COMMITTED offset has reached `committed` (the
    gauges follow the committed log: before that they may not hold its last records)."""
    values: dict[str, int] = {}
    wait_until(f"the controller's {COMMITTED} at {committed}",
               lambda: values.update(c.gauges()) or values[COMMITTED] >= committed, STEP)
    missing = set(GAUGES) - set(values)
    assert not missing, f"the controller has no gauge {missing}: {values}"
    return {name: values[name] for name in GAUGES}


def view(c: KafkaCluster, step: str) -> StepView:
    """Kafka's view after `step`, bracketed by two reads of the high watermark: where the log
    holds no partition or broker change between the two, the view is the state at either."""
    hw = high_watermark(c)
    describe = c.describe()
    seen = {kind: listed(c, flag) for kind, flag in FILTERS.items()}
    at = gauges(c, hw - 1)
    counters = c.counters()
    return StepView(step, hw, high_watermark(c), describe, seen, at,
                    {name: counters[name] for name in COUNTERS})


def parse_partitions(text: str) -> set[Partition]:
    """`topic-partition` items (TopicPartition.toString) separated by commas or spaces."""
    items = [t for t in re.split(r"[,\s]+", text.strip()) if t]
    return {(t.rsplit("-", 1)[0], int(t.rsplit("-", 1)[1])) for t in items}


def elect(c: KafkaCluster, kind: str, *where: str) -> Said:
    """`kafka-leader-election --election-type KIND WHERE...`: the partitions it reports
    elected (its "Successfully completed" line), between the high watermarks around it."""
    start = high_watermark(c)
    out = c.tool(ELECT, "--bootstrap-server", c.bootstrap, "--election-type", kind, *where,
                 check=False).stdout
    m = re.search(rf"Successfully completed leader election \({kind}\) for partitions (.+)",
                  out)
    event = {"PREFERRED": "preferred_election", "UNCLEAN": "unclean_election"}[kind]
    return Said(event, parse_partitions(m.group(1)) if m else set(), start, high_watermark(c))


def reassign(c: KafkaCluster, action: str, plan: Path, *args: str) -> str:
    return c.tool(REASSIGN, "--bootstrap-server", c.bootstrap, action,
                  "--reassignment-json-file", str(plan), *args).stdout


def reassignment_plan(path: Path, moves: dict[Partition, list[int]]) -> Path:
    path.write_text(json.dumps({"version": 1, "partitions": [
        {"topic": t, "partition": p, "replicas": r} for (t, p), r in moves.items()]}))
    return path


def started(out: str) -> Said:
    """The partitions `--execute` reports it started reassigning."""
    m = re.search(r"Successfully started partition reassignments? for (\S+)", out)
    assert m, out
    return Said("reassignment_started", parse_partitions(m.group(1)))


def cancelled(out: str) -> Said:
    """The partitions `--cancel` reports it cancelled."""
    m = re.search(r"Successfully cancelled partition reassignments? for: (\S+)", out)
    assert m, out
    return Said("reassignment_cancelled", parse_partitions(m.group(1)))


def completed(out: str) -> set[Partition]:
    """The partitions `--verify` reports completed."""
    return parse_partitions(" ".join(
        re.findall(r"Reassignment of partition (\S+) is completed\.", out)))


def ongoing(c: KafkaCluster) -> dict[Partition, tuple[list[int], list[int], list[int]]]:
    """`kafka-reassign-partitions --list` (the admin API's listPartitionReassignments):
    partition -> (replicas, adding, removing)."""
    out = c.tool(REASSIGN, "--bootstrap-server", c.bootstrap, "--list").stdout

    def ids(text: str | None) -> list[int]:
        return [int(x) for x in text.split(",")] if text else []
    found = {}
    for m in re.finditer(r"^(\S+): replicas: ([\d,]+)\.(?: adding: ([\d,]+)\.)?"
                         r"(?: removing: ([\d,]+)\.)?$", out, re.M):
        (tp,) = parse_partitions(m.group(1))
        found[tp] = (ids(m.group(2)), ids(m.group(3)), ids(m.group(4)))
    return found


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
    gauges: dict[str, int]  # the controller's GAUGES (JMX)
    stream_lake: Path | None = None  # `kraftlake stream` tailed the live controller log here
    # its `/metrics` after each micro-batch (tests/metrics/scrape.py)
    scrapes: list[dict[str, float]] = field(default_factory=list)
    waited: float = 0.0  # s the scenario waited for the live stream after its steps
    views: list[StepView] = field(default_factory=list)  # Kafka's view after each step

    def kafka_view(self) -> dict[str, Any]:
        """Kafka's view of the end as `kafka-view.json` holds it beside an example log
        (scripts/record_real_incident.py), which `kraftlake demo --example` compares with."""
        return {
            "kafka_version": self.cluster.version,
            "cluster_id": self.cluster.cluster_id,
            "steps": self.steps,
            "controller_counters": self.counters,
            "controller_gauges": self.gauges,
            "describe": [{"topic": t, "partition": p, **row}
                         for (t, p), row in sorted(self.describe.items())],
            "metadata_shell": [{"topic": t, "partition": p, **row}
                               for (t, p), row in sorted(self.shell.items())],
        }


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
    hw = high_watermark(c)
    at_end = gauges(c, hw - 1)
    # a snapshot holding every change the log had when Kafka was asked holds the state just
    # described: the controller writes one within 10 s of the scenario's last change, often
    # before this moment, where waiting for one written after this moment took up to 10 s
    # (10.7 s against 0.7 in one run). (A snapshot's name is its end offset, exclusive.)
    last = changes_end(c.controller.metadata_log, hw)
    wait_until(f"a snapshot of the controller's log up to offset {last} at least",
               lambda: any(int(f.name.split("-")[0]) >= last for f in
                           c.controller.metadata_log.glob("*.checkpoint")), STEP)
    controller_log = copy_log(c.controller.metadata_log, work / "controller")
    snapshot = max(controller_log.glob("*.checkpoint"))
    return Incidents(c, steps, controller_log,
                     copy_log(c.nodes[2].metadata_log, work / "broker-2"),
                     describe, counters, shell_partitions(c, snapshot, set(describe)),
                     at_end)


def settle(c: KafkaCluster) -> None:
    """Wait until every partition is led and nothing is being reassigned or recovered."""
    def quiet() -> bool:
        parts = c.describe().values()
        return all(p["Leader"] != -1 and "Adding Replicas" not in p for p in parts)
    wait_until("every partition led", quiet, STEP)


# how long one metadata shell run may take: 1-3 s as a rule (a JVM start and a small snapshot)
SHELL_TIMEOUT = 30


def shell(c: KafkaCluster, snapshot: Path, *command: str) -> str:
    """What the metadata shell prints for `command` on `snapshot`. A shell whose loader
    applies nothing never answers (MetadataShell.waitUntilCaughtUp polls for an applied
    offset without end): one hung so for the whole 120 s of a run's timeout on 2026-12-02
    and failed the scenario, where the same command on the same copy answered in 1 s. So a
    run gets `SHELL_TIMEOUT` and is asked again, three times at most."""
    args = (c.version, SHELL, "--snapshot", str(snapshot), *command)
    for _ in range(2):
        try:
            return run_tool(*args, timeout=SHELL_TIMEOUT).stdout
        except subprocess.TimeoutExpired:
            pass
    return run_tool(*args, timeout=SHELL_TIMEOUT).stdout  # a third hang fails the scenario


def shell_partitions(c: KafkaCluster, snapshot: Path, expected: set[tuple[str, int]]
                     ) -> dict[tuple[str, int], dict[str, Any]]:
    """The metadata shell's PartitionRegistration of every partition in `snapshot` (a copy:
    the shell refuses a directory a running node has locked). The shell runs as its own
    process: in the tool server its second run never returned."""
    want = {f"/image/topics/byName/{t}/{p}" for t, p in expected}
    for _ in range(5):  # see below: the shell may answer before it has loaded everything
        listing = shell(c, snapshot, "find", "/image/topics/byName")
        paths = [p for p in listing.split()
                 if re.fullmatch(r"/image/topics/byName/[^/]+/\d+", p)]
        if want <= set(paths):
            break
    assert want <= set(paths), f"the metadata shell lacks {want - set(paths)}:\n{listing}"
    # one shell for every partition (`cat` prints its targets in order); it may run its
    # command before it has loaded the whole snapshot ("No such file or directory" for a
    # path `find` just listed, and one registration fewer): ask again
    for _ in range(5):
        text = shell(c, snapshot, "cat", *paths)
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


def run(c: KafkaCluster, work: Path, views: list[StepView] | None = None,
        after_view: Callable[[StepView], None] | None = None) -> list[str]:
    """Drive every incident; returns the steps done, in order (for failure messages).
    `views`: Kafka's view after each step is appended to it, with what the step's tools
    reported doing. `after_view`: called with each view before the next step starts (the
    live stream catching up, so that one of its micro-batches ends in the step's state)."""
    steps: list[str] = []
    said: list[Said] = []
    listed_ongoing: dict[Partition, tuple[list[int], list[int], list[int]]] = {}

    def step(name: str) -> None:
        steps.append(f"{time.strftime('%H:%M:%S')} {name}")
        if views is not None:
            views.append(view(c, name))
            views[-1].said, views[-1].ongoing = list(said), dict(listed_ongoing)
            if after_view is not None:
                after_view(views[-1])
        said.clear()
        listed_ongoing.clear()

    # The brokers' replica.lag.time.max.ms, static in their configs, also written to the log
    # as the cluster default, through the controller: a broker refuses to set it dynamically,
    # the controller stores a broker config without checking it (kraft.timing). The log then
    # says what this cluster runs with, and the attribution window kraftlake reads from it is
    # that plus the controller's broker.session.timeout.ms (not set: Kafka's 9 s).
    c.tool(CONFIG, "--bootstrap-controller", f"127.0.0.1:{c.controller.port}",
           "--entity-type", "brokers", "--entity-default", "--alter",
           "--add-config", f"{LAG_KEY}={REPLICA_LAG_TIME_MAX_MS}")

    # topic churn
    said.append(create(c, "churn", "2:3:4,3:4:2"))
    c.topics("--delete", "--topic", "churn")
    step("churn created and deleted")

    # ISR shrink: broker 4 paused until the controller fences it (no heartbeat for its
    # broker.session.timeout.ms), which takes it out of every ISR in the same records, then
    # resumed. (Its followers hold the leaders' log end, and nothing is written meanwhile,
    # so no leader drops them sooner.) The fence is read from the controller's gauge, not a
    # describe: an admin client may send a request to the paused broker (the metadata it
    # got names 4 until the fence) and wait its whole default.api.timeout.ms, 60 s, for it.
    # After the fence no broker names 4 any more, so the shrink is read while 4 is still
    # paused: read after the resume, a fast machine had 4 back in the ISR (a CI run on
    # 2026-11-27 failed so).
    said.append(create(c, "orders", "2:3:4,3:4:2,4:2:3", "min.insync.replicas=2"))
    produce(c, "orders")
    fenced = c.gauges()["FencedBrokerCount"]
    c.signal(4, signal.SIGSTOP)
    wait_until("broker 4 fenced", lambda: c.gauges()["FencedBrokerCount"] > fenced, STEP)
    wait_until("broker 4 out of orders-0's ISR", lambda: 4 not in part(c, "orders")["Isr"],
               STEP)
    c.signal(4, signal.SIGCONT)
    wait_until("broker 4 back in orders-0's ISR", lambda: 4 in part(c, "orders")["Isr"], STEP)
    settle_isr(c)
    step("isr shrink and expand (SIGSTOP/SIGCONT of broker 4)")

    # ELR: clean shutdowns of 4 then 3 then the leader 2 (Kafka's view taken while all three
    # are down: every partition on them offline, three brokers fenced); ELR member 3 comes
    # back first
    said.append(create(c, "elr", "2:3:4", "min.insync.replicas=2"))
    produce(c, "elr")
    for b in (4, 3, 2):
        c.signal(b, signal.SIGTERM)
    wait_until("elr-0 leaderless", lambda: part(c, "elr")["Leader"] == -1, STEP)
    step("brokers 4, 3, 2 shut down (SIGTERM): their partitions offline")
    c.start_node(3)
    wait_until("elr-0 led by 3", lambda: part(c, "elr")["Leader"] == 3, STEP)
    c.start_nodes(2, 4)
    wait_until("elr-0 fully in sync", lambda: sorted(part(c, "elr")["Isr"]) == [2, 3, 4], STEP)
    step("elr election (start 3, then 2 and 4)")

    # min.insync.replicas changed: the controller writes a ClearElrRecord
    alter_topic(c, "elr", "min.insync.replicas=1")
    step("min.insync.replicas of elr changed")

    # unclean election through the topic config, then recovery
    said.append(create(c, "unclean", "2:3"))
    produce(c, "unclean")
    c.signal(3, signal.SIGKILL)
    wait_until("3 out of unclean-0's ISR", lambda: part(c, "unclean")["Isr"] == [2], STEP)
    produce(c, "unclean")
    c.signal(2, signal.SIGKILL)
    c.start_node(3)
    wait_until("unclean-0 leaderless", lambda: part(c, "unclean")["Leader"] == -1, STEP)
    alter_topic(c, "unclean", "unclean.leader.election.enable=true")
    wait_until("unclean-0 led by 3", lambda: part(c, "unclean")["Leader"] == 3, STEP)
    c.start_node(2)
    settle_isr(c)
    step("unclean election by topic config (kill -9 3, 2; start 3)")

    # unclean election through kafka-leader-election --election-type UNCLEAN
    said.append(create(c, "forced", "4:2"))
    produce(c, "forced")
    c.signal(2, signal.SIGKILL)
    wait_until("2 out of forced-0's ISR", lambda: part(c, "forced")["Isr"] == [4], STEP)
    c.signal(4, signal.SIGKILL)
    c.start_node(2)
    wait_until("forced-0 leaderless", lambda: part(c, "forced")["Leader"] == -1, STEP)
    said.append(elect(c, "UNCLEAN", "--topic", "forced", "--partition", "0"))
    wait_until("forced-0 led by 2", lambda: part(c, "forced")["Leader"] == 2, STEP)
    c.start_node(4)
    settle_isr(c)
    step("unclean election by kafka-leader-election (kill -9 2, 4; start 2)")

    # a reassignment throttled to 1 B/s (the cluster's replica.fetch.max.bytes lets a
    # follower take 64 KiB per fetch, then the throttle holds it off): Kafka lists it
    # ongoing, then it is cancelled
    said.append(create(c, "moving", "2"))
    produce(c, "moving", MOVING_RECORDS)
    moving = {("moving", 0): [2, 3]}
    plan = reassignment_plan(work / "throttled.json", moving)
    said.append(started(reassign(c, "--execute", plan, "--throttle", "1")))
    listed_ongoing.update(ongoing(c))
    assert set(moving) <= set(listed_ongoing), \
        f"the throttled reassignment is not listed ongoing: {listed_ongoing}"
    step("reassignment of moving-0 throttled to 1 B/s, listed ongoing")

    # that reassignment cancelled; two reassignments to completion (moving-0 copied to two
    # other brokers; orders-1 reordered, done in one record); a preferred election of every
    # partition
    said.append(cancelled(reassign(c, "--cancel", plan)))
    moves = {("moving", 0): [3, 4], ("orders", 1): [2, 4, 3]}
    plan = reassignment_plan(work / "reassign.json", moves)
    said.append(started(reassign(c, "--execute", plan)))
    done: set[Partition] = set()
    wait_until("both reassignments verified completed",
               lambda: done.update(completed(reassign(c, "--verify", plan)))
               or done == set(moves), STEP)
    said.append(Said("reassignment_completed", done))
    said.append(elect(c, "PREFERRED", "--all-topic-partitions"))
    wait_until("orders-1 led by its preferred replica 2",
               lambda: part(c, "orders", 1)["Leader"] == 2, STEP)
    step("reassignment of moving-0 cancelled; moving-0 and orders-1 reassigned; "
         "preferred election")

    # an under-replication, then an unrelated controlled shutdown: follower 3 of lagging-0
    # paused while a producer writes, until the leader has dropped it from the ISR; a 1 B/s
    # replication throttle then holds it out (Kafka throttles only replicas out of the ISR,
    # and counts in-sync traffic against the quota too: RemoteLeaderEndPoint,
    # ReplicaManager.shouldLeaderThrottle, ReplicaFetcherThread). Broker 4, no replica of
    # lagging, shuts down once the under-replication is older than the attribution window
    # kraftlake reads from this log (the cluster default written at the start, and Kafka's
    # broker.session.timeout.ms).
    settle_isr(c)
    said.append(create(c, "lagging", "5:3", "leader.replication.throttled.replicas=*",
                       "follower.replication.throttled.replicas=*"))
    rates = "leader.replication.throttled.rate,follower.replication.throttled.rate"
    c.tool(CONFIG, "--bootstrap-server", c.bootstrap, "--entity-type", "brokers",
           "--entity-default", "--alter", "--add-config", rates.replace(",", "=1,") + "=1")
    leader, since = c.nodes[5], c.nodes[5].log.stat().st_size
    with producing(c, "lagging", LAGGING_RECORDS, LAGGING_PER_SECOND, work / "lagging.out"):
        wait_until("records in lagging-0", lambda: any(
            f.stat().st_size for f in (leader.data / "lagging-0").glob("*.log")), STEP)
        c.signal(3, signal.SIGSTOP)
        try:  # the shrink committed: the leader throttles 3 from its next fetch on
            wait_shrunk(c, 5, "lagging", 3, since)
            shrunk = time.monotonic()
        finally:
            c.signal(3, signal.SIGCONT)
    assert part(c, "lagging")["Isr"] == [5], part(c, "lagging")
    step(LAGGING_STEP)
    in_force = {LAG_KEY: {CLUSTER_DEFAULT: str(REPLICA_LAG_TIME_MAX_MS)}}
    window = attribution_window_ms(in_force) / 1000
    time.sleep(max(0.0, shrunk + window + 3 - time.monotonic()))
    assert part(c, "lagging")["Isr"] == [5], "follower 3 caught up before the shutdown"
    c.signal(4, signal.SIGTERM)
    c.start_node(4)
    c.tool(CONFIG, "--bootstrap-server", c.bootstrap, "--entity-type", "brokers",
           "--entity-default", "--alter", "--delete-config", rates)
    settle_isr(c)
    step(f"broker 4 shut down (SIGTERM) over the {window:.0f} s attribution window after "
         "lagging-0's shrink, restarted; throttle removed")

    return steps
