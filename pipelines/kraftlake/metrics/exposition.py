"""The fleet's numbers in Prometheus's text format, served over HTTP (`prometheus_client`).

A scrape builds the metric families from the numbers last counted (`state.Fleet.snapshot`):
a few dozen samples per cluster, whatever its size, and no Spark job. Every family has the
label `cluster_id`. `METRICS` is the one list of what is served, each with the Kafka JMX
metric it stands beside (README, "Watching a stream with Prometheus").
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterator
from dataclasses import dataclass
from threading import Thread
from wsgiref.simple_server import WSGIServer

from prometheus_client import start_http_server
from prometheus_client.core import (
    CollectorRegistry,
    CounterMetricFamily,
    GaugeMetricFamily,
    Metric,
    SummaryMetricFamily,
)
from prometheus_client.registry import Collector

from .state import ClusterNumbers, Fleet

# gauge name -> (key of ClusterNumbers.gauges, help: what it counts, and Kafka's JMX name)
GAUGES = {
    "kraftlake_offline_partitions": (
        "OfflinePartitionsCount", "partitions without a leader (kafka.controller:"
        "type=KafkaController,name=OfflinePartitionsCount)"),
    "kraftlake_preferred_replica_imbalance": (
        "PreferredReplicaImbalanceCount", "partitions whose leader is not their first "
        "replica (kafka.controller:type=KafkaController,name=PreferredReplicaImbalanceCount)"),
    "kraftlake_active_brokers": (
        "ActiveBrokerCount", "registered brokers not fenced (kafka.controller:"
        "type=KafkaController,name=ActiveBrokerCount)"),
    "kraftlake_fenced_brokers": (
        "FencedBrokerCount", "registered brokers fenced (kafka.controller:"
        "type=KafkaController,name=FencedBrokerCount)"),
    "kraftlake_topics": (
        "GlobalTopicCount", "topics (kafka.controller:type=KafkaController,"
        "name=GlobalTopicCount)"),
    "kraftlake_partitions": (
        "GlobalPartitionCount", "partitions (kafka.controller:type=KafkaController,"
        "name=GlobalPartitionCount)"),
    "kraftlake_under_min_isr_partitions": (
        "under_min_isr", "partitions whose ISR is smaller than their effective "
        "min.insync.replicas (kafka.server:type=ReplicaManager,"
        "name=UnderMinIsrPartitionCount, summed over brokers)"),
    "kraftlake_under_replicated_partitions": (
        "under_replicated", "partitions whose ISR is smaller than their replication factor "
        "(kafka.server:type=ReplicaManager,name=UnderReplicatedPartitions, summed over "
        "brokers)"),
    "kraftlake_elr_partitions": (
        "elr_partitions", "partitions with Eligible Leader Replicas (KIP-966; the Elr "
        "column of kafka-topics --describe)"),
    "kraftlake_recovering_partitions": (
        "recovering", "partitions whose leader is still recovering after an unclean "
        "election (LeaderRecoveryState RECOVERING)"),
    "kraftlake_open_incidents": (
        "open_incidents", "incidents not over yet (table incidents, is_open)"),
}
EVENTS = "kraftlake_partition_events"  # a counter: its samples end in _total
# every family served, for the README's table and its test
METRICS = (*GAUGES, f"{EVENTS}_total", "kraftlake_last_applied_offset",
           "kraftlake_last_applied_record_timestamp_seconds",
           "kraftlake_last_applied_record_age_seconds", "kraftlake_stream_batch_seconds",
           "kraftlake_stream_last_batch_seconds", "kraftlake_stream_restarts_total",
           "kraftlake_stream_failures_total")


class FleetCollector(Collector):
    """The metric families of every cluster of a `Fleet`, as of the scrape."""

    def __init__(self, fleet: Fleet) -> None:
        self.fleet = fleet

    def collect(self) -> Iterator[Metric]:
        """prometheus_client's `Collector.collect`, called at every scrape: every family of
        `METRICS`, from the numbers last counted (`Fleet.snapshot`), without a Spark job. A gauge a
        cluster has not counted yet has no sample for it, not a zero."""
        clusters = sorted(self.fleet.snapshot().items())
        now = dt.datetime.now(dt.UTC)
        for name, (key, help_) in GAUGES.items():
            g = GaugeMetricFamily(name, help_, labels=["cluster_id"])
            for cid, n in clusters:
                if key in n.gauges:
                    g.add_metric([cid], n.gauges[key])
            yield g
        events = CounterMetricFamily(
            EVENTS, "partition events the stream found, by type (unclean_election: "
            "kafka.controller:type=ControllerStats,name=UncleanLeaderElectionsPerSec Count; "
            "elr_election: ...,name=ElectionFromEligibleLeaderReplicasPerSec Count); "
            "continued from the lake's events at the stream's start",
            labels=["cluster_id", "event_type"])
        for cid, n in clusters:
            for event, value in sorted(n.events.items()):
                events.add_metric([cid, event], value)
        yield events
        yield from _stream_families(clusters, now)


def _stream_families(clusters: list[tuple[str, ClusterNumbers]], now: dt.datetime
                     ) -> Iterator[Metric]:
    """The log's position and the stream's own health."""
    offset = GaugeMetricFamily(
        "kraftlake_last_applied_offset", "the log's last offset the lake holds "
        "(kafka.controller:type=KafkaController,name=LastAppliedRecordOffset)",
        labels=["cluster_id"])
    stamp = GaugeMetricFamily(
        "kraftlake_last_applied_record_timestamp_seconds", "the time of the record at that "
        "offset, Unix seconds (...,name=LastAppliedRecordTimestamp, in ms)",
        labels=["cluster_id"])
    age = GaugeMetricFamily(
        "kraftlake_last_applied_record_age_seconds", "how old that record is at the scrape "
        "(...,name=LastAppliedRecordLagMs, in ms): a stream behind its log, or a controller "
        "that stopped writing", labels=["cluster_id"])
    batches = SummaryMetricFamily(
        "kraftlake_stream_batch_seconds", "micro-batches since the stream started, and "
        "their seconds from start to last commit", labels=["cluster_id"])
    last = GaugeMetricFamily("kraftlake_stream_last_batch_seconds",
                             "the last micro-batch's seconds", labels=["cluster_id"])
    restarts = CounterMetricFamily(
        "kraftlake_stream_restarts", "queries started again from their checkpoint after a "
        "transient failure", labels=["cluster_id"])
    failures = CounterMetricFamily("kraftlake_stream_failures", "queries that failed",
                                   labels=["cluster_id"])
    for cid, n in clusters:
        if n.last_offset is not None:
            offset.add_metric([cid], n.last_offset)
        if n.last_timestamp is not None:
            stamp.add_metric([cid], n.last_timestamp.timestamp())
            age.add_metric([cid], max(0.0, (now - n.last_timestamp).total_seconds()))
        batches.add_metric([cid], n.batches, n.batch_seconds)
        if n.last_batch_seconds is not None:
            last.add_metric([cid], n.last_batch_seconds)
        restarts.add_metric([cid], n.restarts)
        failures.add_metric([cid], n.failures)
    yield from (offset, stamp, age, batches, last, restarts, failures)


@dataclass
class MetricsServer:
    """`/metrics` served on a thread of its own until `close`."""

    server: WSGIServer
    thread: Thread

    @property
    def port(self) -> int:
        return self.server.server_port

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()
        self.thread.join()


def serve_metrics(fleet: Fleet, port: int, host: str = "127.0.0.1") -> MetricsServer:
    """Serve the fleet's metrics at http://HOST:PORT/metrics (port 0: any free port)."""
    registry = CollectorRegistry(auto_describe=False)
    registry.register(FleetCollector(fleet))
    server, thread = start_http_server(port, host, registry=registry)
    return MetricsServer(server, thread)
