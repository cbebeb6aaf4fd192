"""A real Kafka cluster for the whole session, the incidents driven on it, Kafka's dump of it.

One 4.3.1 cluster (1 controller + 3 brokers) starts once and runs the incident scenario
once; every test of tests/kafka reads what that produced, so the Kafka tests cost one
cluster start and one scenario. A cluster that cannot start fails the test with Kafka's own
log tail; the cluster's directory (logs included) stays under pytest's tmp dir, printed.
"""

from __future__ import annotations

import shutil
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from . import scenario
from .cluster import KafkaCluster, KafkaStartError


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


COUNTERS = ("UncleanLeaderElectionsPerSec", "ElectionFromEligibleLeaderReplicasPerSec")


@pytest.fixture(scope="session")
def kafka(tmp_path_factory: pytest.TempPathFactory) -> Iterator[KafkaCluster]:
    cluster = KafkaCluster(tmp_path_factory.mktemp("kafka-4.3.1"))
    print(f"\nKafka {cluster.version} cluster under {cluster.root}")
    try:
        cluster.start()
    except KafkaStartError as exc:
        cluster.stop()
        pytest.fail(str(exc), pytrace=False)
    yield cluster
    cluster.stop()


@pytest.fixture(scope="session")
def incidents(kafka: KafkaCluster, tmp_path_factory: pytest.TempPathFactory) -> Incidents:
    work = tmp_path_factory.mktemp("incidents")
    try:
        steps = scenario.run(kafka, work)
    except (AssertionError, RuntimeError) as exc:
        pytest.fail(f"scenario failed: {exc}\nlogs under {kafka.root}", pytrace=False)
    scenario.settle(kafka)
    describe = kafka.describe()
    counters = {name: kafka.jmx(name) for name in COUNTERS}
    # a snapshot the controller writes after this moment holds the state just described
    since = time.time() + 1
    scenario.wait_for("a snapshot of the controller's log written after the scenario",
                      lambda: any(f.stat().st_mtime > since for f in
                                  kafka.controller.metadata_log.glob("*.checkpoint")))
    controller_log = copy_log(kafka.controller.metadata_log, work / "controller")
    snapshot = max(controller_log.glob("*.checkpoint"))
    return Incidents(kafka, steps, controller_log,
                     copy_log(kafka.nodes[2].metadata_log, work / "broker-2"),
                     describe, counters, scenario.shell_partitions(kafka, snapshot))


def copy_log(src: Path, dest: Path) -> Path:
    """A copy of a live `__cluster_metadata-0` (segments, snapshots; no index files)."""
    out = dest / "__cluster_metadata-0"
    out.mkdir(parents=True)
    for f in sorted(src.iterdir()):
        if f.suffix in (".log", ".checkpoint"):
            shutil.copy2(f, out / f.name)
    return out
