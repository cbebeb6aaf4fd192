"""`kraftlake report`: the HTML incident report of a lake (see `kraftlake.report`)."""

from __future__ import annotations

import datetime as dt
import time
from pathlib import Path

import click

from . import main, spark_options
from .serve import remote_option, remote_session

TIME_FORMATS = ["%Y-%m-%d", "%Y-%m-%dT%H:%M:%S", "%Y-%m-%d %H:%M:%S"]


def _partition(value: str) -> tuple[str, int]:
    topic, sep, num = value.rpartition(":")
    if not sep or not topic or not num.isdigit():
        raise click.BadParameter(f"{value!r} is not topic:N", param_hint="--partition")
    return topic, int(num)


@main.command()
@click.option("--lake", type=click.Path(exists=True, file_okay=False, path_type=Path),
              help="lake directory (or --remote)")
@click.option("--out", required=True, type=click.Path(dir_okay=False, path_type=Path),
              help="HTML file to write")
@click.option("--cluster", "cluster_id", default=None,
              help="cluster id (needed when the lake holds several clusters)")
@click.option("--since", type=click.DateTime(TIME_FORMATS), default=None,
              help="start of the range, UTC")
@click.option("--until", type=click.DateTime(TIME_FORMATS), default=None,
              help="end of the range, UTC")
@click.option("--partition", "partitions", multiple=True,
              help="topic:N to show in detail (repeatable; default: the ten most affected)")
@remote_option
@spark_options
def report(lake: Path | None, out: Path, cluster_id: str | None, since: dt.datetime | None,
           until: dt.datetime | None, partitions: tuple[str, ...], remote: str | None,
           master: str | None, conf_file: str | None) -> None:
    """Write one self-contained HTML incident report (charts and tables, no network needed
    to view it) for a postmortem."""
    from ..config import load_config
    from ..lake.delta import Lake
    from ..report import write_report
    from ..report.data import Window
    from ..spark import get_spark

    if (lake is None) == (remote is None):
        raise click.UsageError("give --lake or --remote")
    chosen = [_partition(p) for p in partitions]
    t0 = time.time()
    if remote is not None:
        spark, lk = remote_session(remote)
    else:
        cfg = load_config(conf_file, lake=lake)
        spark = get_spark(cfg, master=master)
        lk = Lake(cfg.lake).require()
    try:
        path = write_report(spark, lk, out, cluster_id=cluster_id,
                            window=Window(since, until), partitions=chosen)
    except ValueError as e:
        raise click.ClickException(str(e)) from e
    size = path.stat().st_size
    click.echo(f"report: {path} ({size / 1e6:.1f} MB, {time.time() - t0:.0f} s)")
