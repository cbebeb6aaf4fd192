"""A real Apache Kafka KRaft cluster in separate JVMs: the truth kraftlake is checked against.

One controller and N brokers on 127.0.0.1, each `java -cp <pinned jars> kafka.Kafka
server.properties` with a small heap, formatted with Kafka's own `kafka.tools.StorageTool`
under one cluster id. The jars come from the pinned poms beside this file (resolved once at
setup by test.sh), so a run after setup needs no network. The controller's metadata log is
configured to roll segments and write snapshots quickly (through the internal minimums
Kafka's own tests use), so a few minutes of activity exercise rolls and snapshots.

Kafka's tools (TopicCommand, JmxTool, ...) run through `tool`, with an operator's arguments,
in one long-lived JVM of the cluster's version (toolserver.py: a JVM start per question was
most of the scenario's time); `run_tool` runs one as its own process (DumpLogSegments, whose
text of the real files is 450 MB). A node that does not come up raises `KafkaStartError`
carrying the tail of Kafka's own log.
"""

from __future__ import annotations

import functools
import os
import re
import signal
import subprocess
import uuid
from base64 import urlsafe_b64encode
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from kraftlake.codec.batch import Batch, scan_batches
from kraftlake.codec.logfiles import records_of_batch
from kraftlake.jvm import resolve
from kraftlake.kraft.records import NO_OP_RECORD
from tests.polling import WaitFailed, wait_until
from tests.ports import free_port

from . import toolserver

POMS = Path(__file__).resolve().parent / "poms"
VERSIONS = ("4.3.1", "3.9.1")

LOG4J2 = """\
status = warn
appender.f.type = File
appender.f.name = F
appender.f.fileName = {log}
appender.f.layout.type = PatternLayout
appender.f.layout.pattern = [%d] %p %m (%c)%n
rootLogger.level = INFO
rootLogger.appenderRef.f.ref = F
logger.raft.name = org.apache.kafka.raft
logger.raft.level = WARN
logger.periodic.name = org.apache.kafka.controller.PeriodicTaskControlManager
logger.periodic.level = WARN
"""

# every broker's replica.lag.time.max.ms (a static setting; Kafka's default is 30 s): a crashed
# or paused follower leaves the ISR within seconds
REPLICA_LAG_TIME_MAX_MS = 5000


# Retention of the metadata log by age: in its cleaning pass (at most once a minute) a node
# deletes the snapshots whose last record is older than this, all but the newest, and the
# segments wholly before the oldest snapshot it keeps. So the first segments of a scenario
# are gone before it ends, under a live reader. (`scripts/record_real_incident.py` keeps the
# whole log: an example starts at offset 0.)
RETENTION_MS = 90_000


# the broker lists `kafka-topics --describe` prints for a partition
LIST_FIELDS = ("Replicas", "Isr", "Adding Replicas", "Removing Replicas", "Elr", "LastKnownElr")


class KafkaStartError(RuntimeError):
    """A Kafka node did not start; the message carries the tail of its log."""


def classpath(version: str) -> str:
    """The pinned jars of Kafka `version` as one Java classpath."""
    return os.pathsep.join(resolve(POMS / f"kafka-{version}.pom.xml"))


def new_cluster_id() -> str:
    """A random Kafka cluster id; like Kafka's Uuid.randomUuid, never one starting with '-'
    (the command-line parsers would take it for an option)."""
    while True:
        cid = urlsafe_b64encode(uuid.uuid4().bytes).decode().rstrip("=")
        if not cid.startswith("-"):
            return cid


def tail(path: Path, lines: int = 60) -> str:
    if not path.is_file():
        return f"({path} was never written)"
    return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])


# Kafka's pinned jars are not verified class by class as each JVM loads them: a node's start
# took 2.05-2.2 CPU s so against 2.5-2.9 with verification (a controller and a broker, two
# starts each, 2026-11-27, loaded machine), and the package starts some 20 Kafka JVMs.
# Verification checks the bytecode is well-formed, which these release jars are; what the
# code does is the same.
NO_VERIFY = ("-XX:+UnlockDiagnosticVMOptions", "-XX:-BytecodeVerificationRemote")


def java(version: str, main: str, *args: str, heap: str = "128m",
         jvm: tuple[str, ...] = (), c1_only: bool = True) -> list[str]:
    """The command line running `main` of Kafka `version` (small heap, quick start-up).
    `c1_only`: the C1 compiler alone, for a JVM of seconds or of minutes with little load
    (the nodes, the tools); a tool that works hard for seconds wants C2 (`run_tool`)."""
    return ["java", f"-Xmx{heap}", "-XX:+UseSerialGC",
            *(("-XX:TieredStopAtLevel=1",) if c1_only else ()), *NO_VERIFY,
            "-Djava.awt.headless=true", *jvm, "-cp", classpath(version), main, *args]


def run_tool(version: str, main: str, *args: str, check: bool = True, timeout: float = 120,
             c1_only: bool = True) -> subprocess.CompletedProcess:
    """Run one of Kafka's command-line tools (a whole JVM), as an operator would."""
    return checked(subprocess.run(java(version, main, *args, c1_only=c1_only),
                                  capture_output=True, text=True, timeout=timeout), check)


def checked(proc: subprocess.CompletedProcess, check: bool) -> subprocess.CompletedProcess:
    """`proc`; with `check`, a non-zero exit raises with what the tool printed."""
    if check and proc.returncode != 0:
        raise RuntimeError(f"{' '.join(proc.args[-20:])} exited {proc.returncode}:\n"
                           f"{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}")
    return proc


@dataclass
class Node:
    """One Kafka process (the controller or a broker) and its files."""

    node_id: int
    role: str  # "controller" or "broker"
    port: int
    home: Path
    jmx_port: int | None = None
    proc: subprocess.Popen | None = None
    started_at: int = 0  # size of server.log when this process was started
    paused: bool = False  # SIGSTOPped

    @property
    def log(self) -> Path:
        return self.home / "server.log"

    @property
    def data(self) -> Path:
        return self.home / "data"

    @property
    def metadata_log(self) -> Path:
        """This node's copy of `__cluster_metadata-0` (the controller's, or an observer's)."""
        return self.data / "__cluster_metadata-0"

    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None


@dataclass
class KafkaCluster:
    """1 controller + `brokers` brokers of Kafka `version` under `root`.

    Four brokers by default: the scenarios put replicas on brokers 2-4 (but for one
    partition broker 5 leads) and keep broker 5 up, because Kafka's admin API (describe,
    elections, configs) needs one live broker while all three replicas of a partition are
    down."""

    root: Path
    version: str = VERSIONS[0]
    brokers: int = 4
    overrides: dict[str, str] = field(default_factory=dict)  # extra controller+broker settings
    node_overrides: dict[int, dict[str, str]] = field(default_factory=dict)  # one node's own
    cluster_id: str = field(default_factory=lambda: new_cluster_id())
    nodes: dict[int, Node] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.root.mkdir(parents=True, exist_ok=True)
        self.nodes[1] = Node(1, "controller", free_port(), self.root / "controller",
                             jmx_port=free_port())
        for i in range(2, 2 + self.brokers):
            self.nodes[i] = Node(i, "broker", free_port(), self.root / f"broker-{i}")

    # -- configuration ------------------------------------------------------------------
    @property
    def controller(self) -> Node:
        return self.nodes[1]

    @property
    def bootstrap(self) -> str:
        """The brokers an admin client may talk to now: running and not paused."""
        return ",".join(f"127.0.0.1:{n.port}" for n in self.nodes.values()
                        if n.role == "broker" and n.alive() and not n.paused)

    def _properties(self, node: Node) -> str:
        ctl = self.controller
        common = {
            "node.id": node.node_id,
            "process.roles": node.role,
            "controller.quorum.voters": f"{ctl.node_id}@127.0.0.1:{ctl.port}",
            "controller.listener.names": "CONTROLLER",
            "listener.security.protocol.map": "CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT",
            "log.dirs": node.data,
            # quick segment rolls and snapshots of the metadata log: Kafka refuses segments
            # under 8 MiB unless its internal minimum is lowered (4.x: internal.*; 3.9: *.min.*)
            "metadata.log.segment.ms": 20000,
            "metadata.log.max.record.bytes.between.snapshots": 8192,
            "metadata.log.max.snapshot.interval.ms": 10000,
            "metadata.max.retention.ms": RETENTION_MS,
            "metadata.max.retention.bytes": -1,
            "log.cleaner.dedupe.buffer.size": 1048577 * 2,
            "log.cleaner.threads": 1,
            "num.network.threads": 2,
            "num.io.threads": 2,
            "num.partitions": 1,
            "offsets.topic.replication.factor": 1,
            "transaction.state.log.replication.factor": 1,
            "group.initial.rebalance.delay.ms": 0,
            # the controller checks for partitions to elect uncleanly every 5 min by default
            "unclean.leader.election.interval.ms": 1000,
            # no leader rebalancing on the controller's own schedule (every 5 min by
            # default, at any moment of the scenario): a partition led by another replica
            # than its first stays so until the scenario's preferred election
            "auto.leader.rebalance.enable": "false",
        }
        if self.version.startswith("3."):
            common["metadata.log.segment.min.bytes"] = 16384
            common["metadata.log.segment.bytes"] = 16384
        else:
            common["internal.metadata.log.segment.bytes"] = 16384
        if node.role == "controller":
            common["listeners"] = f"CONTROLLER://127.0.0.1:{node.port}"
        else:
            common["listeners"] = f"PLAINTEXT://127.0.0.1:{node.port}"
            common["inter.broker.listener.name"] = "PLAINTEXT"
            common["replica.lag.time.max.ms"] = REPLICA_LAG_TIME_MAX_MS
            common["broker.heartbeat.interval.ms"] = 1000
            common["broker.session.timeout.ms"] = 6000
            # a follower takes at most 64 KiB of a partition per fetch (default 1 MiB), so a
            # throttled reassignment of the scenario's 1 MB partition stays ongoing
            common["replica.fetch.max.bytes"] = 65536
        common.update(self.overrides)
        common.update(self.node_overrides.get(node.node_id, {}))
        return "".join(f"{k}={v}\n" for k, v in common.items())

    # -- processes ------------------------------------------------------------------------
    def tool(self, main: str, *args: str, check: bool = True,
             timeout: float = 120) -> subprocess.CompletedProcess:
        """Run one of this cluster's version of Kafka's tools (in the version's tool
        server); `check`: a non-zero exit raises, with what the tool printed."""
        command = functools.partial(java, self.version, str(toolserver.SOURCE), heap="512m")
        return checked(toolserver.server(self.version, command, self.root / "tools.log")
                       .run(main, *args, timeout=timeout), check)

    @property
    def admin_config(self) -> Path:
        """The admin client settings of `topics` (written by `start`)."""
        return self.root / "admin.properties"

    def start(self) -> KafkaCluster:
        self.admin_config.write_text("request.timeout.ms=5000\n")
        for node in self.nodes.values():
            node.home.mkdir(parents=True, exist_ok=True)
            conf = node.home / "server.properties"
            conf.write_text(self._properties(node))
            (node.home / "log4j2.properties").write_text(LOG4J2.format(log=node.log))
            self.tool("kafka.tools.StorageTool", "format", "-t", self.cluster_id,
                      "-c", str(conf), "--ignore-formatted")
        self.start_node(1)
        self.start_nodes(*self.broker_ids())
        return self

    def broker_ids(self) -> list[int]:
        return [i for i, n in self.nodes.items() if n.role == "broker"]

    def start_node(self, node_id: int, wait: bool = True) -> None:
        node = self.nodes[node_id]
        jvm = [f"-Dlog4j2.configurationFile={node.home / 'log4j2.properties'}",
               f"-Dkafka.logs.dir={node.home}"]
        if node.jmx_port:
            jvm += ["-Dcom.sun.management.jmxremote",
                    f"-Dcom.sun.management.jmxremote.port={node.jmx_port}",
                    f"-Dcom.sun.management.jmxremote.rmi.port={node.jmx_port}",
                    "-Dcom.sun.management.jmxremote.authenticate=false",
                    "-Dcom.sun.management.jmxremote.ssl=false",
                    "-Djava.rmi.server.hostname=127.0.0.1"]
        node.started_at = node.log.stat().st_size if node.log.is_file() else 0
        with open(node.home / "stdout.log", "ab") as out:
            node.proc = subprocess.Popen(
                java(self.version, "kafka.Kafka", str(node.home / "server.properties"),
                     heap="320m" if node.role == "broker" else "256m", jvm=tuple(jvm)),
                stdout=out, stderr=subprocess.STDOUT, start_new_session=True)
        if wait:
            self._wait_started(node)

    def start_nodes(self, *node_ids: int) -> None:
        """Start the nodes at once and wait until each has started: a node's start is
        seconds of waiting on its own (a JVM start, its registration), not on the others."""
        for node_id in node_ids:
            self.start_node(node_id, wait=False)
        for node_id in node_ids:
            self._wait_started(self.nodes[node_id])

    def _wait_started(self, node: Node, timeout: float = 120) -> None:
        def started() -> bool:
            if not node.log.is_file():
                return False
            with open(node.log, "rb") as f:
                f.seek(node.started_at)
                return b"Kafka Server started" in f.read()

        try:
            wait_until(f"Kafka {self.version} {node.role} {node.node_id} started", started,
                       timeout, interval=0.5,
                       failed=lambda: None if node.alive()
                       else f"exited with {node.proc.returncode}")
        except WaitFailed as exc:
            raise KafkaStartError(
                f"{exc}; logs in {self.root}\n--- server.log ---\n{tail(node.log)}\n"
                f"--- stdout ---\n{tail(node.home / 'stdout.log', 30)}") from None

    def signal(self, node_id: int, sig: signal.Signals) -> None:
        """Send `sig` to a node (SIGSTOP/SIGCONT pause it; SIGKILL/SIGTERM end it)."""
        node = self.nodes[node_id]
        assert node.proc is not None
        node.proc.send_signal(sig)
        node.paused = sig == signal.SIGSTOP
        if sig in (signal.SIGKILL, signal.SIGTERM):
            node.proc.wait(timeout=60)

    def stop(self) -> None:
        """End every node this cluster started (SIGCONT first, in case one is paused)."""
        for node in reversed(list(self.nodes.values())):
            if node.alive():
                node.proc.send_signal(signal.SIGCONT)
                node.proc.kill()
                node.proc.wait(timeout=30)

    # -- what Kafka reports ---------------------------------------------------------------
    def topics(self, *args: str) -> str:
        """`kafka-topics.sh --bootstrap-server ... ARGS` output. The admin client gives up a
        request after 5 s, not its default 30 s, and asks another broker: until the
        controller fences a paused broker, the client may pick it and wait (one ISR-shrink
        wait of the scenario took 90 s so, its shrink done after 9)."""
        return self.tool("org.apache.kafka.tools.TopicCommand", "--command-config",
                         str(self.admin_config), "--bootstrap-server", self.bootstrap,
                         *args).stdout

    def describe(self, topic: str | None = None) -> dict[tuple[str, int], dict[str, object]]:
        """Per partition: Leader, Replicas, Isr, Elr, LastKnownElr and, while a reassignment
        is ongoing, "Adding Replicas" and "Removing Replicas", as `--describe` prints them
        (tab-separated `key: value` fields; TopicCommand.PartitionDescription)."""
        args = ("--describe", *(("--topic", topic) if topic else ()))
        try:
            out = self.topics(*args)
        except RuntimeError:  # a paused or dying broker answered nothing: ask once more
            out = self.topics(*args)
        parts: dict[tuple[str, int], dict[str, object]] = {}
        for line in out.splitlines():
            fields = {key.strip(): value.strip() for key, _, value in
                      (f.partition(":") for f in line.split("\t") if f.strip())}
            if "Partition" not in fields:
                continue
            row: dict[str, object] = {}
            for key, value in fields.items():
                if key == "Leader":
                    row[key] = -1 if value == "none" else int(value)
                elif key in LIST_FIELDS:
                    row[key] = [int(x) for x in value.split(",") if x and value != "N/A"]
            parts[(fields["Topic"], int(fields["Partition"]))] = row
        return parts

    def _jmx(self, object_name: str, attribute: str) -> str:
        """`kafka-jmx --one-time true --report-format csv` on the controller: one
        `<object name>:<attribute>,"<value>"` line per object the name matches."""
        return self.tool(
            "org.apache.kafka.tools.JmxTool", "--one-time", "true", "--report-format", "csv",
            "--object-name", object_name, "--attributes", attribute, "--jmx-url",
            f"service:jmx:rmi:///jndi/rmi://127.0.0.1:{self.controller.jmx_port}/jmxrmi").stdout

    def jmx(self, name: str) -> int:
        """Count of the controller's `kafka.controller:type=ControllerStats,name=<name>`."""
        out = self._jmx(f"kafka.controller:type=ControllerStats,name={name}", "Count")
        m = re.search(r':Count,"?([0-9.]+)"?', out)
        if m is None:
            raise RuntimeError(f"JmxTool printed no Count for {name}:\n{out}")
        return int(float(m.group(1)))

    def counters(self) -> dict[str, int]:
        """Count of every `kafka.controller:type=ControllerStats` meter and timer (one read:
        UncleanLeaderElectionsPerSec, ElectionFromEligibleLeaderReplicasPerSec...)."""
        out = self._jmx("kafka.controller:type=ControllerStats,name=*", "Count")
        return {name: int(float(value)) for name, value in
                re.findall(r'type=ControllerStats,name=(\w+):Count,"?([0-9.]+)"?', out)}

    def gauges(self) -> dict[str, int]:
        """Every untagged gauge of the controller's `kafka.controller:type=KafkaController`
        (one read: OfflinePartitionsCount, ActiveBrokerCount, LastCommittedRecordOffset...)."""
        out = self._jmx("kafka.controller:type=KafkaController,name=*", "Value")
        return {name: int(float(value)) for name, value in
                re.findall(r'type=KafkaController,name=(\w+):Value,"?(-?[0-9.]+)"?', out)}

    def metadata_files(self) -> list[Path]:
        """Every segment and snapshot of the controller's metadata log, in offset order."""
        d = self.controller.metadata_log
        return sorted(list(d.glob("*.log")) + list(d.glob("*.checkpoint")))


def log_start(log_dir: Path) -> int:
    """The base offset of the oldest segment in a `__cluster_metadata-0` directory (0 until
    retention deleted one)."""
    return min(int(f.stem) for f in log_dir.glob("*.log"))


def changes_end(log_dir: Path, below: int) -> int:
    """One past the last record below offset `below` in a `__cluster_metadata-0` that is not
    a NoOpRecord (control records count): what a stream holding a tail of NoOps must have
    read, or a snapshot must hold, to hold every change below `below`. Read from the
    newest segment back; a segment retention deletes meanwhile is skipped (it is older than
    any offset waited for)."""
    segments = sorted(log_dir.glob("*.log"), key=lambda f: int(f.stem), reverse=True)
    for seg in (s for s in segments if int(s.stem) < below):
        try:
            data = seg.read_bytes()
        except FileNotFoundError:
            continue
        last = max((r.offset for b in scan_batches(data, seg.name)
                    if isinstance(b, Batch) and b.base_offset < below
                    for r in records_of_batch(b)
                    if r.offset < below and r.type != NO_OP_RECORD), default=-1)
        if last >= 0:
            return last + 1
    return 0


def running_cluster(root: Path, version: str = "4.3.1", brokers: int = 4,
                    node_overrides: dict[int, dict[str, str]] | None = None
                    ) -> Iterator[KafkaCluster]:
    """A started cluster for a pytest fixture to yield; stopped after. A cluster that cannot
    start fails the test with Kafka's own log tail (never a skip)."""
    cluster = KafkaCluster(root, version=version, brokers=brokers,
                           node_overrides=node_overrides or {})
    print(f"\nKafka {cluster.version} cluster under {cluster.root}")
    try:
        cluster.start()
    except KafkaStartError as exc:
        cluster.stop()
        pytest.fail(str(exc), pytrace=False)
    yield cluster
    cluster.stop()
