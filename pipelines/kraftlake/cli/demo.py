"""`kraftlake demo`: simulate a cluster with incidents, ingest it, print the incidents found.

This is the README's main job: it needs no Kafka cluster and no data, because the simulator
writes the real metadata-log bytes of a busy cluster *and* the ground truth (`labels.jsonl`).
So the demo can show what the pipeline finds (unclean elections, their recovery, ELR
activity, the rest of the events) and, in the same breath, check it against the truth.

The helpers here (`simulate_cluster`, `read_labels`, `event_keys`, `compare`) are also what
`benchmarks/bench_events.py` and the label tests use, so the demo, the benchmark and the
tests all measure the same thing in the same way.
"""

from __future__ import annotations

import datetime as dt
import json
import shutil
import tempfile
import time
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import click
from rich.console import Console
from rich.progress import BarColumn, Progress, SpinnerColumn, TextColumn, TimeElapsedColumn
from rich.table import Table

from kraftlake.cli import main
from kraftlake.cli.ingest import spark_options
from kraftlake.kraft.events import EVENT_TYPES

# (topic_id, partition_id, offset, event_type): the identity of an event in labels.jsonl
EventKey = tuple[str, int, int, str]


# Sized so the whole demo (simulate + Spark ingest + report) takes 1-3 minutes on 2 cores.
DEMO_HOURS = 3.0


def simulate_cluster(out: Path, scenario: str = "mixed", seed: int = 0,
                     hours: float | None = None, elr: bool | None = None,
                     metadata_version: int | None = None,
                     progress: Callable[[int, int], None] | None = None) -> dict[str, Any]:
    """Write scenario `scenario` into `out` exactly as `kraftlake simulate` would with the same
    options (scenario defaults, cluster min.insync.replicas 2, metadata.version feature level
    `metadata_version`, default the latest).

    Same arguments as the CLI => byte-identical output, so labels of a demo run can be
    reproduced with `kraftlake simulate --scenario S --seed N --hours H [--elr]`.
    """
    from kraftlake.kraft.versions import MV_LATEST
    from kraftlake.simulate.cluster import SimConfig
    from kraftlake.simulate.scenarios import DEFAULTS, Params
    from kraftlake.simulate.scenarios import simulate as run

    d = dict(DEFAULTS.get(scenario, {}))
    params = Params(brokers=d.get("brokers", 6), topics=d.get("topics", 20),
                    partitions=d.get("partitions", 12),
                    replication_factor=d.get("replication_factor", 3),
                    hours=hours if hours is not None else d.get("hours", 24.0))
    level = metadata_version if metadata_version is not None else MV_LATEST
    use_elr = elr if elr is not None else bool(d.get("elr", False))
    cfg = SimConfig(out=out, seed=seed, brokers=params.brokers, metadata_version=level,
                    elr=use_elr and level >= 23, min_isr=2,
                    segment_bytes=d.get("segment_bytes", 8 << 20),
                    txn_threshold=d.get("txn_threshold", 10_000),
                    **{k: d[k] for k in ("snapshot_interval_ms", "snapshot_bytes") if k in d})
    return run(scenario, cfg, params, progress=progress)


def read_labels(sim_dir: Path) -> list[dict[str, Any]]:
    """The lines of `labels.jsonl` (one per change record and partition that is an event)."""
    with open(sim_dir / "labels.jsonl") as f:
        return [json.loads(line) for line in f if line.strip()]


def label_keys(labels: Iterable[dict[str, Any]]) -> set[EventKey]:
    return {(x["topic_id"], x["partition_id"], x["offset"], e)
            for x in labels for e in x["events"]}


def event_keys(rows: Iterable[Any]) -> set[EventKey]:
    """Keys of `partition_events` rows (Spark Rows or dicts). All rows count, snapshot rows
    (seq 1) included: labels have none, so any such event is a false positive."""
    return {(r["topic_id"], r["partition_id"], r["offset"], r["event_type"]) for r in rows}


@dataclass
class Score:
    """Per event type: true positives, false positives (pipeline only), false negatives."""

    tp: Counter = field(default_factory=Counter)
    fp: Counter = field(default_factory=Counter)
    fn: Counter = field(default_factory=Counter)
    fp_examples: dict[str, list[EventKey]] = field(default_factory=dict)
    fn_examples: dict[str, list[EventKey]] = field(default_factory=dict)

    def types(self) -> list[str]:
        seen = set(self.tp) | set(self.fp) | set(self.fn)
        return [t for t in EVENT_TYPES if t in seen] + sorted(seen - set(EVENT_TYPES))

    def precision(self, t: str) -> float:
        d = self.tp[t] + self.fp[t]
        return self.tp[t] / d if d else 1.0

    def recall(self, t: str) -> float:
        d = self.tp[t] + self.fn[t]
        return self.tp[t] / d if d else 1.0

    @property
    def exact(self) -> bool:
        return not (+self.fp) and not (+self.fn)

    def add(self, other: Score) -> None:
        self.tp.update(other.tp)
        self.fp.update(other.fp)
        self.fn.update(other.fn)


def compare(events: set[EventKey], labels: set[EventKey], examples: int = 5) -> Score:
    """Precision/recall bookkeeping of pipeline events against labels, by exact key."""
    s = Score()
    for k in events & labels:
        s.tp[k[3]] += 1
    for k in sorted(events - labels, key=lambda k: (k[2], k[0], k[1])):
        s.fp[k[3]] += 1
        s.fp_examples.setdefault(k[3], [])
        if len(s.fp_examples[k[3]]) < examples:
            s.fp_examples[k[3]].append(k)
    for k in sorted(labels - events, key=lambda k: (k[2], k[0], k[1])):
        s.fn[k[3]] += 1
        s.fn_examples.setdefault(k[3], [])
        if len(s.fn_examples[k[3]]) < examples:
            s.fn_examples[k[3]].append(k)
    return s


def read_cluster_id(sim_dir: Path) -> str:
    """cluster.id from the simulated meta.properties (the lake is keyed by it)."""
    for line in (sim_dir / "meta.properties").read_text().splitlines():
        if line.startswith("cluster.id="):
            return line.split("=", 1)[1].strip()
    raise ValueError(f"{sim_dir}/meta.properties has no cluster.id")


def ingest_dir(spark: Any, sim_dir: Path, lake: Path,
               log: Callable[[str], None] | None = None,
               conf_file: str | None = None) -> list[Any]:
    """`kraftlake ingest SIM_DIR --lake LAKE` in-process (same library call as the CLI)."""
    from kraftlake.config import load_config
    from kraftlake.jobs.batch import ingest

    cfg = load_config(conf_file, lake=lake)
    return ingest(spark, cfg, [sim_dir], log=log)


def lake_events(spark: Any, lake: Path, cluster_id: str) -> list[dict[str, Any]]:
    """Every `partition_events` row of one cluster, as dicts."""
    from pyspark.sql import functions as F

    from kraftlake.lake.delta import Lake

    df = Lake(lake).read(spark, "partition_events").filter(F.col("cluster_id") == cluster_id)
    return [r.asDict(recursive=True) for r in df.collect()]


# ------------------------------------------------------------------ the report


def _when(ts: Any) -> str:
    if isinstance(ts, dt.datetime):
        return ts.strftime("%m-%d %H:%M:%S")
    return str(ts)


def _dur(ms: int | None) -> str:
    if ms is None:
        return "?"
    s = ms / 1000
    if s < 120:
        return f"{s:.1f} s"
    return f"{int(s // 60)} min {int(s % 60)} s"


def _tp(e: dict[str, Any]) -> str:
    return f"{e['topic_name']}:{e['partition_id']}"


def _ids(v: list[int] | None) -> str:
    return "[" + ",".join(str(x) for x in (v or [])) + "]"


def report(console: Console, events: list[dict[str, Any]], score: Score | None,
           n_labels: int) -> None:
    """Print the incidents (readable tables) and the ground-truth check (none for a log real
    Kafka wrote: it has no labels; `report_kafka_view` compares it with Kafka instead)."""
    by_type: dict[str, list[dict[str, Any]]] = {}
    for e in sorted(events, key=lambda e: (e["offset"], e["topic_name"] or "",
                                           e["partition_id"])):
        by_type.setdefault(e["event_type"], []).append(e)

    # unclean elections, each with the recovery that ended its RECOVERING period
    recov: dict[tuple[str, int], list[dict[str, Any]]] = {}
    for r in by_type.get("recovery_completed", []):
        recov.setdefault((r["topic_id"], r["partition_id"]), []).append(r)

    def recovery_of(e: dict[str, Any]) -> dict[str, Any] | None:
        later = [r for r in recov.get((e["topic_id"], e["partition_id"]), [])
                 if r["offset"] > e["offset"]]
        return later[0] if later else None

    unclean = by_type.get("unclean_election", [])
    rules = Counter(e["detection"] for e in unclean)
    console.print(f"[bold]Unclean leader elections: {len(unclean)}[/] on "
                  f"{len({(e['topic_id'], e['partition_id']) for e in unclean})} partitions "
                  f"(detection: {', '.join(f'{k} {v}' for k, v in rules.most_common())})")
    # one row per incident: same second, rule and new leader (a broker failure elects many
    # partitions at once); the partitions, offsets and recoveries of the group
    groups: dict[tuple[Any, ...], list[dict[str, Any]]] = {}
    for e in unclean:
        ts = e["timestamp"]
        key = (ts.replace(microsecond=0) if isinstance(ts, dt.datetime) else ts,
               e["detection"], e["new_leader"])
        groups.setdefault(key, []).append(e)
    t = Table(title_justify="left")
    for c in ("time", "detection", "new leader", "partitions (topic:partition)", "offsets",
              "recovery"):
        t.add_column(c)
    for (ts, det, new_leader), es in groups.items():
        recs = [recovery_of(e) for e in es]
        done = [r["recovery_duration_ms"] for r in recs if r is not None]
        stuck = len(recs) - len(done)
        parts = ", ".join(_tp(e) for e in es[:3]) + (f" (+{len(es) - 3})" if len(es) > 3 else "")
        offs = str(es[0]["offset"]) if len(es) == 1 else f"{es[0]['offset']}-{es[-1]['offset']}"
        status = []
        if done:
            span = _dur(min(done)) if min(done) == max(done) else \
                f"{_dur(min(done))} - {_dur(max(done))}"
            status.append(f"[green]{len(done)} recovered[/] after {span}")
        if stuck:
            status.append(f"[red]{stuck} still RECOVERING[/]")
        t.add_row(_when(ts), det or "", str(new_leader), parts, offs, "; ".join(status))
    console.print(t)
    for e in unclean:
        if recovery_of(e) is None and e is max(
                (x for x in unclean if (x["topic_id"], x["partition_id"]) ==
                 (e["topic_id"], e["partition_id"])), key=lambda x: x["offset"]):
            console.print(f"  still RECOVERING: {_tp(e)} (unclean election at offset "
                          f"{e['offset']}, leader {e['new_leader']})")

    ec, ee = by_type.get("elr_change", []), by_type.get("elr_election", [])
    t = Table(title=f"Eligible leader replicas: {len(ec)} elr_change, {len(ee)} elr_election",
              title_justify="left")
    for c in ("event", "partition", "offset", "time", "ELR before -> after",
              "LastKnownElr before -> after", "leader"):
        t.add_column(c)
    for e in ee[:5] + ec[:5]:
        t.add_row(e["event_type"], _tp(e), str(e["offset"]), _when(e["timestamp"]),
                  f"{_ids(e['prev_eligible_leader_replicas'])} -> "
                  f"{_ids(e['new_eligible_leader_replicas'])}",
                  f"{_ids(e['prev_last_known_elr'])} -> {_ids(e['new_last_known_elr'])}",
                  f"{e['prev_leader']} -> {e['new_leader']}")
    console.print(t)

    t = Table(title="All events", title_justify="left")
    for c in ("event type", "count", "partitions"):
        t.add_column(c, justify="right" if c != "event type" else "left")
    for name in EVENT_TYPES:
        rows = by_type.get(name, [])
        t.add_row(name, str(len(rows)),
                  str(len({(r["topic_id"], r["partition_id"]) for r in rows})))
    console.print(t)

    n_ev = len(event_keys(events))
    if score is None:
        return
    if score.exact:
        console.print(f"[bold green]ground truth: {n_ev} events == {n_labels} labelled events "
                      f"(labels.jsonl): exact match[/]")
    else:
        fp, fn = sum(score.fp.values()), sum(score.fn.values())
        console.print(f"[bold red]ground truth: {n_ev} events vs {n_labels} labelled: "
                      f"{fp} not in labels, {fn} missed[/]")
        for name in score.types():
            if score.fp[name] or score.fn[name]:
                console.print(f"  {name}: +{score.fp[name]} -{score.fn[name]}  e.g. "
                              f"extra {score.fp_examples.get(name, [])[:2]} "
                              f"missed {score.fn_examples.get(name, [])[:2]}")


def is_kraftlake_lake(path: Path) -> bool:
    """Whether every entry of `path` is a kraftlake table directory (a Delta log inside) or
    kraftlake's own `_kraftlake/` work directory: what `demo --force` may delete. A home
    directory, a source tree or any other data never looks like that."""
    from kraftlake.lake.schema import table_names

    tables = set(table_names())
    entries = list(path.iterdir())
    return bool(entries) and all(
        e.is_dir() and not e.is_symlink()
        and (e.name == "_kraftlake" or (e.name in tables and (e / "_delta_log").is_dir()))
        for e in entries)


# ------------------------------------------------------------ --example real-incident

# the source checkout's examples/ (an installed wheel has none: --example takes a directory)
EXAMPLES = Path(__file__).resolve().parents[3] / "examples"
KAFKA_COUNTERS = {"unclean_election": "UncleanLeaderElectionsPerSec",
                  "elr_election": "ElectionFromEligibleLeaderReplicasPerSec"}


def lake_current(spark: Any, lake: Path, cluster_id: str) -> dict[tuple[str, int], Any]:
    """`partition_current` of one cluster, by (topic name, partition)."""
    from pyspark.sql import functions as F

    from kraftlake.lake.delta import Lake

    df = Lake(lake).read(spark, "partition_current").filter(F.col("cluster_id") == cluster_id)
    return {(r["topic_name"], r["partition_id"]): r.asDict() for r in df.collect()}


def report_kafka_view(console: Console, events: list[dict[str, Any]],
                      current: dict[tuple[str, int], Any], view: dict[str, Any]) -> bool:
    """Hold what kraftlake found against what Kafka itself reported (kafka-view.json beside
    the example): election counts against the controller's JMX counters, partition_current
    against kafka-topics --describe and the metadata shell. True when all agree."""
    ok = True
    counts = Counter(e["event_type"] for e in events)
    t = Table(title="kraftlake vs Kafka's controller (JMX counters)", title_justify="left")
    for c in ("event", "kraftlake", "Kafka", ""):
        t.add_column(c)
    for event, counter in KAFKA_COUNTERS.items():
        theirs = view["controller_counters"][counter]
        same = counts[event] == theirs
        ok &= same
        t.add_row(event, str(counts[event]), f"{theirs} ({counter})",
                  "[green]equal[/]" if same else "[red]differs[/]")
    console.print(t)
    shell = {(r["topic"], r["partition"]): r for r in view["metadata_shell"]}
    t = Table(title="partition_current vs kafka-topics --describe and the metadata shell",
              title_justify="left")
    for c in ("partition", "leader", "isr", "elr", "leader epoch", "recovery", ""):
        t.add_column(c)
    for k in view["describe"]:
        ours = current.get((k["topic"], k["partition"])) or {}
        sh = shell.get((k["topic"], k["partition"]), {})
        want = (k["Leader"], k["Isr"], k.get("Elr", []), sh.get("leaderEpoch"),
                {"RECOVERED": 0, "RECOVERING": 1}.get(sh.get("leaderRecoveryState")))
        got = (ours.get("leader"), ours.get("isr"), ours.get("eligible_leader_replicas") or [],
               ours.get("leader_epoch"), ours.get("leader_recovery_state"))
        ok &= want == got
        t.add_row(f"{k['topic']}:{k['partition']}", *(str(x) for x in got),
                  "[green]equal[/]" if want == got else f"[red]Kafka {want}[/]")
    console.print(t)
    console.print("[bold green]kraftlake agrees with Kafka[/]" if ok else
                  "[bold red]kraftlake disagrees with Kafka (rows above)[/]")
    return ok


def run_example(name: str, lake: Path, master: str | None, conf_file: str | None) -> None:
    """Ingest `examples/<name>` or the directory `name` (a log real Kafka wrote) instead of
    simulating; print the incidents and compare them with Kafka's own view saved beside
    the log."""
    from kraftlake.config import load_config
    from kraftlake.spark import get_spark

    src = Path(name) if (Path(name) / "kafka-view.json").is_file() else EXAMPLES / name
    if not (src / "kafka-view.json").is_file():
        raise click.UsageError(f"no example {name!r}: neither a directory with a "
                               f"kafka-view.json nor one under {EXAMPLES}")
    view = json.loads((src / "kafka-view.json").read_text())
    out = Console() if Console().is_terminal else Console(width=160)
    t0 = time.time()
    spark = get_spark(load_config(conf_file, lake=lake), master=master)
    ingest_dir(spark, src, lake, conf_file=conf_file)
    cid = read_cluster_id(src)
    events = lake_events(spark, lake, cid)
    out.print(f"[bold]kraftlake demo --example {name}[/]: a metadata log Apache Kafka "
              f"{view['kafka_version']} wrote while the test harness drove: "
              + "; ".join(s.split(" ", 1)[1] for s in view["steps"]))
    out.print(f"log: {src}   lake: {lake}   cluster id: {cid}")
    report(out, events, None, 0)
    ok = report_kafka_view(out, events, lake_current(spark, lake, cid), view)
    out.print(f"done in {time.time() - t0:.0f} s")
    if not ok:
        raise SystemExit(1)


@main.command()
@click.option("--lake", default=None, type=click.Path(path_type=Path),
              help="Lake directory (default: lake/ in a new temporary directory). Must not "
                   "exist or be empty, unless --force.")
@click.option("--scenario", default="mixed", show_default=True,
              help="Simulator scenario (see `kraftlake simulate --help`).")
@click.option("--seed", type=int, default=1, show_default=True)
@click.option("--hours", type=float, default=DEMO_HOURS, show_default=True,
              help="Simulated duration.")
@click.option("--elr/--no-elr", default=True, show_default=True,
              help="Eligible leader replicas on (adds the ELR incidents to `mixed`).")
@click.option("--force", is_flag=True,
              help="Replace a non-empty --lake, only if it is a kraftlake lake.")
@click.option("--example", default=None,
              help="Ingest examples/EXAMPLE of the checkout, or the directory EXAMPLE (a log "
                   "real Kafka wrote, e.g. real-incident) instead of simulating, and compare "
                   "with Kafka's view saved beside it.")
@spark_options
def demo(lake: Path | None, scenario: str, seed: int, hours: float, elr: bool,
         force: bool, example: str | None, master: str | None, conf_file: str | None) -> None:
    """Simulate a KRaft cluster with incidents, ingest its metadata log, print the incidents
    found and check them against the simulator's ground truth."""
    from kraftlake.simulate.scenarios import SCENARIOS

    if scenario not in SCENARIOS:
        raise click.UsageError(f"unknown scenario {scenario!r} (one of {', '.join(SCENARIOS)})")
    from kraftlake.config import load_config

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
        run_example(example, lake, master, conf_file)
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
        from kraftlake.spark import get_spark

        spark = get_spark(load_config(conf_file, lake=lake), master=master)
        ingest_dir(spark, sim_dir, lake, log=lambda m: prog.update(
            task, description=f"ingest: {m[:70]}"), conf_file=conf_file)
        prog.update(task, description="reading partition_events")
        cid = read_cluster_id(sim_dir)
        events = lake_events(spark, lake, cid)
    labels = read_labels(sim_dir)
    lk = label_keys(labels)
    score = compare(event_keys(events), lk)
    out.print(f"[bold]kraftlake demo[/]: scenario [cyan]{scenario}[/], seed {seed}, "
              f"{hours:g} simulated hours, ELR {'on' if elr else 'off'}: "
              f"{summary['records']:,} metadata records, {summary['partitions']:,} partitions")
    out.print(f"simulated log: {sim_dir}   lake: {lake}   cluster id: {cid}")
    report(out, events, score, len(lk))
    from kraftlake.lake.delta import Lake
    from kraftlake.report import write_report

    html = write_report(spark, Lake(lake), lake.with_name(f"{lake.name}-report.html"),
                        cluster_id=cid)
    out.print(f"incident report: {html}")
    out.print(f"done in {time.time() - t0:.0f} s; explore with: kraftlake sql --lake {lake} "
              f"\"SELECT * FROM partition_events WHERE event_type = 'unclean_election'\"")
