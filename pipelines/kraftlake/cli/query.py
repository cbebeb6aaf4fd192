"""`kraftlake sql` and `kraftlake timeline`: reading the lake."""

from __future__ import annotations

import csv
import datetime as dt
import json
import sys

import click

from ..kraft.partition import RECOVERING
from . import BadInput, lake_config, lake_option, main, spark_options
from .render import print_table


def _plain(v):
    """A value of a Spark row as JSON has it. A timestamp is an instant: UTC with its zone
    (pyspark hands it over as a naive datetime in this process's local time)."""
    if isinstance(v, dt.datetime):
        return v.astimezone(dt.UTC).isoformat().replace("+00:00", "Z")
    if isinstance(v, dt.date):
        return v.isoformat()
    if isinstance(v, (bytes, bytearray)):
        return v.hex()
    if isinstance(v, list):
        return [_plain(x) for x in v]
    if hasattr(v, "asDict"):
        return {k: _plain(x) for k, x in v.asDict().items()}
    return v


def _utc(ts: dt.datetime | None) -> str:
    """A timestamp for a table: UTC, to the millisecond, no zone suffix (the header says)."""
    return "" if ts is None else ts.astimezone(dt.UTC).strftime("%Y-%m-%d %H:%M:%S.%f")[:-3]


def _cell(v) -> str:
    """A plain value as a table cell: text as is, lists and structs as JSON, null empty."""
    if v is None:
        return ""
    if isinstance(v, (list, dict)):
        return json.dumps(v)
    return str(v)


def print_rows(columns: list[str], rows: list[list], fmt: str = "table") -> None:
    """A query's result on stdout, the one way every command prints one: `table` (whole
    cells: `render`), `json` (an array of objects) or `csv`. `rows`: lists of plain values
    (`_plain`), in the order of `columns`."""
    if fmt == "json":
        click.echo(json.dumps([dict(zip(columns, r, strict=True)) for r in rows], indent=1,
                              default=str))
    elif fmt == "csv":
        w = csv.writer(sys.stdout)
        w.writerow(columns)
        for r in rows:
            w.writerow([json.dumps(v) if isinstance(v, (list, dict)) else v for v in r])
    else:
        print_table(columns, [[_cell(v) for v in r] for r in rows])


def _session(lake: str | None, master: str | None, conf_file: str | None):
    cfg = lake_config(conf_file, lake)  # before a JVM starts
    from ..lake.delta import Lake
    from ..spark import get_spark

    spark = get_spark(cfg, master=master)
    lk = Lake(cfg.lake, spark).require()
    lk.register_views(spark)
    return spark, lk


DEFAULT_LIMIT = 1000


def _spark_error(exc: Exception) -> str:
    """Spark's own message, on one line (its first: the error class and what is wrong)."""
    first = next((ln for ln in str(exc).splitlines() if ln.strip()), type(exc).__name__)
    return " ".join(first.split())


@main.command(epilog="""\b
Examples:
  kraftlake sql "SELECT * FROM partition_events WHERE event_type = 'unclean_election'"
  kraftlake sql 'DESCRIBE HISTORY partition_current' --lake lake
  kraftlake sql 'SELECT * FROM incidents' --lake lake --format json > incidents.json""")
@click.argument("query")
@lake_option
@click.option("--format", "fmt", type=click.Choice(["table", "json", "csv"]), default="table")
@click.option("--limit", type=click.IntRange(min=0), default=DEFAULT_LIMIT, show_default=True,
              help="print at most this many rows (0: all of them)")
@spark_options
def sql(query: str, lake: str | None, fmt: str, limit: int, master: str | None,
        conf_file: str | None) -> None:
    """Run Spark SQL over the lake; every table is a view under its own name.

    Exit status 2 when Spark refuses the query (a syntax error, an unknown table or
    column), with Spark's message on one line."""
    spark, _ = _session(lake, master, conf_file)
    from pyspark.errors import AnalysisException, ParseException
    from pyspark.logger import PySparkLogger

    # PySpark logs a refused SQL query with its JVM stack trace as one JSON line on stderr;
    # the user gets Spark's message once, below
    PySparkLogger.getLogger("SQLQueryContextLogger").disabled = True
    try:
        df = spark.sql(query)
        got = (df.limit(limit + 1) if limit else df).collect()
    except (AnalysisException, ParseException) as exc:
        click.echo(f"Error: {_spark_error(exc)}", err=True)
        raise SystemExit(2) from None
    if limit and len(got) > limit:
        got = got[:limit]
        click.echo(f"note: the first {limit} rows; --limit N for more (0: all)", err=True)
    print_rows(df.columns, [[_plain(v) for v in r] for r in got], fmt)


@main.command(epilog="""\b
Examples:
  kraftlake timeline --lake lake --topic orders --partition 0""")
@lake_option
@click.option("--topic", required=True, help="topic name")
@click.option("--partition", "partition", required=True, type=int)
@click.option("--cluster-id", default=None)
@spark_options
def timeline(lake: str | None, topic: str, partition: int, cluster_id: str | None,
             master: str | None, conf_file: str | None) -> None:
    """One partition's history: every state with its events, oldest first."""
    spark, lk = _session(lake, master, conf_file)
    from pyspark.sql import functions as F

    # DataFrame filters, not SQL with named parameters: Spark leaves those unbound once
    # Delta's SQL extension is in the session ([UNBOUND_SQL_PARAMETER])
    cond = (F.col("topic_name") == topic) & (F.col("partition_id") == partition)
    if cluster_id:
        cond &= F.col("cluster_id") == cluster_id
    states = (lk.read(spark, "partition_timeline").filter(cond)
              .orderBy("cluster_id", "valid_from_offset", "seq").collect())
    evs = lk.read(spark, "partition_events").filter(cond).select(
        "cluster_id", "topic_id", "offset", "seq", "event_type", "detection",
        "recovery_duration_ms").collect()
    by = {}
    for e in evs:
        label = e.event_type + (f"({e.detection})" if e.detection and
                                e.event_type == "unclean_election" else "")
        if e.recovery_duration_ms is not None:
            label += f" after {e.recovery_duration_ms / 1000:.1f}s"
        by.setdefault((e.cluster_id, e.topic_id, e.offset, e.seq), []).append(label)
    if not states:
        raise BadInput(f"no timeline rows for {topic}-{partition}")
    rows = []
    for s in states:
        fmt = lambda a: "" if a is None else ",".join(map(str, a))  # noqa: E731
        reass = ""
        if s.adding_replicas or s.removing_replicas:
            reass = f" +{fmt(s.adding_replicas)} -{fmt(s.removing_replicas)}"
        rows.append([str(s.valid_from_offset), _utc(s.valid_from_ts), s.record_type,
                     str(s.leader), f"{s.leader_epoch}/{s.partition_epoch}", fmt(s.isr),
                     fmt(s.eligible_leader_replicas), fmt(s.last_known_elr),
                     fmt(s.replicas) + reass,
                     "RECOVERING" if s.leader_recovery_state == RECOVERING else "",
                     ", ".join(by.get((s.cluster_id, s.topic_id, s.valid_from_offset, s.seq),
                                      []))])
    print_table(["offset", "time (UTC)", "change", "leader", "epochs L/P", "isr", "elr", "lke",
                 "replicas", "recovery", "events"], rows, title=f"{topic}-{partition}")
    dels = [e for e in evs if e.event_type == "partition_deleted"]
    for e in dels:
        click.echo(f"deleted at offset {e.offset}")
