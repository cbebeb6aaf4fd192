"""The controller's gauges of its metadata image, counted from partition states and brokers.

Kafka's controller publishes them under `kafka.controller:type=KafkaController`
(`ControllerMetadataMetricsPublisher`, `ControllerMetadataMetrics`): an operator's
dashboards already watch them. kraftlake counts them with this one rule wherever it has
the states: the demo's comparison with a recorded view and the real-cluster tests
(`report.kafka_view`, from `partition_current` or a timeline as of an offset), and the
live gauges a stream serves (`metrics`, from the state it holds between micro-batches).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from .partition import NO_LEADER

# The gauges, by Kafka's JMX names (kafka.controller:type=KafkaController,name=...)
GAUGES = ("FencedBrokerCount", "ActiveBrokerCount", "OfflinePartitionsCount",
          "PreferredReplicaImbalanceCount", "GlobalTopicCount", "GlobalPartitionCount")


def controller_gauges(states: Iterable[Mapping[str, Any]], fenced: Mapping[int, bool]
                      ) -> dict[str, int]:
    """GAUGES of `states` (every live partition's state: topic_name, leader, replicas) and
    `fenced` (registered broker -> fenced: `kraft.brokers.fenced_brokers`).
    OfflinePartitionsCount counts partitions without a leader, PreferredReplicaImbalanceCount
    those whose leader is not their first replica (a leaderless one included:
    `PartitionRegistration.hasPreferredLeader`)."""
    offline = imbalanced = partitions = 0
    topics: set[Any] = set()
    for s in states:
        partitions += 1
        topics.add(s["topic_name"])
        leader, replicas = s["leader"], s["replicas"]
        offline += leader == NO_LEADER
        imbalanced += not replicas or leader != replicas[0]
    return {
        "FencedBrokerCount": sum(fenced.values()),
        "ActiveBrokerCount": sum(not f for f in fenced.values()),
        "OfflinePartitionsCount": offline,
        "PreferredReplicaImbalanceCount": imbalanced,
        "GlobalTopicCount": len(topics),
        "GlobalPartitionCount": partitions}
