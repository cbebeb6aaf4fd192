"""`kraftlake sql` without a query: an interactive prompt, or `-f FILE`'s statements, on one
session, so ten questions pay one Spark start instead of ten.

The prompt reads lines with the standard library's `readline` (line editing, and a history
kept across runs in the user's state directory) until a `;` ends a statement; backslash
commands are read at the start of a statement: `\\d` lists the tables and their columns,
`\\d NAME` one table's, `\\q` (or Ctrl-D) leaves. A statement Spark refuses prints Spark's
message on one line and the prompt goes on.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING

import click

from ..sqltext import has_statement, split
from .statement import Refused, note_more, print_rows, run_query, spark_error

if TYPE_CHECKING:
    from .catalog import LakeCatalog

PROMPT, MORE = "kraftlake> ", "       -> "
HISTORY_LENGTH = 1000
HELP = "statements end with ;  \\d [NAME] tables and columns  \\q or Ctrl-D quit"


def history_path() -> Path:
    """Where the prompt's history lives: `$XDG_STATE_HOME/kraftlake/sql_history` (the XDG
    base directories' place for history; default `~/.local/state`)."""
    state = os.environ.get("XDG_STATE_HOME") or Path.home() / ".local" / "state"
    return Path(state) / "kraftlake" / "sql_history"


def _open_history() -> Path | None:
    try:
        import readline
    except ImportError:  # no readline (Windows): no history, the prompt works
        return None
    path = history_path()
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        if path.exists():
            readline.read_history_file(path)
    except OSError:
        return None
    readline.set_history_length(HISTORY_LENGTH)
    return path


def _save_history(path: Path | None) -> None:
    if path is None:
        return
    import readline

    try:
        readline.write_history_file(path)
    except OSError as exc:
        click.echo(f"note: history not saved: {exc}", err=True)


def describe(spark, name: str | None,
             catalog: LakeCatalog | None = None) -> tuple[list[str], list[list]]:
    """`\\d`: every lake table's columns and types, as Spark's catalog has them (or only
    table `name`'s)."""
    from ..lake.schema import table_names

    if catalog is not None:
        catalog.prepare(name)
    rows = []
    for table in [name] if name else table_names():
        rows += [[table, f.name, f.dataType.simpleString()] for f in spark.table(table).schema]
    return ["table", "column", "type"], rows


def _command(spark, line: str, fmt: str, catalog: LakeCatalog | None) -> bool:
    """Run a backslash command; False when it says to leave."""
    from pyspark.errors import AnalysisException

    word, _, arg = line.strip().partition(" ")
    if word == "\\q":
        return False
    if word == "\\d":
        try:
            print_rows(*describe(spark, arg.strip() or None, catalog), fmt)
        except AnalysisException as exc:
            click.echo(f"Error: {spark_error(exc)}", err=True)
    else:
        click.echo(f"Error: unknown command {word} ({HELP})", err=True)
    return True


def _execute(spark, text: str, fmt: str, limit: int, catalog: LakeCatalog | None) -> None:
    """One statement of the prompt: its result, or Spark's refusal on one line."""
    from pyspark.errors import PySparkException

    try:
        columns, rows, more = run_query(spark, text, limit, catalog)
    except Refused as exc:
        click.echo(f"Error: {exc}", err=True)
        return
    except PySparkException as exc:  # failed while running (a cast, a division ...)
        click.echo(f"Error: {spark_error(exc)}", err=True)
        return
    if more:
        note_more(limit)
    print_rows(columns, rows, fmt)


def run_prompt(spark, fmt: str, limit: int, catalog: LakeCatalog | None = None) -> None:
    """Read statements until `\\q` or end of input (Ctrl-D). `catalog`: a local session's
    (`run_query`)."""
    interactive = sys.stdin.isatty()
    history = _open_history() if interactive else None
    if interactive:
        click.echo(f"kraftlake sql: {HELP}")
    buffer = ""
    try:
        while True:
            try:
                line = input((MORE if buffer else PROMPT) if interactive else "")
            except KeyboardInterrupt:  # Ctrl-C drops the statement being typed
                click.echo("")
                buffer = ""
                continue
            except EOFError:
                if interactive:
                    click.echo("")
                break
            if not buffer.strip() and line.lstrip().startswith("\\"):
                if not _command(spark, line, fmt, catalog):
                    break
                continue
            buffer += line + "\n"
            statements, buffer = split(buffer)
            for st in statements:
                try:
                    _execute(spark, st.text, fmt, limit, catalog)
                except KeyboardInterrupt:
                    click.echo("cancelled", err=True)
            if not has_statement(buffer):
                buffer = ""
    finally:
        _save_history(history)
    if has_statement(buffer):
        click.echo("note: the last statement had no ; and was not run", err=True)


def run_file(spark, path: Path, fmt: str, limit: int,
             catalog: LakeCatalog | None = None) -> int:
    """Run the statements of `path` in order; the exit status: 0, or 2 at the first one
    Spark refuses (its line named; the statements after it are not run). `catalog`: a
    local session's (`run_query`)."""
    statements, _ = split(path.read_text(encoding="utf-8") + "\n;")  # the last needs no ;
    for st in statements:
        try:
            columns, rows, more = run_query(spark, st.text, limit, catalog)
        except Refused as exc:
            click.echo(f"Error: {path}:{st.line}: {exc}", err=True)
            return 2
        if more:
            note_more(limit)
        print_rows(columns, rows, fmt)
    return 0
