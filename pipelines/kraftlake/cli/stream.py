"""`kraftlake stream SOURCE... --lake URI`: tail metadata logs into the lake, one streaming
query per cluster in this one process (`jobs.streams`)."""

from __future__ import annotations

import signal
from functools import partial

import click
from rich.console import Console
from rich.markup import escape

from .group import BadInput, lake_option, main, spark_options


@main.command(epilog="""\b
Examples:
  kraftlake stream /var/lib/kafka/data/__cluster_metadata-0 --lake lake --trigger 5s
  kraftlake stream /tmp/cluster/__cluster_metadata-0 --lake lake --available-now
  kraftlake stream /var/lib/kafka/data/__cluster_metadata-0 --lake lake --metrics-port 9464
  kraftlake stream /srv/clusters --lake lake --metrics-port 9464
  kraftlake stream 's3a://logs/*/__cluster_metadata-0' @more-clusters.txt --lake s3a://lake""")
@click.argument("sources", nargs=-1, required=True)
@lake_option
@click.option("--cluster-id", default=None, help="the cluster id when meta.properties is "
              "absent (one log directory only)")
@click.option("--trigger", default=None, help="micro-batch interval, e.g. 1s (default: configured)")
@click.option("--available-now", is_flag=True, help="ingest what is there now, then stop")
@click.option("--max-offsets", type=int, default=None,
              help="at most this many log offsets per micro-batch")
@click.option("--checkpoint", default=None, help="checkpoint location (default under the "
              "lake); when several clusters are streamed, the directory of theirs")
@click.option("--metrics-port", type=click.IntRange(0, 65535), default=None,
              help="serve live gauges for Prometheus at http://HOST:PORT/metrics")
@click.option("--metrics-host", default="127.0.0.1", show_default=True,
              help="the address --metrics-port listens on (0.0.0.0: every interface)")
@spark_options
def stream(sources: tuple[str, ...], lake: str | None, cluster_id: str | None,
           trigger: str | None, available_now: bool, max_offsets: int | None,
           checkpoint: str | None, metrics_port: int | None, metrics_host: str,
           master: str | None, conf_file: str | None) -> None:
    """Stream new records of __cluster_metadata-0 directories into the lake (exactly once).

    SOURCES: a log directory; or a directory, an s3a:// prefix or a pattern (quoted:
    'DIR/*/__cluster_metadata-0') with log directories below it, watched for new ones;
    or @FILE, a file listing sources one a line. Each cluster is a streaming query of its
    own in this one process, with its own checkpoint; one that fails starts again from it
    after a growing wait while the others go on."""
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
    from ..jobs.inputs import expand_sources, find_inputs, input_bytes, watched

    console = Console(stderr=True)
    try:
        named = expand_sources(list(sources))
    except OSError as exc:  # a list file that cannot be read
        raise BadInput(f"{exc.filename}: {exc.strerror}") from None
    found = find_inputs(named, cluster_id, cfg)
    watching = watched(list(sources), found)
    accepted = [i for i in found if not i.refused and i.kind == "dir"]
    if not accepted:  # before Spark starts or the lake is created
        for i in found:
            why = i.refused or f"{i.source}: a stream tails a metadata-log directory, not a text"
            console.print(f"Error: {why}", soft_wrap=True, highlight=False)
        if not found:  # a pattern or a list naming nothing
            console.print(f"Error: {' '.join(sources)}: names no metadata-log directory",
                          soft_wrap=True, highlight=False)
        raise SystemExit(2)
    if len(accepted) > 1 and (cluster_id or cfg.cluster_id):
        raise click.BadParameter(f"names one cluster, and {len(accepted)} log directories "
                                 f"were found", param_hint="--cluster-id")
    fleet, server = _metrics_server(metrics_host, metrics_port, console)  # before Spark too
    from ..endpoint import wait_for_signal
    from ..jobs.streams import StreamOptions, Streams  # pyspark: the sources accepted
    from ..spark import get_spark

    try:
        spark = get_spark(cfg, master=master, uris=named, input_bytes=input_bytes(accepted))
    except BaseException:
        if server is not None:
            server.close()
        raise

    from ..codec.errors import KraftCodecError
    from ..jobs.batch import DivergedLogError

    watch = None
    if fleet is not None:
        from ..metrics.watch import StreamWatch
        watch = StreamWatch(spark, fleet)
    say = partial(console.print, soft_wrap=True, highlight=False, markup=False)
    streams = Streams(spark, cfg, list(sources), found,
                      StreamOptions(cluster_id, trigger, available_now, max_offsets),
                      watching, _Told(console, watch), say)
    try:
        signum = wait_for_signal(streams.step)
    except BaseException as exc:
        streams.stop()  # the other clusters' queries end with the command
        if isinstance(exc, (DivergedLogError, ValueError, KraftCodecError)):
            raise BadInput(str(exc)) from None
        raise
    finally:
        if server is not None:
            server.close()
    if signum is not None:
        streams.stop()
        name = signal.Signals(signum).name
        console.print(f"stopped by {name}; the next start resumes from the last complete "
                      f"micro-batch")
        raise SystemExit(128 + signum)


class _Told:
    """What the streams say: a line per micro-batch on the console, and the live gauges
    (`metrics.watch.StreamWatch`) when `--metrics-port` serves them."""

    def __init__(self, console: Console, watch) -> None:
        self.console, self.watch = console, watch

    def started(self, lake, cluster_id: str) -> None:
        if self.watch is not None:
            self.watch.started(lake, cluster_id)

    def events(self, res) -> None:
        if self.watch is not None:
            self.watch.events(res)

    def batch(self, r) -> None:
        """A micro-batch completed: the live gauges are told, and the console gets a line when it
        read records or quarantined some, an error line when offsets of it are unknown
        (`loss_note`), a warning per compaction it skipped."""
        if self.watch is not None:
            self.watch.batch(r)
        if r.records or r.quarantined:
            ev = ", ".join(f"{k} {v}" for k, v in sorted(r.event_counts.items()))
            self.console.print(
                f"batch {r.version} of {r.cluster_id}: offsets {r.start_offset}.."
                f"{r.end_offset}, {r.records} records, {r.changes} changes, {r.events} events"
                + (f" ({ev})" if ev else "")
                + (f", {r.quarantined} quarantined" if r.quarantined else ""),
                soft_wrap=True, highlight=False)
        if r.unknown:
            self.console.print(f"[red]Error:[/red] {escape(r.loss_note())}", soft_wrap=True,
                               highlight=False)
        for err in r.maintenance_errors:
            self.console.print(f"[yellow]compaction skipped, retried later:[/yellow] "
                               f"{escape(err)}", soft_wrap=True, highlight=False)

    def failed(self, cluster_id: str) -> None:
        if self.watch is not None:
            self.watch.failed(cluster_id)

    def restarted(self, cluster_id: str) -> None:
        if self.watch is not None:
            self.watch.restarted(cluster_id)


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
