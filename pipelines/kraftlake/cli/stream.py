"""`kraftlake stream SOURCE --lake DIR`: tail a metadata log into the lake."""

from __future__ import annotations

import signal
import time
from functools import partial

import click
from rich.console import Console
from rich.markup import escape

from .group import BadInput, lake_option, main, spark_options


def _terminated(query) -> bool:
    """Whether the streaming query ended, waiting at most a second (its failure raised)."""
    return bool(query.awaitTermination(1))


@main.command(epilog="""\b
Examples:
  kraftlake stream /var/lib/kafka/data/__cluster_metadata-0 --lake lake --trigger 5s
  kraftlake stream /tmp/cluster/__cluster_metadata-0 --lake lake --available-now
  kraftlake stream /var/lib/kafka/data/__cluster_metadata-0 --lake lake --metrics-port 9464""")
@click.argument("source")
@lake_option
@click.option("--cluster-id", default=None)
@click.option("--trigger", default=None, help="micro-batch interval, e.g. 1s (default: configured)")
@click.option("--available-now", is_flag=True, help="ingest what is there now, then stop")
@click.option("--max-offsets", type=int, default=None,
              help="at most this many log offsets per micro-batch")
@click.option("--checkpoint", default=None, help="checkpoint location (default under the lake)")
@click.option("--metrics-port", type=click.IntRange(0, 65535), default=None,
              help="serve live gauges for Prometheus at http://HOST:PORT/metrics")
@click.option("--metrics-host", default="127.0.0.1", show_default=True,
              help="the address --metrics-port listens on (0.0.0.0: every interface)")
@spark_options
def stream(source: str, lake: str | None, cluster_id: str | None, trigger: str | None,
           available_now: bool, max_offsets: int | None, checkpoint: str | None,
           metrics_port: int | None, metrics_host: str, master: str | None,
           conf_file: str | None) -> None:
    """Stream new records of a __cluster_metadata-0 directory into the lake (exactly once)."""
    from ..config import load_config
    from ..jobs.trigger import processing_time
    from ..lake.location import require_lake_location

    cfg = load_config(conf_file, lake=lake, cluster_id=cluster_id, checkpoint=checkpoint)
    require_lake_location(cfg.lake)  # before Spark: a --lake naming a file
    if not available_now:  # a trigger Spark would refuse only once the query starts
        try:
            processing_time(trigger or cfg.trigger)
        except ValueError as exc:
            raise click.BadParameter(str(exc), param_hint="--trigger") from None
    from ..jobs.inputs import find_inputs, input_bytes

    console = Console(stderr=True)
    (first, *_) = find_inputs([source], cluster_id, cfg)
    if first.refused or first.kind != "dir":  # before Spark starts or the lake is created
        why = first.refused or f"{source}: a stream tails a metadata-log directory, not a text"
        raise BadInput(why)
    fleet, server = _metrics_server(metrics_host, metrics_port, console)  # before Spark too
    from ..jobs.stream import MAX_RESTARTS, start_stream, transient  # pyspark: source accepted
    from ..serve import wait_for_signal
    from ..spark import get_spark

    try:
        spark = get_spark(cfg, master=master, uris=[source], input_bytes=input_bytes([first]))
    except BaseException:
        if server is not None:
            server.close()
        raise

    def report(r) -> None:
        if r.records or r.quarantined:
            ev = ", ".join(f"{k} {v}" for k, v in sorted(r.event_counts.items()))
            console.print(f"batch {r.version}: offsets {r.start_offset}..{r.end_offset}, "
                          f"{r.records} records, {r.changes} changes, {r.events} events"
                          + (f" ({ev})" if ev else "")
                          + (f", {r.quarantined} quarantined" if r.quarantined else ""))
        if r.unknown:
            console.print(f"[red]Error:[/red] {r.loss_note()}", soft_wrap=True,
                          highlight=False)
        for err in r.maintenance_errors:
            console.print(f"[yellow]compaction skipped, retried later:[/yellow] {err}")

    from ..codec.errors import KraftCodecError
    from ..jobs.batch import DivergedLogError

    failures: list[BaseException] = []
    in_a_row = 0  # restarts since the last completed micro-batch
    watch = None
    if fleet is not None:
        from ..metrics.watch import StreamWatch
        watch = StreamWatch(spark, fleet)
    cid: str | None = None  # the cluster streamed, once its query started

    def on_start(lake_, cluster) -> None:
        nonlocal cid
        cid = cluster
        if watch is not None:
            watch.started(lake_, cluster)

    def on_batch(r) -> None:
        nonlocal in_a_row
        in_a_row = 0
        if watch is not None:
            watch.batch(r)
        report(r)

    try:
        while True:
            query = start_stream(spark, cfg, source, cluster_id, trigger, available_now,
                                 max_offsets, on_batch, failures, on_start,
                                 None if watch is None else watch.events)
            if not in_a_row:
                stop = "until it is read" if available_now else "Ctrl-C to stop"
                console.print(f"streaming {source} into {cfg.lake} ({stop})")
            try:
                signum = wait_for_signal(partial(_terminated, query))
                break
            except Exception as exc:
                # a micro-batch's own exception, not Spark's wrapping of it
                failure = failures[-1] if failures else exc
                if watch is not None and cid is not None:
                    watch.failed(cid)
                cause = transient(failure)
                if cause is None or in_a_row >= MAX_RESTARTS:
                    raise failure from None
                in_a_row += 1
                if watch is not None and cid is not None:
                    watch.restarted(cid)
                failures.clear()
                console.print(f"[yellow]stream failed, restarting from its checkpoint "
                              f"({in_a_row} of {MAX_RESTARTS}):[/yellow] {escape(cause)}",
                              soft_wrap=True, highlight=False)
                time.sleep(2 ** in_a_row)
    except (DivergedLogError, ValueError, KraftCodecError) as exc:
        raise BadInput(str(exc)) from None
    finally:
        if server is not None:
            server.close()
    if signum is not None:
        # A micro-batch under way is interrupted: its tables that committed keep their
        # transaction ids, and the next start runs it again from Spark's offset log.
        query.stop()
        name = signal.Signals(signum).name
        console.print(f"stopped by {name}; the next start resumes from the last complete "
                      f"micro-batch")
        raise SystemExit(128 + signum)



def _metrics_server(host: str, port: int | None, console: Console):
    """The live gauges' numbers and their HTTP server when `--metrics-port` asks for them
    (both None otherwise), listening before Spark starts: a port taken is a usage error
    (exit status 2) that costs no JVM."""
    if port is None:
        return None, None
    from ..metrics.exposition import serve_metrics
    from ..metrics.state import Fleet

    fleet = Fleet()
    try:
        server = serve_metrics(fleet, port, host)
    except OSError as exc:
        raise click.BadParameter(f"cannot listen on {host}:{port}: {exc.strerror or exc}",
                                 param_hint="--metrics-port") from None
    console.print(f"live gauges at http://{host}:{server.port}/metrics")
    return fleet, server
