"""`kraftlake quality`: run the expectation suites over a lake, for people and schedulers.

Exit status 0 when no error-severity expectation failed, 1 otherwise, so a scheduler (cron,
Airflow, a CI job) can alert on it; warnings are printed and recorded but do not fail.
"""

from __future__ import annotations

import os
import sys
from datetime import UTC, datetime
from pathlib import Path

import click

from ..quality.suites import verdict
from .group import lake_config, lake_option, main, spark_options

FRESHNESS = "records_fresh"  # the expectation with one value per cluster: its age


def _age(seconds: float) -> str:
    """A duration as people read one: the two largest units (`432 d 7 h`, `3 h 12 min`)."""
    s = round(seconds)
    parts = [(s // 86_400, "d"), (s % 86_400 // 3_600, "h"), (s % 3_600 // 60, "min"),
             (s % 60, "s")]
    while len(parts) > 1 and parts[0][0] == 0:  # from the largest unit that is not 0
        parts.pop(0)
    first, *rest = parts[:2]
    return " ".join(f"{n} {unit}" for n, unit in [first, *(p for p in rest if p[0])])


def _stale_clusters(run, max_age: float) -> list[str]:
    """One line per cluster whose newest record is older than allowed (from the failed
    freshness expectation's sample, which carries each cluster's id and age)."""
    lines = []
    for o in run.failed:
        if o.expectation != FRESHNESS:
            continue
        for row in o.unexpected_sample:
            lines.append(f"stale: cluster {row['cluster_id']}: newest record "
                         f"{_age(row['dq_newest_age_seconds'])} old (allowed {_age(max_age)})")
        more = (o.unexpected_count or 0) - len(o.unexpected_sample)
        if more > 0:
            lines.append(f"stale: and {more} more cluster(s) (see quality_results)")
    return lines


def _summary(run) -> str:
    """A fixed-width table: one line per expectation, failures marked."""
    head = f"{'suite':<19} {'expectation':<37} {'severity':<8} {'result':<6} unexpected"
    lines = [head, "-" * len(head)]
    for o in run.outcomes:
        res = "ok" if o.success else "FAIL"
        n = "" if o.unexpected_count is None else str(o.unexpected_count)
        if o.unexpected_count is None and o.observed_value is not None:
            n = f"observed {o.observed_value}"
        if o.exception:
            n = f"exception: {o.exception[:60]}"
        lines.append(f"{o.suite:<19} {o.expectation:<37} {o.severity:<8} {res:<6} {n}")
    errors = len(run.failed_errors)
    warnings = len(run.failed) - errors
    lines.append(f"run {run.run_id}: {len(run.outcomes)} expectations, {errors} error(s) "
                 f"failed, {warnings} warning(s) failed: {verdict(o.severity for o in run.failed)}")
    return "\n".join(lines)


@main.command(epilog="""\b
Examples:
  kraftlake quality --lake lake --report quality-report
  kraftlake quality --lake lake --suite partition_timeline --max-age 3600""")
@lake_option
@click.option("--report", "report_dir", type=click.Path(file_okay=False, path_type=Path),
              default=None,
              help="Render Great Expectations Data Docs into this directory (they open offline).")
@click.option("--suite", "suites", multiple=True,
              help="Suite to run (repeatable; default: every suite).")
@click.option("--max-age", "max_age", type=float, default=None,
              help="Freshness: allowed age in seconds of each cluster's newest record "
                   "(default 86400).")
@click.option("--now", "now", type=click.DateTime(), default=None,
              help="Reference time for freshness, UTC (default: now).")
@spark_options
def quality(lake: str | None, report_dir: Path | None, suites: tuple[str, ...],
            max_age: float | None, now: datetime | None, master: str | None,
            conf_file: str | None) -> None:
    """Validate the lake with the expectation suites; exit 1 if an error-level check failed.

    Every expectation's result is appended to the lake's `quality_results` table (one row
    per expectation and run), so the lake keeps the history of its checks."""
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    cfg = lake_config(conf_file, lake)  # before a JVM starts
    from ..lake.delta import Lake
    from ..quality.runner import DEFAULT_MAX_AGE_SECONDS, run_quality
    from ..quality.suites import SUITES
    from ..spark import get_spark

    for s in suites:
        if s not in SUITES:
            raise click.BadParameter(f"unknown suite {s!r}; known: {', '.join(SUITES)}",
                                     param_hint="--suite")
    spark = get_spark(cfg, master=master)
    lk = Lake(cfg.lake, spark).require().consistent()  # whole increments only (`lake.cut`)
    run = run_quality(spark, lk, suites=list(suites) or None, report_dir=report_dir,
                      now=now.replace(tzinfo=UTC) if now else None,
                      max_age_seconds=max_age if max_age is not None else
                      DEFAULT_MAX_AGE_SECONDS)
    click.echo(_summary(run))
    for line in _stale_clusters(run, max_age if max_age is not None else
                                DEFAULT_MAX_AGE_SECONDS):
        click.echo(line)
    if report_dir is not None:
        click.echo(f"report: {(Path(report_dir) / 'kraftlake.html').resolve()} "
                   f"(Data Docs index: {(Path(report_dir) / 'index.html').resolve()})")
    sys.exit(run.exit_code)
