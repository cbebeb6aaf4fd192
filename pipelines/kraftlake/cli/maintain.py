"""`kraftlake maintain --lake DIR`: compact, vacuum and checkpoint the lake's Delta tables.

Meant for a scheduler (cron, Airflow): one short Spark session running delta-spark's
compaction, vacuum and checkpoint (`lake.maintain`). Exit status 1 when a table could not be
maintained (a concurrent writer won a commit conflict), so the scheduler can retry it later.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING

import click

from ..lake.retention import DEFAULT_RETENTION_HOURS
from .group import lake_config, lake_option, main, spark_options
from .render import print_table

if TYPE_CHECKING:
    from ..lake.maintain import TableMaintenance


def _size(n: float) -> str:
    """Bytes as a short human figure (1.2 MiB)."""
    for unit in ("B", "KiB", "MiB", "GiB"):
        if n < 1024 or unit == "GiB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    raise AssertionError("unreachable")


def _report(results: list[TableMaintenance], title: str) -> None:
    """One line per table ("vacuumed": files deleted by vacuum); the error column only when
    a table failed."""
    errors = any(r.error for r in results)
    figures = ("files", "size", "rows", "vacuumed", "seconds")
    rows = [[r.table, f"{r.files_before} -> {r.files_after}",
             f"{_size(r.bytes_before)} -> {_size(r.bytes_after)}", str(r.rows),
             str(r.vacuumed), f"{r.seconds:.2f}", *((r.error or "",) if errors else ())]
            for r in results]
    print_table(("table", *figures, *(("error",) if errors else ())), rows, title=title,
                right=figures)


@main.command(epilog="""\b
Examples:
  kraftlake maintain --lake lake                  # daily, after the ingest
  kraftlake maintain --lake lake --no-compact     # beside a running stream""")
@lake_option
@click.option("--table", "tables", multiple=True,
              help="Table to maintain (repeatable; default: every table).")
@click.option("--retention-hours", type=click.IntRange(min=0), default=DEFAULT_RETENTION_HOURS,
              show_default=True,
              help="Vacuum deletes files no snapshot of the last N hours references.")
@click.option("--allow-short-retention", is_flag=True,
              help="Accept a retention below the tables' deletedFileRetentionDuration (a "
                   "week); only when no reader can still be on an older snapshot.")
@click.option("--no-compact", "no_compact", is_flag=True,
              help="Only vacuum and checkpoint: safe beside a running ingest or stream.")
@spark_options
def maintain(lake: str | None, tables: tuple[str, ...], retention_hours: int,
             allow_short_retention: bool, no_compact: bool, master: str | None,
             conf_file: str | None) -> None:
    """Compact small files, vacuum unreferenced ones, checkpoint the Delta log of each table."""
    from ..lake.schema import table_names

    known = table_names()
    for t in tables:
        if t not in known:
            raise click.BadParameter(f"unknown table {t!r}; known: {', '.join(known)}",
                                     param_hint="--table")
    if retention_hours < DEFAULT_RETENTION_HOURS and not allow_short_retention:
        raise click.BadParameter(
            f"{retention_hours} h is below Delta's default retention of "
            f"{DEFAULT_RETENTION_HOURS} h: a reader of an older snapshot could lose its "
            f"files; add --allow-short-retention if none can", param_hint="--retention-hours")
    cfg = lake_config(conf_file, lake)  # before pyspark is loaded
    from ..lake.delta import Lake
    from ..lake.maintain import maintain as run
    from ..spark import get_spark

    lk = Lake(cfg.lake, get_spark(cfg, master=master)).require()
    t0 = time.time()
    results = run(lk, list(tables) or None, compact=not no_compact,
                  retention_hours=retention_hours, enforce_retention=not allow_short_retention)
    _report(results, f"maintained {lk.root} in {time.time() - t0:.1f}s "
                     f"(retention {retention_hours} h)")
    if any(r.error for r in results):
        raise SystemExit(1)
