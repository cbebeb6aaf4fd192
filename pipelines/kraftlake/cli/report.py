"""`kraftlake report`: the HTML incident report of a lake (see `kraftlake.report`)."""

from __future__ import annotations

import datetime as dt
import time
from pathlib import Path

import click

from .group import BadInput, lake_config, lake_option, main, spark_options
from .serve import remote_option, remote_session, resident_session

TIME_FORMATS = ["%Y-%m-%d", "%Y-%m-%dT%H:%M:%S", "%Y-%m-%d %H:%M:%S"]


def _partition(value: str) -> tuple[str, int]:
    topic, sep, num = value.rpartition(":")
    if not sep or not topic or not num.isdigit():
        raise click.BadParameter(f"{value!r} is not topic:N", param_hint="--partition")
    return topic, int(num)


@main.command(epilog="""\b
Examples:
  kraftlake report --lake lake --out report.html
  kraftlake report --lake lake --out r.html --since 2025-01-01 --partition orders:0
  kraftlake report --remote sc://127.0.0.1:15002 --out report.html""")
@lake_option
@click.option("--out", required=True, type=click.Path(dir_okay=False, path_type=Path),
              help="HTML file to write")
@click.option("--cluster-id", default=None,
              help="cluster id (default: every cluster of the lake; several get a fleet "
                   "summary at --out and one report each beside it)")
@click.option("--cluster", "cluster_alias", default=None, hidden=True)  # its name until 0.x
@click.option("--since", type=click.DateTime(TIME_FORMATS), default=None,
              help="start of the range, UTC")
@click.option("--until", type=click.DateTime(TIME_FORMATS), default=None,
              help="end of the range, UTC")
@click.option("--partition", "partitions", multiple=True,
              help="topic:N to show in detail (repeatable; default: the ten most affected)")
@remote_option
@spark_options
def report(lake: str | None, out: Path, cluster_id: str | None, cluster_alias: str | None,
           since: dt.datetime | None, until: dt.datetime | None, partitions: tuple[str, ...],
           remote: str | None, master: str | None, conf_file: str | None) -> None:
    """Write one self-contained HTML incident report (charts and tables, no network needed
    to view it) for a postmortem."""
    chosen = [_partition(p) for p in partitions]
    cluster_id = cluster_id or cluster_alias
    # the lake is checked before anything imports pyspark (a remote lake is the server's)
    cfg = None if remote is not None else lake_config(conf_file, lake)
    from ..report import write_report
    from ..report.data import Window

    t0 = time.time()
    if cfg is None:
        assert remote is not None  # only a remote lake has no local config
        spark, lk = remote_session(remote, lake, master, conf_file)
    elif (served := resident_session(cfg.lake, master, conf_file)) is not None:
        spark, lk = served
    else:
        from ..lake.delta import Lake
        from ..spark import get_spark

        spark = get_spark(cfg, master=master, short=True)
        lk = Lake(cfg.lake, spark).consistent()  # a lake: `lake_config` checked it
    try:
        paths = write_report(spark, lk, out, cluster_id=cluster_id,
                             window=Window(since, until), partitions=chosen)
    except ValueError as e:  # e.g. a lake without any cluster's partitions
        raise BadInput(str(e)) from None
    size = sum(p.stat().st_size for p in paths)
    more = f", and {len(paths) - 1} cluster reports beside it" if len(paths) > 1 else ""
    click.echo(f"report: {paths[0]}{more} ({size / 1e6:.1f} MB, {time.time() - t0:.0f} s)")
