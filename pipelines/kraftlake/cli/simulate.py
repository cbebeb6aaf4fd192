"""`kraftlake simulate`: write the metadata log of a simulated cluster, with ground truth."""

from __future__ import annotations

import shutil
import time
from pathlib import Path

import click
from rich.console import Console
from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn

from kraftlake.kraft.versions import MV_4_0_IV1, MV_4_1_IV0, MV_LATEST, parse_metadata_version
from kraftlake.simulate.run import simulate_cluster
from kraftlake.simulate.scenarios import SCENARIOS

from .group import main


@main.command(epilog="""\b
Examples:
  kraftlake simulate --out /tmp/cluster --scenario mixed --seed 1
  kraftlake simulate --out /tmp/elr --scenario elr --metadata-version 4.1-IV0""")
@click.option("--out", "out", required=True, type=click.Path(path_type=Path),
              help="Directory to create: __cluster_metadata-0/, meta.properties, "
                   "bootstrap.checkpoint, labels.jsonl, final_state.json.")
@click.option("--scenario", type=click.Choice(sorted(SCENARIOS)), default="mixed",
              show_default=True)
@click.option("--seed", type=int, default=0, show_default=True)
@click.option("--brokers", type=int, default=None, help="Broker count (scenario default).")
@click.option("--topics", type=int, default=None)
@click.option("--partitions", type=int, default=None, help="Partitions per topic.")
@click.option("--replication-factor", type=int, default=None)
@click.option("--hours", type=float, default=None, help="Simulated duration.")
@click.option("--elr/--no-elr", default=None,
              help=f"Eligible leader replicas (needs MV >= {MV_4_0_IV1}; default on from MV "
                   f"{MV_4_1_IV0}, 4.1-IV0, as Kafka does).")
@click.option("--metadata-version", "mv", default=None,
              help=f"Feature level or release, e.g. {MV_LATEST} or 3.7-IV2 "
                   f"(default {MV_LATEST}).")
@click.option("--min-isr", type=int, default=2, show_default=True,
              help="Cluster default min.insync.replicas.")
@click.option("--segment-bytes", type=int, default=None)
@click.option("--retention/--no-retention", default=False,
              help="Delete segments below the newest snapshot, as Kafka's retention does.")
@click.option("--force", is_flag=True, help="Replace --out if it exists.")
def simulate(out: Path, scenario: str, seed: int, brokers: int | None, topics: int | None,
             partitions: int | None, replication_factor: int | None, hours: float | None,
             elr: bool | None, mv: str | None, min_isr: int, segment_bytes: int | None,
             retention: bool, force: bool) -> None:
    """Simulate a KRaft cluster and write its real metadata log (deterministic per seed)."""
    console = Console(stderr=True)
    if out.exists() and any(out.iterdir()):
        if not force:
            raise click.UsageError(f"{out} exists and is not empty (use --force)")
        shutil.rmtree(out)
    try:
        level = parse_metadata_version(mv) if mv is not None else MV_LATEST
        t0 = time.perf_counter()
        with Progress(TextColumn("[bold]{task.description}"), BarColumn(),
                      TextColumn("{task.percentage:>3.0f}%"), TimeElapsedColumn(),
                      console=console, transient=True) as prog:
            task = prog.add_task(f"simulating {scenario}", total=1000)
            summary = simulate_cluster(
                out, scenario, seed, hours, elr, level, brokers=brokers, topics=topics,
                partitions=partitions, replication_factor=replication_factor,
                min_isr=min_isr, segment_bytes=segment_bytes, retention=retention,
                progress=lambda done, total: prog.update(
                    task, completed=1000 * done // max(1, total)))
        secs = time.perf_counter() - t0
    except ValueError as exc:
        raise click.UsageError(str(exc)) from None
    console.print(
        f"[green]wrote[/] {out}: {summary['records']:,} records in {summary['batches']:,} "
        f"batches ({summary['bytes'] / 1e6:.1f} MB), {summary['partitions']:,} partitions, "
        f"{summary['labels']:,} labelled changes, {summary['snapshots']} snapshots, "
        f"{secs:.1f} s ({summary['records'] / max(secs, 1e-9):,.0f} records/s)")
