"""`kraftlake demo`: simulate a cluster with incidents, ingest it, print the incidents found.

This is the README's main job: it needs no Kafka cluster and no data, because the simulator
writes the real metadata-log bytes of a busy cluster *and* the ground truth (`labels.jsonl`).
So the demo can show what the pipeline finds (unclean elections, their recovery, ELR
activity, the rest of the events) and, in the same breath, check it against the truth.

The command only wires the layers together: the simulation is `simulate.run`, the scoring
`simulate.score`, the tables `report.console` and the check against Kafka's view
`report.kafka_view`, which the benchmarks, the tests and a notebook use the same way.
"""

from __future__ import annotations

import json
import shutil
import tempfile
import time
from pathlib import Path
from typing import TYPE_CHECKING

import click
from rich.console import Console
from rich.progress import BarColumn, Progress, SpinnerColumn, TextColumn, TimeElapsedColumn

from kraftlake.simulate.run import DEMO_HOURS

from .group import main, spark_options

if TYPE_CHECKING:  # pyspark is imported only once a demo starts Spark
    from pyspark.sql import SparkSession

# the source checkout's examples/ (an installed wheel has none: --example takes a directory)
EXAMPLES = Path(__file__).resolve().parents[3] / "examples"


def _cluster_id(log_dir: Path) -> str:
    """The cluster id the lake keys the demo's rows by (its meta.properties must have one)."""
    from kraftlake.sources.files import read_cluster_id

    cid = read_cluster_id(log_dir)
    if cid is None:
        raise click.UsageError(f"{log_dir}/meta.properties has no cluster.id")
    return cid


def _session(log: Path, lake: Path, master: str | None,
             conf_file: str | None) -> SparkSession:
    """The demo's Spark session: sized and tuned as `kraftlake ingest LOG` would size its
    own (a short job's JVM for a small log: the demo answers once and ends)."""
    from kraftlake.config import load_config
    from kraftlake.jobs.inputs import find_inputs, input_bytes
    from kraftlake.spark import ingest_spark

    cfg = load_config(conf_file, lake=lake)
    return ingest_spark(cfg, master, [str(log)], input_bytes(find_inputs([log], None, cfg)))


def _run_example(name: str, lake: Path, master: str | None, conf_file: str | None) -> None:
    """Ingest `examples/<name>` or the directory `name` (a log real Kafka wrote) instead of
    simulating; print the incidents and compare them with Kafka's own view saved beside
    the log."""
    from kraftlake.jobs.batch import ingest_dir
    from kraftlake.kraft.brokers import fenced_brokers
    from kraftlake.report.console import print_incidents
    from kraftlake.report.data import lake_brokers, lake_current, lake_events
    from kraftlake.report.kafka_view import print_kafka_view

    src = Path(name) if (Path(name) / "kafka-view.json").is_file() else EXAMPLES / name
    if not (src / "kafka-view.json").is_file():
        raise click.UsageError(f"no example {name!r}: neither a directory with a "
                               f"kafka-view.json nor one under {EXAMPLES}")
    view = json.loads((src / "kafka-view.json").read_text())
    out = Console() if Console().is_terminal else Console(width=160)
    t0 = time.time()
    spark = _session(src, lake, master, conf_file)
    ingest_dir(spark, src, lake, conf_file=conf_file)
    cid = _cluster_id(src)
    events = lake_events(spark, lake, cid)
    out.print(f"[bold]kraftlake demo --example {name}[/]: a metadata log Apache Kafka "
              f"{view['kafka_version']} wrote while the test harness drove: "
              + "; ".join(s.split(" ", 1)[1] for s in view["steps"]))
    out.print(f"log: {src}   lake: {lake}   cluster id: {cid}")
    print_incidents(out, events)
    ok = print_kafka_view(out, events, lake_current(spark, lake, cid),
                          fenced_brokers(lake_brokers(spark, lake, cid)), view)
    out.print(f"done in {time.time() - t0:.0f} s")
    if not ok:
        raise SystemExit(1)


@main.command(epilog="""\b
Examples:
  kraftlake demo                                  # 3 simulated hours
  kraftlake demo --scenario elr --seed 3 --lake demo-lake
  kraftlake demo --example real-incident""")
@click.option("--lake", default=None, type=click.Path(path_type=Path),
              help="Lake directory (default: lake/ in a new temporary directory). Must not "
                   "exist or be empty, unless --force.")
@click.option("--scenario", default="mixed", show_default=True,
              help="Simulator scenario (see `kraftlake simulate --help`).")
@click.option("--seed", type=int, default=1, show_default=True)
@click.option("--hours", type=float, default=DEMO_HOURS, show_default=True,
              help="Simulated duration.")
@click.option("--elr/--no-elr", default=None,
              help="Eligible leader replicas (the ELR incidents of `mixed`); default as "
                   "`kraftlake simulate`: on, as Kafka formats a 4.1 cluster.")
@click.option("--force", is_flag=True,
              help="Replace a non-empty --lake, only if it is a kraftlake lake.")
@click.option("--example", default=None,
              help="Ingest examples/EXAMPLE of the checkout, or the directory EXAMPLE (a log "
                   "real Kafka wrote, e.g. real-incident) instead of simulating, and compare "
                   "with Kafka's view saved beside it.")
@spark_options
def demo(lake: Path | None, scenario: str, seed: int, hours: float, elr: bool | None,
         force: bool, example: str | None, master: str | None, conf_file: str | None) -> None:
    """Simulate a KRaft cluster with incidents, ingest its metadata log, print the incidents
    found and check them against the simulator's ground truth."""
    from kraftlake.config import load_config
    from kraftlake.jobs.batch import ingest_dir
    from kraftlake.lake.schema import is_kraftlake_lake
    from kraftlake.report.console import print_incidents
    from kraftlake.report.data import lake_events
    from kraftlake.simulate.run import simulate_cluster
    from kraftlake.simulate.scenarios import SCENARIOS
    from kraftlake.simulate.score import (
        compare,
        event_keys,
        label_keys,
        print_score,
        read_labels,
    )

    if scenario not in SCENARIOS:
        raise click.UsageError(f"unknown scenario {scenario!r} (one of {', '.join(SCENARIOS)})")

    load_config(conf_file, lake=lake)  # a bad --conf fails now, not after the simulation
    if lake is not None and lake.exists() and any(lake.iterdir()):
        if not force:
            raise click.UsageError(f"{lake} exists and is not empty (use --force)")
        if not is_kraftlake_lake(lake):
            raise click.UsageError(f"{lake} is not a kraftlake lake: --force only replaces "
                                   f"one (its entries must all be kraftlake tables)")
        shutil.rmtree(lake)
    work = Path(tempfile.mkdtemp(prefix="kraftlake-demo-"))
    sim_dir = work / "cluster"
    lake = lake or work / "lake"
    if example is not None:
        _run_example(example, lake, master, conf_file)
        return
    out, err = Console(), Console(stderr=True)
    if not out.is_terminal:  # piped or captured: do not squeeze the tables into 80 columns
        out = Console(width=160)
    t0 = time.time()
    with Progress(SpinnerColumn(), TextColumn("[bold]{task.description}"), BarColumn(),
                  TimeElapsedColumn(), console=err, transient=True) as prog:
        task = prog.add_task(f"simulating {scenario} ({hours:g} h, seed {seed})", total=1000)
        summary = simulate_cluster(sim_dir, scenario, seed, hours, elr, progress=lambda d, n:
                                   prog.update(task, completed=1000 * d // max(1, n)))
        prog.update(task, completed=1000, description="starting Spark", total=None)
        spark = _session(sim_dir, lake, master, conf_file)
        ingest_dir(spark, sim_dir, lake, log=lambda m: prog.update(
            task, description=f"ingest: {m[:70]}"), conf_file=conf_file)
        prog.update(task, description="reading partition_events")
        cid = _cluster_id(sim_dir)
        events = lake_events(spark, lake, cid)
    labels = read_labels(sim_dir)
    lk = label_keys(labels)
    score = compare(event_keys(events), lk)
    out.print(f"[bold]kraftlake demo[/]: scenario [cyan]{scenario}[/], seed {seed}, "
              f"{hours:g} simulated hours, ELR {'on' if summary['elr'] else 'off'}: "
              f"{summary['records']:,} metadata records, {summary['partitions']:,} partitions")
    out.print(f"simulated log: {sim_dir}   lake: {lake}   cluster id: {cid}")
    print_incidents(out, events)
    print_score(out, score, events, len(lk))
    from kraftlake.lake.delta import Lake
    from kraftlake.report import write_report

    [html] = write_report(spark, Lake(lake).consistent(),
                          lake.with_name(f"{lake.name}-report.html"), cluster_id=cid)
    out.print(f"incident report: {html}")
    out.print(f"done in {time.time() - t0:.0f} s; explore with: kraftlake sql --lake {lake} "
              f"\"SELECT * FROM partition_events WHERE event_type = 'unclean_election'\"")
