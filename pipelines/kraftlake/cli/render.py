"""Tables on the console, never cut: the one place kraftlake's commands lay out rows.

rich fits a table to the console by eliding cells (`quaranti…`, a header turned into `…`),
which hides the one value a user came for; and to a pipe or a file it fits 80 columns. Here:

- stdout not a terminal (a pipe, a file, a scheduler's log): the table at its natural width,
  every cell whole, however wide;
- a terminal wide enough: the same table;
- a terminal narrower than the table: one record after another, one column per line, as
  psql's expanded display does (`-[ RECORD 1 ]-`), each value whole (the terminal wraps a
  long one).
"""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence
from typing import TextIO

from rich.console import Console
from rich.measure import Measurement
from rich.table import Table
from rich.text import Text

# rich wraps a table to a console's width; the console a table is laid out on is this wide,
# so that a table is never narrower than its cells
_UNBOUNDED = 1 << 20


def _table(columns: Sequence[str], rows: Sequence[Sequence[str]], title: str | None,
           right: Sequence[str]) -> Table:
    t = Table(title=title)
    for c in columns:
        t.add_column(Text(c), justify="right" if c in right else "left", no_wrap=True)
    for r in rows:
        t.add_row(*[Text(v) for v in r])  # Text: a value's brackets are not rich markup
    return t


def natural_width(columns: Sequence[str], rows: Sequence[Sequence[str]]) -> int:
    """The width of the table with every cell whole."""
    console = Console(width=_UNBOUNDED, file=sys.stderr)
    t = _table(columns, rows, None, ())
    return Measurement.get(console, console.options, t).maximum


def expanded(columns: Sequence[str], rows: Sequence[Sequence[str]], width: int) -> str:
    """The rows as psql's expanded display: a `-[ RECORD n ]-` rule, then `column | value`."""
    key = max((len(c) for c in columns), default=0)
    out = []
    for n, r in enumerate(rows, 1):
        head = f"-[ RECORD {n} ]"
        out.append(head + "-" * max(1, min(width, key + 40) - len(head)))
        for c, v in zip(columns, r, strict=True):
            lines = v.splitlines() or [""]
            out.append(f"{c:<{key}} | {lines[0]}")
            out.extend(f"{'':<{key}} | {ln}" for ln in lines[1:])
    return "\n".join(out)


def _terminal_width(stream: TextIO) -> int:
    """$COLUMNS if set (as rich and the shell's tools take it), else the terminal's."""
    try:
        return int(os.environ["COLUMNS"])
    except (KeyError, ValueError):
        pass
    try:
        return os.get_terminal_size(stream.fileno()).columns
    except OSError:
        return 80


def print_table(columns: Sequence[str], rows: Sequence[Sequence[str]], *,
                title: str | None = None, right: Sequence[str] = (),
                file: TextIO | None = None) -> None:
    """Print rows of text under `columns`, whole (see the module doc). `right`: the columns
    to right-align (counts, sizes)."""
    stream = file or sys.stdout
    terminal = stream.isatty()
    width = _terminal_width(stream) if terminal else _UNBOUNDED
    if terminal and natural_width(columns, rows) > width:
        if title:
            stream.write(title + "\n")
        stream.write(expanded(columns, rows, width) + "\n")
        if not rows:
            stream.write("(0 rows)\n")
        stream.flush()
        return
    console = Console(file=stream, width=width, force_terminal=terminal or None,
                      no_color=not terminal)
    console.print(_table(columns, rows, title, right), crop=False)
