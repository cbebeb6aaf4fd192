"""`kraftlake stream SOURCE --lake DIR`: tail a metadata log into the lake."""

from __future__ import annotations

import signal

import click
from rich.console import Console

from . import BadInput, lake_option, main, spark_options


@main.command(epilog="""\b
Examples:
  kraftlake stream /var/lib/kafka/data/__cluster_metadata-0 --lake lake --trigger 5s
  kraftlake stream /tmp/cluster/__cluster_metadata-0 --lake lake --available-now""")
@click.argument("source")
@lake_option
@click.option("--cluster-id", default=None)
@click.option("--trigger", default=None, help="micro-batch interval, e.g. 1s (default: configured)")
@click.option("--available-now", is_flag=True, help="ingest what is there now, then stop")
@click.option("--max-offsets", type=int, default=None,
              help="at most this many log offsets per micro-batch")
@click.option("--checkpoint", default=None, help="checkpoint location (default under the lake)")
@spark_options
def stream(source: str, lake: str | None, cluster_id: str | None, trigger: str | None,
           available_now: bool, max_offsets: int | None, checkpoint: str | None,
           master: str | None, conf_file: str | None) -> None:
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
    from ..jobs.stream import start_stream  # pyspark: only once the source is accepted
    from ..serve import wait_for_signal
    from ..spark import get_spark

    spark = get_spark(cfg, master=master, uris=[source], input_bytes=input_bytes([first]))

    def report(r) -> None:
        if r.records or r.quarantined:
            ev = ", ".join(f"{k} {v}" for k, v in sorted(r.event_counts.items()))
            console.print(f"batch {r.version}: offsets {r.start_offset}..{r.end_offset}, "
                          f"{r.records} records, {r.changes} changes, {r.events} events"
                          + (f" ({ev})" if ev else "")
                          + (f", {r.quarantined} quarantined" if r.quarantined else ""))
        for err in r.maintenance_errors:
            console.print(f"[yellow]compaction skipped, retried later:[/yellow] {err}")

    from ..codec.errors import KraftCodecError
    from ..jobs.batch import DivergedLogError

    failures: list[BaseException] = []
    try:
        q = start_stream(spark, cfg, source, cluster_id, trigger, available_now, max_offsets,
                         report, failures)
        console.print(f"streaming {source} into {cfg.lake} (Ctrl-C to stop)")
        try:
            signum = wait_for_signal(lambda: bool(q.awaitTermination(1)))
        except Exception:
            if failures:  # a micro-batch's own exception, not Spark's wrapping of it
                raise failures[-1] from None
            raise
    except (DivergedLogError, ValueError, KraftCodecError) as exc:
        raise BadInput(str(exc)) from None
    if signum is not None:
        # A micro-batch under way is interrupted: its tables that committed keep their
        # transaction ids, and the next start runs it again from Spark's offset log.
        q.stop()
        name = signal.Signals(signum).name
        console.print(f"stopped by {name}; the next start resumes from the last complete "
                      f"micro-batch")
        raise SystemExit(128 + signum)
