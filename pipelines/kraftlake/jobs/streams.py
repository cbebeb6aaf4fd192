"""Many clusters streamed by one process: one streaming query per cluster, one Spark session.

`kraftlake stream` given several sources, a directory holding log directories, a pattern or
a list file (`jobs.inputs.expand_sources`) watches them: every `stream.discover_every`
seconds it looks again and starts a query for each cluster that appeared. Each query is
`jobs.stream.start_stream`'s, with its own checkpoint and transaction ids, so each cluster
keeps the exactly-once guarantee of a stream of its own. The JVM, its jars and Spark's
memory are paid once, not once per cluster (a JVM is 1-1.5 GiB); each query's micro-batches
run on a thread of their own in the one driver.

A query that fails while others run is started again from its checkpoint after a wait that
doubles with each failure in a row (2 s, 4 s ... up to `MAX_BACKOFF`), whatever the cause:
one line names the cluster and why, and the other clusters go on. One log directory given
alone is one stream, as before, and so is every query of an `--available-now` run, which
must end: a failure a new query does not cure (`stream.transient`), or `MAX_RESTARTS` in a
row, ends the command.
"""

from __future__ import annotations

import dataclasses
import os
import re
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Protocol

from pyspark.sql import SparkSession
from pyspark.sql.streaming import StreamingQuery

from ..config import Config
from ..lake.delta import Lake
from ..uris import join
from .inputs import Input, expand_sources, find_inputs
from .progress import IncrementResult
from .stream import MAX_RESTARTS, start_stream, transient

_JAVA_EXCEPTION = re.compile(r"^[\w.$]+(Exception|Error): ")
MAX_BACKOFF = 300  # seconds: the longest wait before a failed cluster's query starts again
POLL_SECONDS = 0.5  # how often the queries are asked whether they still run


class Listener(Protocol):
    """What the streams tell their caller (the live gauges, the console)."""

    def started(self, lake: Lake, cluster_id: str) -> None: ...
    def events(self, res: IncrementResult) -> None: ...
    def batch(self, res: IncrementResult) -> None: ...
    def failed(self, cluster_id: str) -> None: ...
    def restarted(self, cluster_id: str) -> None: ...


@dataclass
class Watched:
    """One cluster's log directory, its query (None between a failure and its restart)."""

    label: str  # what lines call it: the source as named, or the log directory found
    log_dir: str
    cluster_id: str
    query: StreamingQuery | None = None
    failures: list[BaseException] = field(default_factory=list)
    in_a_row: int = 0  # failures since its last completed micro-batch
    start_at: float = 0.0  # time.monotonic() of its next start
    ended: bool = False


@dataclass
class StreamOptions:
    """`kraftlake stream`'s options, the same for every cluster."""

    cluster_id: str | None = None
    trigger: str | None = None
    available_now: bool = False
    max_offsets: int | None = None


class Streams:
    """The streaming queries of one process (`step` supervises them, `stop` ends them)."""

    def __init__(self, spark: SparkSession, cfg: Config, sources: list[str],
                 found: list[Input], opts: StreamOptions, watching: bool,
                 listener: Listener, say: Callable[[str], None]) -> None:
        self.spark, self.cfg, self.sources, self.opts = spark, cfg, sources, opts
        self.watching, self.listener, self.say = watching, listener, say
        self.clusters: dict[str, Watched] = {}
        # micro-batches of different clusters at once: more than the driver's cores only
        # adds memory (each holds its increment), and a catch-up of many clusters would
        # hold all of theirs together
        self.slots = threading.BoundedSemaphore(cfg.concurrent_batches or os.cpu_count() or 1)
        self._said: set[str] = set()
        self._next_look = time.monotonic() + cfg.discover_every
        self._add(found)

    def step(self) -> bool:
        """One round: look for new clusters when it is time, start those due, and see which
        queries ended. True once every query has ended (`--available-now`); waits
        `POLL_SECONDS` otherwise. Without watching, a failure no restart cures is raised."""
        now = time.monotonic()
        if self.watching and not self.opts.available_now and now >= self._next_look:
            self._next_look = now + self.cfg.discover_every
            try:
                named = expand_sources(self.sources)
            except OSError as err:  # a list file gone or unreadable: looked at again later
                self._say_once(f"{err.filename}: {err.strerror}")
            else:
                self._add(find_inputs(named, self.opts.cluster_id, self.cfg))
        for w in list(self.clusters.values()):
            if w.ended:
                continue
            if w.query is None:
                if time.monotonic() >= w.start_at:
                    self._start(w)
            elif not w.query.isActive:
                failure = w.query.exception()
                if failure is None:  # read to the end (--available-now), or stopped
                    w.ended = True
                else:
                    self._failed(w, failure)
        if self.clusters and all(w.ended for w in self.clusters.values()):
            return True
        time.sleep(POLL_SECONDS)
        return False

    def stop(self) -> None:
        """Stop every query. A micro-batch under way is interrupted: its tables that
        committed keep their transaction ids, and the next start runs it again from Spark's
        offset log."""
        for w in self.clusters.values():
            if w.query is not None and w.query.isActive:
                w.query.stop()

    def _add(self, found: list[Input]) -> None:
        """Watch the clusters of `found` not watched yet; say once why any other is not."""
        streamed = {w.log_dir for w in self.clusters.values()}
        for i in found:
            if i.refused or i.kind != "dir":
                self._say_once(i.refused or f"{i.source}: a stream tails a metadata-log "
                                            f"directory, not a text")
            elif i.location in streamed:
                continue
            elif i.cluster_id in self.clusters:
                self._say_once(f"{i.location}: cluster {i.cluster_id} is streamed from "
                               f"{self.clusters[i.cluster_id].log_dir} already; skipped")
            else:
                label = i.source if not self.watching else i.location
                self.clusters[str(i.cluster_id)] = Watched(label, i.location, str(i.cluster_id))
                streamed.add(i.location)

    def _start(self, w: Watched) -> None:
        cfg = self.cfg
        if self.watching and cfg.checkpoint:  # one checkpoint per cluster below it
            cfg = dataclasses.replace(cfg, checkpoint=join(cfg.checkpoint, w.cluster_id))
        try:
            w.query = start_stream(
                self.spark, cfg, w.log_dir, w.cluster_id, self.opts.trigger,
                self.opts.available_now, self.opts.max_offsets, self._batch, w.failures,
                self.listener.started, self.listener.events, self.slots)
        except Exception as exc:
            if not self.watching:
                raise
            self._failed(w, exc)
            return
        if not w.in_a_row:
            until = "until it is read" if self.opts.available_now else "Ctrl-C to stop"
            named = f" ({w.cluster_id})" if self.watching else ""
            self.say(f"streaming {w.label}{named} into {cfg.lake} ({until})")

    def _batch(self, res: IncrementResult) -> None:
        """A micro-batch completed (on its query's thread)."""
        self.clusters[res.cluster_id].in_a_row = 0
        self.listener.batch(res)

    def _failed(self, w: Watched, exc: BaseException) -> None:
        """A query failed (or could not start): start it again later, or raise."""
        failure = w.failures[-1] if w.failures else exc  # a micro-batch's own exception
        w.failures.clear()
        w.query = None
        self.listener.failed(w.cluster_id)
        cause = transient(failure)
        if not self.watching or self.opts.available_now:  # a run that must end
            if cause is None or w.in_a_row >= MAX_RESTARTS:
                raise failure from None
            w.in_a_row += 1
            wait = 2 ** w.in_a_row
            self.say(f"stream failed, restarting from its checkpoint ({w.in_a_row} of "
                     f"{MAX_RESTARTS}): {cause}")
        else:
            w.in_a_row += 1
            wait = min(2 ** w.in_a_row, MAX_BACKOFF)
            self.say(f"{w.cluster_id}: stream failed, restarting from its checkpoint in "
                     f"{wait} s ({w.in_a_row} in a row): {cause or _cause(failure)}")
        self.listener.restarted(w.cluster_id)
        w.start_at = time.monotonic() + wait

    def _say_once(self, line: str) -> None:
        if line not in self._said:
            self._said.add(line)
            self.say(line)


def _cause(exc: BaseException) -> str:
    """The line of a failure's message that says what went wrong: for an error of the JVM,
    its exception's class and message rather than py4j's call and the stack below it."""
    lines = [ln.strip().lstrip(": ") for ln in str(exc).splitlines() if ln.strip()]
    named = [ln for ln in lines if _JAVA_EXCEPTION.match(ln)]
    return (named or lines or [type(exc).__name__])[0][:300]
