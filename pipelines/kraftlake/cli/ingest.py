"""`kraftlake ingest SOURCE... --lake DIR`: batch ingest of metadata-log directories."""

from __future__ import annotations

import time
from typing import TYPE_CHECKING

import click
from rich.console import Console
from rich.progress import Progress, SpinnerColumn, TextColumn, TimeElapsedColumn

from .group import BadInput, lake_option, main, spark_options
from .render import print_table

if TYPE_CHECKING:
    from ..config import Config
    from ..jobs.inputs import Input
    from ..jobs.progress import IncrementResult


@main.command(epilog="""\b
Examples:
  kraftlake ingest /var/lib/kafka/data/__cluster_metadata-0 --lake lake
  kraftlake ingest dump.txt --cluster-id MkU3OEVBNTcwNTJENDM2Qg --lake lake
  kraftlake ingest s3a://bucket/logs/cluster-a --lake s3a://bucket/lake""")
@click.argument("sources", nargs=-1, required=True)
@lake_option
@click.option("--cluster-id", default=None, help="cluster id when meta.properties is absent")
@spark_options
def ingest(sources: tuple[str, ...], lake: str | None, cluster_id: str | None,
           master: str | None, conf_file: str | None) -> None:
    """Ingest __cluster_metadata-0 directories or kafka-dump-log texts (new records only)
    into the Delta lake; a text needs --cluster-id.

    Exit status 0 when every input was ingested; 1 when an input was refused (not a
    metadata log, or it diverges from what the lake holds for its cluster id) and the
    others were ingested, or when offsets that may have held partition changes are
    unknown (a damaged batch, a segment missing or ending before the next one starts, a
    retention gap: kept in `quarantine`, the states after them are marked uncertain, the
    rest is ingested); 2 when nothing could be ingested (nothing is written then). A last
    segment that ends inside a batch is said in one line (exit 0): those bytes are read by
    a later run, once the batch is complete."""
    from ..config import load_config
    from ..jobs.inputs import find_inputs
    from ..lake.location import require_lake_location

    console = Console(stderr=True)
    cfg = load_config(conf_file, lake=lake, cluster_id=cluster_id)
    require_lake_location(cfg.lake)  # before Spark: a --lake naming a file
    inputs = find_inputs(list(sources), cluster_id, cfg)
    if all(i.refused for i in inputs):  # before Spark starts or the lake is created
        for i in inputs:
            console.print(f"Error: {i.refused}", soft_wrap=True, highlight=False)
        raise SystemExit(2)
    from ..jobs.resume import nothing_new

    t0 = time.time()
    # the lake's Delta logs and the logs' batch headers, without a JVM: a scheduled run
    # that finds nothing new answers so in well under a second (Spark only for work)
    results = nothing_new(cfg, inputs)
    if results is None:
        results = _ingest(cfg, sources, cluster_id, master, inputs, console)
    rows = []
    for r in results:
        if r.version < 0:
            rows.append([r.source, r.cluster_id or "", "refused" if r.refused else "nothing new",
                         *["0"] * 8])
            continue
        rows.append([r.source, r.cluster_id, "no records" if r.start_offset is None
                     else f"{r.start_offset}..{r.end_offset}",
                     str(r.records), str(r.quarantined), str(r.changes), str(r.timeline),
                     str(r.events), str(r.event_counts.get("unclean_election", 0)),
                     str(r.mismatches), str(r.orphans)])
    counts = ("records", "quarantined", "changes", "timeline", "events", "unclean",
              "snapshot mismatches", "orphans")
    print_table(("source", "cluster", "offsets", *counts), rows, right=counts,
                title=f"ingested into {cfg.lake} in {time.time() - t0:.1f}s")
    for r in results:
        if r.refused:
            kept = " (kept in `quarantine`, kind 'diverged')" if r.cluster_id else ""
            console.print(f"Error: refused {r.refused}{kept}", soft_wrap=True,
                          highlight=False)
        if r.quarantined:
            console.print(f"[yellow]{r.cluster_id}: {r.quarantined} quarantined item(s); "
                          f"see table `quarantine`")
        if r.unknown:
            console.print(f"Error: {r.loss_note()}", soft_wrap=True, highlight=False)
        if r.pending_txn_from is not None:
            console.print(f"{r.cluster_id}: metadata transaction open since offset "
                          f"{r.pending_txn_from}; its records are published when it ends")
    _say_waiting(inputs, console)
    if any(r.refused or r.unknown for r in results):
        raise SystemExit(1)


def _say_waiting(inputs: list[Input], console: Console) -> None:
    """One line per log directory whose last segment ends inside a batch (not an error:
    `codec.batch.waiting_note`), from its batch headers."""
    from ..codec.batch import waiting_note
    from ..sources.files import LogDirIndex

    for inp in inputs:
        if inp.refused is None and inp.kind == "dir":
            waiting = LogDirIndex(inp.location).refresh().waiting()
            if waiting is not None:
                console.print(waiting_note(f"{inp.cluster_id} ({inp.source})", *waiting),
                              soft_wrap=True, highlight=False)


def _ingest(cfg: Config, sources: tuple[str, ...], cluster_id: str | None,
            master: str | None, inputs: list[Input], console: Console
            ) -> list[IncrementResult]:
    """The inputs ingested by Spark (`jobs.batch.ingest`), its stages on a spinner."""
    from ..codec.errors import KraftCodecError
    from ..jobs.batch import ingest as run  # pyspark: only for what will be ingested
    from ..jobs.inputs import input_bytes
    from ..spark import ingest_spark

    with Progress(SpinnerColumn(), TextColumn("{task.description}"), TimeElapsedColumn(),
                  console=console, transient=True) as progress:
        task = progress.add_task("starting Spark", total=None)
        spark = ingest_spark(cfg, master, list(sources), input_bytes(inputs))
        try:
            return run(spark, cfg, list(sources), cluster_id,
                       log=lambda m: progress.update(task, description=m))
        except (ValueError, KraftCodecError) as exc:  # e.g. a dump text that breaks off
            progress.stop()
            raise BadInput(str(exc)) from None
