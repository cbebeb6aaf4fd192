"""A real Prometheus scrapes a stream's live gauges while the stream ingests a simulated
cluster's unclean elections, and says through its HTTP API what the simulator did.

Debian's `prometheus` server (./test.sh installs it) runs on loopback with the shipped alert
rules (conf/prometheus-alerts.yaml), scraping and evaluating every second. The stream runs
on the worker's session (`jobs.stream.start_stream`, as `kraftlake stream --metrics-port`
starts it, with the same watch and server): first on the log up to just before the
simulated cluster's first unclean election, which Prometheus must have scraped as zero
elections, then on the rest of the log appended to the active segment. The truth is the
simulator's: its labels (the event of every change record) and its final state.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import time
import urllib.parse
import urllib.request
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from kraftlake.codec.batch import Batch, scan_batches
from kraftlake.config import load_config
from kraftlake.jobs.stream import start_stream
from kraftlake.kraft.partition import PartitionRegistration
from kraftlake.kraft.troubles import RECOVERING_KIND, trouble_kinds
from kraftlake.lake.delta import Lake
from kraftlake.metrics.exposition import serve_metrics
from kraftlake.metrics.state import Fleet
from kraftlake.metrics.watch import StreamWatch
from kraftlake.simulate.run import simulate_cluster
from tests.polling import wait_until
from tests.ports import free_port

from .test_alert_rules import RULES


def api(base: str, path: str, **params: str) -> Any:
    """The `data` of a Prometheus HTTP API answer."""
    url = f"{base}{path}?{urllib.parse.urlencode(params)}"
    with urllib.request.urlopen(url, timeout=10) as r:
        body = json.load(r)
    assert body["status"] == "success", body
    return body["data"]


def query(base: str, promql: str) -> dict[tuple[tuple[str, str], ...], float]:
    """An instant query's samples: sorted labels (without __name__, job, instance) -> value."""
    out = {}
    for s in api(base, "/api/v1/query", query=promql)["result"]:
        labels = tuple(sorted((k, v) for k, v in s["metric"].items()
                              if k not in ("__name__", "job", "instance")))
        out[labels] = float(s["value"][1])
    return out


@dataclass
class Scraped:
    """The run: the Prometheus API's address, the simulator's output, the stream's lake."""

    prometheus: str
    sim: Path
    cluster_id: str
    lake: Path
    first_unclean: int  # the offset of the simulated cluster's first unclean election


def _prometheus(work: Path, metrics_port: int) -> tuple[subprocess.Popen, str]:
    """Debian's Prometheus on loopback: one scrape job (the stream), the shipped rules."""
    binary = shutil.which("prometheus")
    assert binary, "no prometheus on PATH: install Debian's prometheus package (./test.sh does)"
    port = free_port()
    config = work / "prometheus.yml"
    config.write_text(json.dumps({  # JSON is YAML
        "global": {"scrape_interval": "1s", "evaluation_interval": "1s"},
        "rule_files": [str(RULES)],
        "scrape_configs": [{"job_name": "kraftlake", "static_configs": [
            {"targets": [f"127.0.0.1:{metrics_port}"]}]}]}))
    log = open(work / "prometheus.log", "w")  # noqa: SIM115  (closed with the process)
    proc = subprocess.Popen(
        [binary, f"--config.file={config}", f"--storage.tsdb.path={work / 'tsdb'}",
         f"--web.listen-address=127.0.0.1:{port}"], stdout=log, stderr=subprocess.STDOUT)
    base = f"http://127.0.0.1:{port}"

    def ready() -> bool:
        try:
            with urllib.request.urlopen(f"{base}/-/ready", timeout=2) as r:
                return r.status == 200
        except OSError:
            return False
    wait_until("Prometheus ready", ready, 60, interval=0.5,
               failed=lambda: None if proc.poll() is None else
               f"exited {proc.returncode}: {(work / 'prometheus.log').read_text()[-2000:]}")
    return proc, base


@pytest.fixture(scope="module")
def scraped(spark, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Scraped]:
    work = tmp_path_factory.mktemp("prometheus")
    sim = work / "sim"
    summary = simulate_cluster(sim, "unclean-election", seed=1, hours=1, elr=False)
    labels = [json.loads(line) for line in (sim / "labels.jsonl").open()]
    first_unclean = min(r["offset"] for r in labels if "unclean_election" in r["events"])
    # the log a controller is writing: up to the batch before the first unclean election
    segment = next((sim / "__cluster_metadata-0").glob("*.log"))
    data = segment.read_bytes()
    at = next(b for b in scan_batches(data) if isinstance(b, Batch)
              and b.base_offset + b.last_offset_delta >= first_unclean)
    cut = at.position
    live = work / "controller" / "__cluster_metadata-0"
    live.mkdir(parents=True)
    shutil.copy(sim / "meta.properties", live.parent)
    (live / segment.name).write_bytes(data[:cut])

    fleet = Fleet()
    server = serve_metrics(fleet, 0)
    proc, base = _prometheus(work, server.port)
    watch = StreamWatch(spark, fleet)
    lake = work / "lake"
    query_ = start_stream(spark, load_config(lake=lake, spark_master="local[2]"), live,
                          trigger="1s", on_batch=watch.batch, on_start=watch.started,
                          on_events=watch.events)
    cid = summary["cluster_id"]
    unclean = 'kraftlake_partition_events_total{event_type="unclean_election"}'
    try:
        def stream_ok() -> str | None:
            return None if query_.isActive else f"the stream stopped: {query_.exception()}"

        def seen() -> str:
            return (f"Prometheus has offset {query(base, 'kraftlake_last_applied_offset')}, "
                    f"unclean elections {query(base, unclean)}")

        wait_until("the stream at the first unclean election's batch, scraped by Prometheus",
                   lambda: query(base, "kraftlake_last_applied_offset")
                   == {(("cluster_id", cid),): at.base_offset - 1}
                   and query(base, unclean) == {(("cluster_id", cid),
                                                 ("event_type", "unclean_election")): 0.0},
                   300, failed=stream_ok, detail=seen)
        with open(live / segment.name, "ab") as f:  # the controller writes on
            f.write(data[cut:])
        wait_until("the whole log streamed and scraped",
                   lambda: query(base, "kraftlake_last_applied_offset")
                   == {(("cluster_id", cid),): summary["end_offset"] - 1}, 300,
                   failed=stream_ok, detail=seen)
        time.sleep(3)  # a few evaluations of the rules on the scraped series
        yield Scraped(base, sim, cid, lake, first_unclean)
    finally:
        query_.stop()
        proc.terminate()
        proc.wait(30)
        server.close()


def test_counters_are_the_simulated_events(scraped: Scraped) -> None:
    """`kraftlake_partition_events_total` per event type, as Prometheus has it, is the
    simulator's count of that event; every type kraftlake knows has a series (zero
    included), so an alert on the first one of a type sees it rise."""
    truth = Counter(e for line in (scraped.sim / "labels.jsonl").open()
                    for e in json.loads(line)["events"])
    assert truth["unclean_election"] >= 2 and truth["recovery_completed"] >= 1, truth
    got = query(scraped.prometheus, "kraftlake_partition_events_total")
    ours = {dict(k)["event_type"]: int(v) for k, v in got.items()
            if dict(k)["cluster_id"] == scraped.cluster_id}
    assert {e: n for e, n in ours.items() if n} == dict(truth)
    assert ours["unclean_election"] == truth["unclean_election"]
    # the counter rose while Prometheus watched: zero before the elections were streamed
    rise = query(scraped.prometheus, 'increase(kraftlake_partition_events_total'
                                     '{event_type="unclean_election"}[10m])')
    assert next(iter(rise.values())) > 0, rise


def test_gauges_are_the_simulated_final_state(scraped: Scraped) -> None:
    """The gauges as Prometheus scraped them at the end: the simulator's final state counted
    with Kafka's rules (`kraft.troubles` for recovering partitions)."""
    final = json.loads((scraped.sim / "final_state.json").read_text())
    states = [PartitionRegistration(**{k: tuple(v) if isinstance(v, list) else v
                                       for k, v in s.items() if k != "topic_id"})
              for s in final.values()]
    want = {
        "kraftlake_partitions": len(final),
        "kraftlake_topics": len({k.rsplit(":", 1)[0] for k in final}),
        "kraftlake_offline_partitions": sum(s.leader == -1 for s in states),
        "kraftlake_preferred_replica_imbalance": sum(
            s.leader != s.replicas[0] for s in states),
        "kraftlake_recovering_partitions": sum(
            RECOVERING_KIND in trouble_kinds(s, None) for s in states),
        "kraftlake_elr_partitions": sum(bool(s.eligible_leader_replicas) for s in states),
        "kraftlake_last_applied_offset": int(json.loads(
            (scraped.sim / "simulation.json").read_text())["end_offset"]) - 1,
    }
    got = {name: query(scraped.prometheus, name) for name in want}
    assert got == {name: {(("cluster_id", scraped.cluster_id),): float(v)}
                   for name, v in want.items()}
    brokers = query(scraped.prometheus, "kraftlake_active_brokers + kraftlake_fenced_brokers")
    assert list(brokers.values()) == [6.0], brokers  # the simulated cluster's 6 brokers


def test_alert_states_are_what_the_scenario_did(scraped: Scraped) -> None:
    """Prometheus's alerts after the stream: unclean elections in the last 15 minutes
    firing; the stream behind (its newest record is the simulated clock's, a 2025 time)
    pending, its 5 minutes not over; no stream failure; offline and under-min-ISR alerts
    only where the scraped gauges say so (pending: their minute not over)."""
    alerts = {a["labels"]["alertname"]: a for a in
              api(scraped.prometheus, "/api/v1/alerts")["alerts"]}
    unclean = alerts.get("KafkaUncleanLeaderElection")
    assert unclean is not None and unclean["state"] == "firing", alerts
    assert unclean["labels"]["cluster_id"] == scraped.cluster_id
    assert alerts.get("KraftlakeStreamBehind", {}).get("state") == "pending", alerts
    assert "KraftlakeStreamFailing" not in alerts and "KraftlakeStreamDown" not in alerts
    for alert, gauge in (("KafkaOfflinePartitions", "kraftlake_offline_partitions"),
                         ("KafkaPartitionsUnderMinIsr", "kraftlake_under_min_isr_partitions")):
        value = next(iter(query(scraped.prometheus, gauge).values()))
        assert (alerts.get(alert, {}).get("state") == "pending") == (value > 0), (alert, value)


def test_counters_continue_from_the_lake_after_a_restart(spark, scraped: Scraped) -> None:
    """A new process's watch (a new fleet: nothing of the old numbers) starting on the same
    lake: its event counters are the lake's, not zero."""
    fleet = Fleet()
    StreamWatch(spark, fleet).started(Lake(scraped.lake), scraped.cluster_id)
    before = query(scraped.prometheus, "kraftlake_partition_events_total")
    assert {e: float(n) for e, n in fleet.get(scraped.cluster_id).events.items()} == {
        dict(k)["event_type"]: v for k, v in before.items()}
