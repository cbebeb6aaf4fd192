"""`kraftlake tables`: every lake table and column with its meaning, from the table schemas.

The schemas (`schemas/tables/*.json`, package `kraftlake.schemas`) are what the pipeline
writes and what this prints: one source, so the reference cannot drift from the lake.
Plain text, one column a line, whatever the width (a long meaning wraps, none is cut).
"""

from __future__ import annotations

import click

from .group import BadInput, main


@main.command(epilog="""\b
Examples:
  kraftlake tables                      # every table
  kraftlake tables partition_events     # one table
  kraftlake tables | grep -i elr        # which columns hold ELR""")
@click.argument("names", nargs=-1, metavar="[TABLE]...")
def tables(names: tuple[str, ...]) -> None:
    """Print every table of the lake and each column's type and meaning (no Spark, no lake
    needed)."""
    from ..lake.schema import table_names, table_schema

    known = table_names()
    unknown = [n for n in names if n not in known]
    if unknown:
        raise BadInput(f"no table {', '.join(unknown)}; the tables: {', '.join(known)}")
    for i, name in enumerate(names or known):
        t = table_schema(name)
        if i:
            click.echo()
        click.echo(f"{t.name} ({t.layer}): {t.doc}")
        click.echo(f"  one row per key: {', '.join(t.key)}"
                   + (f"; partitioned by {', '.join(t.partition_by)}" if t.partition_by else ""))
        width = max(len(c["name"]) for c in t.columns)
        kind = max(len(c["type"]) for c in t.columns)
        for c in t.columns:
            null = "" if c["nullable"] else " (never null)"
            click.echo(f"  {c['name']:<{width}}  {c['type']:<{kind}}  {c['doc']}{null}")
