"""`kraftlake sql` and `kraftlake timeline`: reading the lake."""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from pathlib import Path

import click

from ..kraft.partition import RECOVERING
from .group import BadInput, lake_config, lake_option, main, spark_options
from .render import print_table
from .serve import remote_option, resident_session
from .statement import Refused, note_more, print_rows, run_query


def _utc(ts: dt.datetime | None) -> str:
    """A timestamp for a table: UTC, to the millisecond, no zone suffix (the header says)."""
    return "" if ts is None else ts.astimezone(dt.UTC).strftime("%Y-%m-%d %H:%M:%S.%f")[:-3]


def _session(lake: str | None, master: str | None, conf_file: str | None,
             remote: str | None = None, short: bool = True):
    """The session, the lake and its catalog: a local Spark over `--lake`, whose tables
    are registered as statements name them (`LakeCatalog`), or the client session of a
    `kraftlake serve` endpoint (`--remote`, or the one recorded as serving the lake; no JVM
    here, every table registered there: catalog None). The lake is checked once, before a
    JVM starts (`lake_config`). `short`: the JVM ends after one question
    (`kraftlake.spark.get_spark`)."""
    if remote is not None:
        from .serve import remote_session

        return (*remote_session(remote, lake, master, conf_file), None)
    cfg = lake_config(conf_file, lake)  # before a JVM starts
    if (served := resident_session(cfg.lake, master, conf_file)) is not None:
        return (*served, None)
    from ..lake.delta import Lake
    from ..spark import get_spark
    from .catalog import LakeCatalog

    spark = get_spark(cfg, master=master, short=short)
    lk = Lake(cfg.lake, spark)
    return spark, lk, LakeCatalog(spark, lk)


def _one_cluster(topic: str, partition: int, ids: set[str]) -> None:
    """`BadInput` unless exactly one cluster (`ids`) has timeline rows of the partition:
    one table of several clusters' offsets would read as one history."""
    if not ids:
        raise BadInput(f"no timeline rows for {topic}-{partition}")
    if len(ids) > 1:
        raise BadInput(f"{topic}-{partition} is in {len(ids)} clusters of the lake; choose "
                       f"one with --cluster-id: {', '.join(sorted(ids))}")


def _ask_which_cluster(root: str, column: str, topic: str, partition: int) -> None:
    """`timeline` without --cluster-id on a lake of several clusters: `_one_cluster`'s
    question answered from the Delta logs and the partition's timeline rows, read without a
    JVM (`lake.deltalog`), so that asking which cluster costs no Spark start.

    It answers as the consistent view would (`lake.cut`): over the clusters with a complete
    increment, each at the table's version now. A lake of one cluster cannot ask (Spark
    prints its timeline, or says it has none); a cluster caught mid-increment in
    `partition_timeline` (read at older versions by the cut), a table laid out otherwise or
    a log this reader cannot read leave the question to Spark too."""
    from ..lake.deltalog import LakeLog, UnreadableError

    log = LakeLog(root)
    try:
        clusters = log.clusters()
        if (len(clusters) < 2 or log.layout_problem("partition_timeline") is not None
                or log.held("partition_timeline", clusters)):
            return
        ids = log.rows("partition_timeline", ["cluster_id"], [
            (column, "=", topic), ("partition_id", "=", partition)]).column("cluster_id")
    except UnreadableError:
        return
    _one_cluster(topic, partition, set(ids.to_pylist()) & clusters)


DEFAULT_LIMIT = 1000


@main.command(epilog="""\b
Examples:
  kraftlake sql "SELECT * FROM partition_events WHERE event_type = 'unclean_election'"
  kraftlake sql 'DESCRIBE HISTORY partition_current' --lake lake
  kraftlake sql 'SELECT * FROM incidents' --lake lake --format json > incidents.json
  kraftlake sql --lake lake                       # the prompt
  kraftlake sql -f checks.sql --lake lake
  kraftlake sql --remote sc://127.0.0.1:15002 'SELECT count(*) FROM records'""")
@click.argument("query", required=False)
@click.option("-f", "--file", "script", type=click.Path(exists=True, dir_okay=False,
                                                        path_type=Path),
              help="run the ;-separated statements of FILE in one session")
@lake_option
@click.option("--format", "fmt", type=click.Choice(["table", "json", "csv"]), default="table")
@click.option("--limit", type=click.IntRange(min=0), default=DEFAULT_LIMIT, show_default=True,
              help="print at most this many rows (0: all of them)")
@remote_option
@spark_options
def sql(query: str | None, script: Path | None, lake: str | None, fmt: str, limit: int,
        remote: str | None, master: str | None, conf_file: str | None) -> None:
    """Run Spark SQL over the lake; every table is a view under its own name.

    With QUERY: its result. With `-f FILE`: every statement of the file, in order, in one
    session. With neither: an interactive prompt (statements end with `;`, `\\d` lists the
    tables and their columns, `\\q` or Ctrl-D leaves).

    Exit status 2 when Spark refuses the query (a syntax error, an unknown table or
    column), with Spark's message on one line; for a file, at its first refused statement,
    naming the line it starts on."""
    if query is not None and script is not None:
        raise click.UsageError("give a QUERY or -f FILE, not both")
    prompt = query is None and script is None  # a session that may live for hours
    spark, _, catalog = _session(lake, master, conf_file, remote, short=not prompt)
    from pyspark.logger import PySparkLogger

    # PySpark logs a refused SQL query with its JVM stack trace as one JSON line on stderr;
    # the user gets Spark's message once, below
    PySparkLogger.getLogger("SQLQueryContextLogger").disabled = True
    if script is not None:
        from .prompt import run_file

        raise SystemExit(run_file(spark, script, fmt, limit, catalog))
    if prompt:
        from .prompt import run_prompt

        run_prompt(spark, fmt, limit, catalog)
        return
    assert query is not None  # neither a file nor the prompt
    try:
        columns, rows, more = run_query(spark, query, limit, catalog)
    except Refused as exc:
        click.echo(f"Error: {exc}", err=True)
        raise SystemExit(2) from None
    if more:
        note_more(limit)
    print_rows(columns, rows, fmt)


@main.command(epilog="""\b
Examples:
  kraftlake timeline --lake lake --topic orders --partition 0
  kraftlake timeline --lake lake --topic-id 4o0BL0ZFQTmMRrJnKyAcKg --partition 0
  kraftlake timeline --remote sc://127.0.0.1:15002 --topic orders --partition 0""")
@lake_option
@click.option("--topic", default=None,
              help="topic name: its live incarnation (the newest when none is live)")
@click.option("--topic-id", default=None, help="one incarnation of a topic, by its id")
@click.option("--partition", "partition", required=True, type=int)
@click.option("--cluster-id", default=None)
@remote_option
@spark_options
def timeline(lake: str | None, topic: str | None, topic_id: str | None, partition: int,
             cluster_id: str | None, remote: str | None, master: str | None,
             conf_file: str | None) -> None:
    """One partition's history: every state with its events, oldest first.

    A topic is its id: a topic deleted and created again under the same name is another
    topic, whose epochs start again. --topic shows its live incarnation and lists the
    earlier ones by id and lifetime; --topic-id picks one."""
    if (topic is None) == (topic_id is None):
        raise click.UsageError("give --topic NAME or --topic-id ID (one of them)")
    column, value = ("topic_name", topic) if topic is not None else ("topic_id", topic_id)
    assert value is not None  # one of the two, checked above
    if remote is None and cluster_id is None:
        _ask_which_cluster(lake_config(conf_file, lake).lake, column, value, partition)
    spark, lk, catalog = _session(lake, master, conf_file, remote)
    if catalog is not None:  # here: the states and their events as of the same increments
        # (`lake.cut`), as a server's views are
        lk = lk.consistent(["partition_timeline", "partition_events"])
    from pyspark.sql import functions as F

    # DataFrame filters, not SQL with named parameters: Spark leaves those unbound once
    # Delta's SQL extension is in the session ([UNBOUND_SQL_PARAMETER])
    cond = (F.col(column) == value) & (F.col("partition_id") == partition)
    if cluster_id:
        cond &= F.col("cluster_id") == cluster_id
    states = (lk.read(spark, "partition_timeline").filter(cond)
              .orderBy("cluster_id", "valid_from_offset", "seq").collect())
    evs = lk.read(spark, "partition_events").filter(cond).select(
        "cluster_id", "topic_id", "offset", "seq", "event_type", "detection",
        "recovery_duration_ms").collect()
    _one_cluster(value, partition, {s.cluster_id for s in states})
    deleted = {e.topic_id: e.offset for e in evs if e.event_type == "partition_deleted"}
    lives = incarnations(states, deleted)
    shown = lives[-1].topic_id
    states = [s for s in states if s.topic_id == shown]
    evs = [e for e in evs if e.topic_id == shown]
    name = states[0].topic_name or shown
    by: dict[tuple[str, str, int, int], list[str]] = {}
    for e in evs:
        label = e.event_type + (f"({e.detection})" if e.detection and
                                e.event_type == "unclean_election" else "")
        if e.recovery_duration_ms is not None:
            label += f" after {e.recovery_duration_ms / 1000:.1f}s"
        by.setdefault((e.cluster_id, e.topic_id, e.offset, e.seq), []).append(label)
    rows = []
    for s in states:
        fmt = lambda a: "" if a is None else ",".join(map(str, a))  # noqa: E731
        reass = ""
        if s.adding_replicas or s.removing_replicas:
            reass = f" +{fmt(s.adding_replicas)} -{fmt(s.removing_replicas)}"
        doubt = "?" if s.uncertain_since is not None else ""  # carried across unknown offsets
        rows.append([str(s.valid_from_offset), _utc(s.valid_from_ts), s.record_type,
                     str(s.leader) + doubt, f"{s.leader_epoch}/{s.partition_epoch}{doubt}",
                     fmt(s.isr) + doubt,
                     fmt(s.eligible_leader_replicas), fmt(s.last_known_elr),
                     fmt(s.replicas) + reass,
                     "RECOVERING" if s.leader_recovery_state == RECOVERING else "",
                     ", ".join(by.get((s.cluster_id, s.topic_id, s.valid_from_offset, s.seq),
                                      []))])
    print_table(["offset", "time (UTC)", "change", "leader", "epochs L/P", "isr", "elr", "lke",
                 "replicas", "recovery", "events"], rows,
                title=f"{name}-{partition} (topic id {shown})")
    doubts = sorted({s.uncertain_since for s in states if s.uncertain_since is not None})
    if doubts:
        click.echo(f"?: state carried across unknown offsets from {doubts[0]} (damaged, missing "
                   f"from the input or failing a record-level check: see `quarantine`): leader, "
                   f"epochs and ISR may be wrong until a PartitionRecord or a snapshot "
                   f"re-anchors it")
    if shown in deleted:
        click.echo(f"deleted at offset {deleted[shown]}")
    for life in lives[:-1]:
        click.echo(f"earlier incarnation of {name}-{partition}: topic id {life.topic_id}, "
                   f"{life.span()} (show it with --topic-id {life.topic_id})")


@dataclass(frozen=True)
class Incarnation:
    """One topic id's lifetime in a partition's timeline rows: a topic re-created under the
    same name is another topic (another id, epochs from 0 again)."""

    topic_id: str
    first_offset: int
    first_ts: dt.datetime | None
    deleted_offset: int | None
    deleted_ts: dt.datetime | None

    def span(self) -> str:
        end = ("live" if self.deleted_offset is None else
               f"deleted at offset {self.deleted_offset} ({_utc(self.deleted_ts)})")
        return f"from offset {self.first_offset} ({_utc(self.first_ts)}), {end}"


def incarnations(states: list, deleted: dict[str, int]) -> list[Incarnation]:
    """The incarnations of `states` (one partition's timeline rows, by offset), the one to
    show last: the live one (none deleted), else the newest; earlier ones before it, oldest
    first. `deleted`: the offset of each topic id's partition_deleted event."""
    found: dict[str, Incarnation] = {}
    for s in states:
        if s.topic_id not in found:
            end = deleted.get(s.topic_id)
            ts = next((x.valid_to_ts for x in states if x.topic_id == s.topic_id
                       and x.valid_to_offset == end), None) if end is not None else None
            found[s.topic_id] = Incarnation(s.topic_id, s.valid_from_offset, s.valid_from_ts,
                                            end, ts)
    return sorted(found.values(), key=lambda i: (i.deleted_offset is None, i.first_offset))
