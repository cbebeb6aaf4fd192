"""A real Kafka cluster for the whole session, the incidents driven on it, Kafka's dump of it.

One 4.3.1 cluster (1 controller + 4 brokers) starts once and runs the incident scenario
once; every test of tests/kafka reads what that produced, so the Kafka tests cost one
cluster start and one scenario. A cluster that cannot start fails the test with Kafka's own
log tail; the cluster's directory (logs included) stays under pytest's tmp dir, printed.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from . import scenario
from .cluster import KafkaCluster, KafkaStartError


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
def incidents(kafka: KafkaCluster,
              tmp_path_factory: pytest.TempPathFactory) -> scenario.Incidents:
    work = tmp_path_factory.mktemp("incidents")
    try:
        steps = scenario.run(kafka, work)
    except (AssertionError, RuntimeError) as exc:
        pytest.fail(f"scenario failed: {exc}\nlogs under {kafka.root}", pytrace=False)
    return scenario.observe(kafka, steps, work)

