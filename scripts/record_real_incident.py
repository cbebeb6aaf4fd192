"""Regenerate `examples/real-incident/`: a metadata log real Kafka wrote, with Kafka's view.

Starts the test harness's Kafka 4.3.1 cluster (tests/kafka/cluster.py; jars from the pinned
pom, resolved by test.sh), drives the incident scenario (tests/kafka/scenario.py: unclean
elections and their recovery, an ELR election, a reassignment, ...), and keeps:

- `__cluster_metadata-0/`: the controller's segments and snapshots, `meta.properties`;
- `kafka-view.json`: what Kafka itself reported at the end (kafka-topics --describe per
  partition, the metadata shell's epochs and recovery state, the controller's election
  counters and the gauges of its metadata image over JMX, the steps driven);
- `kafka-topics-describe.txt` and `kafka-dump-log.txt`: the tools' own text output.

`kraftlake demo --example real-incident` ingests this and compares with kafka-view.json.
Run from the repository root: `.venv/bin/python scripts/record_real_incident.py`.
"""

from __future__ import annotations

import json
import shutil
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from tests.kafka import scenario  # noqa: E402
from tests.kafka.cluster import KafkaCluster  # noqa: E402
from tests.kafka.dumplog import DUMP  # noqa: E402

OUT = REPO / "examples" / "real-incident"


def main() -> int:
    work = Path(tempfile.mkdtemp(prefix="kraftlake-real-incident-"))
    # the whole log, from offset 0: no retention within the hour the recording takes
    cluster = KafkaCluster(work / "cluster", overrides={"metadata.max.retention.ms": "3600000"},
                           node_overrides=scenario.NODE_SETTINGS)
    try:
        cluster.start()
        steps = scenario.run(cluster, work)
        seen = scenario.observe(cluster, steps, work)
        describe_text = cluster.topics("--describe")
    finally:
        cluster.stop()
    if OUT.exists():
        shutil.rmtree(OUT)
    log = OUT / "__cluster_metadata-0"
    shutil.copytree(seen.controller_log, log)
    (OUT / "meta.properties").write_text(
        f"version=1\ncluster.id={cluster.cluster_id}\nnode.id=1\n")
    files = sorted(log.iterdir())
    dump = cluster.tool(DUMP, "--cluster-metadata-decoder", "--files",
                        ",".join(str(f) for f in files)).stdout
    (OUT / "kafka-dump-log.txt").write_text(dump.replace(str(OUT) + "/", ""))
    (OUT / "kafka-topics-describe.txt").write_text(describe_text)
    (OUT / "kafka-view.json").write_text(json.dumps(seen.kafka_view(), indent=1) + "\n")
    shutil.rmtree(work)
    print(f"wrote {OUT}: {len(files)} files, counters {seen.counters}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
