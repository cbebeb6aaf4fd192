"""A real Kafka cluster for the Kafka tests, the incidents driven on it, Kafka's dump of it.

One 4.3.1 cluster (1 controller + 4 brokers) starts once and runs the incident scenario
once; every test of tests/kafka reads what that produced, so the Kafka tests cost one
cluster start and one scenario. The cluster stops as soon as the scenario has been observed
and the live stream has caught up: no later test asks it anything (they read the copies and
the views taken, and broker 2's files, which stay), and its five idle JVMs took about 1 CPU s
a minute each (a controller and a broker idle for a minute: 1.0 and 0.9 CPU s), some 50 CPU
s over the rest of the package, taken from the other worker's tests. A cluster that cannot
start fails the test with Kafka's own log tail; the cluster's directory (logs included)
stays under pytest's tmp dir, printed.
"""

from __future__ import annotations

import json
import pickle
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from kraftlake.config import Config, load_config
from kraftlake.jobs.progress import IncrementResult
from kraftlake.jobs.stream import start_stream
from kraftlake.lake.schema import KRAFTLAKE_DIR
from kraftlake.metrics.exposition import serve_metrics
from kraftlake.metrics.state import Fleet
from kraftlake.metrics.watch import StreamWatch
from kraftlake.sources.files import LogDirIndex
from tests.metrics.scrape import scrape
from tests.polling import wait_until

from . import scenario
from .cluster import KafkaCluster, changes_end, log_start, running_cluster


@pytest.fixture(scope="package")
def kafka(tmp_path_factory: pytest.TempPathFactory) -> Iterator[KafkaCluster]:
    yield from running_cluster(tmp_path_factory.mktemp("kafka-4.3.1"),
                               node_overrides=scenario.NODE_SETTINGS)


@pytest.fixture(scope="package")
def incidents(spark, kafka: KafkaCluster,
              tmp_path_factory: pytest.TempPathFactory) -> scenario.Incidents:
    """The scenario, with `kraftlake stream` tailing the controller's live log throughout
    (segment rolls, snapshots and retention deleting the first segments happen under it),
    and Kafka's view after it."""
    work = tmp_path_factory.mktemp("incidents")
    stream = LiveStream(spark, kafka, work)
    try:
        views: list[scenario.StepView] = []
        # a micro-batch of the live stream ends in each step's state: its scrape is held
        # against the step's view (the stream is seconds behind; the step waits for it)
        steps = scenario.run(kafka, work, views, stream.catch_up)
        wait_until("retention deleting the controller's first segment",
                   lambda: log_start(kafka.controller.metadata_log) > 0, 300)
        seen = scenario.observe(kafka, steps, work)
        log_end = LogDirIndex(seen.controller_log).refresh().log_end
        stream.wait_until(changes_end(seen.controller_log, log_end))
    except (AssertionError, RuntimeError) as exc:
        pytest.fail(f"scenario failed: {exc}\nlogs under {kafka.root}", pytrace=False)
    finally:
        stream.stop()
    kafka.stop()  # nothing later asks it anything (module docstring)
    seen.stream_lake = stream.lake
    seen.scrapes, seen.waited = stream.scrapes, stream.waited
    seen.views = views
    # beside the logs, for a failure's diagnosis without running the scenario again
    (work / "views.pickle").write_bytes(pickle.dumps(views))
    return seen


class LiveStream:
    """`kraftlake stream --trigger 1s --metrics-port` on the controller's own
    `__cluster_metadata-0`, run on the worker's session: the query the command starts
    (jobs/stream.py `start_stream`, with the command's arguments and its live gauges'
    watch and server), without the command's own process. As a process it paid a JVM start
    and a cold JVM's compilation for its five micro-batches, 110 CPU s of a whole run
    (2026-11-28), while the session it now runs on serves the package's later tests warm.
    The command's own start, arguments and output are tests/cli's and the kill tests'
    (tests/pipeline/test_kill_restart.py runs it as a process).

    It holds a tail of NoOpRecords as the command does by default (`stream.noop_every`, not
    the tests' 0: tests/conftest.py): the controller writes one every 500 ms, and read at
    every trigger they made the scenario's stream 70-78 micro-batches, 43 when held
    (2026-12-02), each committing two tables for nothing but the log's position. So the
    waits are for the last change below an offset (`changes_end`), not for the offset
    itself: the NoOps after it are read with the next change or `noop_every` s later.

    `/metrics` is scraped after every micro-batch (`scrapes`, each with the log offset it
    shows the state after): the step-by-step tests hold a scrape of each step's state
    against the controller's JMX, without holding the scenario up to wait for one."""

    def __init__(self, spark, kafka: KafkaCluster, work: Path) -> None:
        self.lake = work / "stream-lake"
        self.log_dir = kafka.controller.metadata_log
        # Spark's offset log of the query (jobs/stream.py: the default checkpoint)
        self.offset_log = (self.lake / KRAFTLAKE_DIR / "checkpoints" / kafka.cluster_id
                           / "spark" / "offsets")
        self.batches: list[IncrementResult] = []
        self.scrapes: list[dict[str, float]] = []
        self.waited = 0.0  # s the scenario waited for the stream to catch up (`catch_up`)
        cfg = load_config(lake=self.lake, spark_master="local[2]",
                          noop_every=Config.noop_every)
        fleet = Fleet()
        self.metrics = serve_metrics(fleet, 0)
        watch = StreamWatch(spark, fleet)

        def on_batch(r: IncrementResult) -> None:
            watch.batch(r)
            self.scrapes.append(scrape(self.metrics.port, kafka.cluster_id))
            self.batches.append(r)

        self.query = start_stream(spark, cfg, kafka.controller.metadata_log,
                                  cluster_id=kafka.cluster_id, trigger="1s",
                                  on_batch=on_batch, on_start=watch.started,
                                  on_events=watch.events)

    def committed_end(self) -> int:
        """The end offset of the newest micro-batch the stream committed."""
        ends = [b.end_offset for b in self.batches if b.end_offset is not None]
        return max(ends, default=-1)

    def planned_end(self) -> int:
        """The end offset of the newest micro-batch Spark has planned: the last entry of the
        query's offset log, which Spark writes before it runs the batch (jobs/stream.py
        `_offsets` reads the same entry while the batch runs)."""
        ids = [int(f.name) for f in self.offset_log.glob("*") if f.name.isdigit()]
        if not ids:
            return -1
        entry = (self.offset_log / str(max(ids))).read_text()
        return int(json.loads(entry.strip().splitlines()[-1])["offset"])

    def wait_until(self, end: int, timeout: float = 300, planned: bool = False) -> None:
        """Until the stream has committed the log up to `end` (`planned`: until a micro-batch
        reading up to it has been planned): it must not have stopped meanwhile."""
        reached = self.planned_end if planned else self.committed_end
        wait_until(f"the live stream {'plans' if planned else 'commits'} a micro-batch up to "
                   f"offset {end}", lambda: reached() >= end, timeout, interval=0.2,
                   failed=lambda: None if self.query.isActive
                   else f"the stream stopped: {self.query.exception()}",
                   detail=lambda: f"reached offset {reached()}; micro-batches "
                   f"{[(b.start_offset, b.end_offset) for b in self.batches]}")

    def catch_up(self, view: scenario.StepView) -> None:
        """Until a micro-batch of the stream reading every change below the view's first
        high watermark has been planned (`scenario.run`'s `after_view`; the NoOps after the
        last change may wait, `changes_end`). Its end offset is fixed then, before the next
        step writes anything, so it ends in the step's state when nothing changed since (a
        settled step), and its scrape shows that state whenever it finishes: the next step
        runs while it does. (Waiting for its commit as well held each step 3-5 s longer.)
        The seconds it took add to `waited`."""
        t0 = time.monotonic()
        self.wait_until(changes_end(self.log_dir, view.high_watermark), planned=True)
        self.waited += time.monotonic() - t0

    def stop(self) -> None:
        self.query.stop()
        self.metrics.close()
