"""The 3.9 line on real bytes: metadata.version 3.x, no ELR.

A Kafka 3.9.1 controller and one broker are formatted and started, a topic is created, and
the controller's log is compared with Kafka's `kafka-dump-log` and ingested with kraftlake:
its partitions equal `kafka-topics --describe` of 3.9.1 (which has no ELR columns), the
metadata.version kraftlake stores is the one Kafka's dump prints (below feature level 23,
where ELR starts), and no ELR state appears.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.polling import wait_until

from .cluster import KafkaCluster, running_cluster
from .dumplog import dump
from .scenario import STEP, copy_log, produce
from .test_dump_parity import check_all
from .test_incidents import kraftlake, table


@pytest.fixture(scope="module")
def kafka39(tmp_path_factory: pytest.TempPathFactory) -> Iterator[KafkaCluster]:
    yield from running_cluster(tmp_path_factory.mktemp("kafka-3.9.1"), "3.9.1", brokers=1)


def test_kafka_39_log_decoded_and_ingested(spark, kafka39: KafkaCluster, tmp_path: Path
                                           ) -> None:
    c = kafka39
    c.topics("--create", "--topic", "old", "--partitions", "2", "--replication-factor", "1")
    produce(c, "old", 50)
    describe = c.describe()
    since = time.time() + 1
    wait_until("a 3.9 snapshot after the topic", lambda: any(
        f.stat().st_mtime > since for f in c.controller.metadata_log.glob("*.checkpoint")), STEP)
    log = copy_log(c.controller.metadata_log, tmp_path / "controller")

    files = sorted(log.iterdir())
    kafka_view = dump(files, tmp_path / "dump.txt")
    check_all(files, kafka_view)
    # metadata.version as Kafka's dump prints it: the 3.9 line, before ELR (level 23)
    level = [r.data["featureLevel"] for recs in kafka_view.values() for r in recs
             if r.type == "FeatureLevelRecord" and r.data["name"] == "metadata.version"][-1]
    assert level < 23

    lake = tmp_path / "lake"
    kraftlake("ingest", str(log), "--lake", str(lake), "--cluster-id", c.cluster_id)
    rows = {(r["topic_name"], r["partition_id"]): r for r in table(lake, "partition_current", [
        "topic_name", "partition_id", "leader", "isr", "replicas", "eligible_leader_replicas",
        "last_known_elr"])}
    for (topic, p), k in describe.items():
        r = rows[(topic, p)]
        assert (r["leader"], r["isr"], r["replicas"]) == (k["Leader"], k["Isr"], k["Replicas"])
        assert not r["eligible_leader_replicas"] and not r["last_known_elr"]
    ours = [r["data"] for r in sorted(table(lake, "records", ["offset", "record_type", "data"]),
                                      key=lambda r: r["offset"])
            if r["record_type"] == "FeatureLevelRecord" and "metadata.version" in (r["data"] or "")]
    assert ours and f'"feature_level":{level}' in ours[-1].replace(" ", ""), (ours, level)
