"""One SQL statement run on a session and its result printed: what `kraftlake sql` does with
a QUERY, and its prompt and `-f FILE` with each statement (`cli.prompt`)."""

from __future__ import annotations

import csv
import datetime as dt
import json
import sys
from typing import TYPE_CHECKING

import click

from .render import print_table

if TYPE_CHECKING:
    from .catalog import LakeCatalog


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


def _cell(v) -> str:
    """A plain value as a table cell: text as is, lists and structs as JSON, null empty."""
    if v is None:
        return ""
    if isinstance(v, (list, dict)):
        return json.dumps(v)
    return str(v)


def print_rows(columns: list[str], rows: list[list], fmt: str = "table") -> None:
    """A query's result on stdout, the one way every command prints one (a query, a prompt's
    statement, a file's, the prompt's table listing): `table` (whole cells: `render`), `json`
    (an array of objects) or `csv`. `rows`: lists of plain values (`_plain`), in the order of
    `columns`. A statement without a result (SET, CREATE VIEW ...) prints nothing."""
    if not columns:
        return
    if fmt == "json":
        click.echo(json.dumps([dict(zip(columns, r, strict=True)) for r in rows], indent=1,
                              default=str))
    elif fmt == "csv":
        w = csv.writer(sys.stdout, lineterminator="\n")  # csv's default ends lines in \r\n
        w.writerow(columns)
        for r in rows:
            w.writerow([json.dumps(v) if isinstance(v, (list, dict)) else v for v in r])
    else:
        print_table(columns, [[_cell(v) for v in r] for r in rows])


def spark_error(exc: Exception) -> str:
    """Spark's own message, on one line (its first: the error class and what is wrong)."""
    first = next((ln for ln in str(exc).splitlines() if ln.strip()), type(exc).__name__)
    return " ".join(first.split())


class Refused(Exception):
    """Spark refused a statement; the message is Spark's, on one line."""


def run_query(spark, query: str, limit: int,
              catalog: LakeCatalog | None = None) -> tuple[list[str], list[list], bool]:
    """The columns and (at most `limit`, 0: all) rows of one statement, as plain Python
    values, and whether there were more rows; `Refused` when Spark refuses it (a syntax
    error, an unknown table or column). `catalog`: a local session's, which registers the
    tables the statement names first."""
    from pyspark.errors import AnalysisException, ParseException

    if catalog is not None:
        catalog.prepare(query)
    try:
        df = spark.sql(query)
        got = (df.limit(limit + 1) if limit else df).collect()
    except (AnalysisException, ParseException) as exc:
        raise Refused(spark_error(exc)) from None
    more = bool(limit) and len(got) > limit
    return df.columns, [[_plain(v) for v in r] for r in got[:limit or None]], more


def note_more(limit: int) -> None:
    click.echo(f"note: the first {limit} rows; --limit N for more (0: all)", err=True)
