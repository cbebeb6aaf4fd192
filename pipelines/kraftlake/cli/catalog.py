"""The lake's tables in the catalog of a local `kraftlake sql` session, registered as the
statements name them, each statement reading whole increments.

Registering a table loads its Delta snapshot (a few hundred milliseconds on an idle machine,
seconds under load), and a one-row question names one or two of the thirteen tables: a
cold `sql` registered all of them before answering. Here a statement's tables are registered
just before it runs; a statement that names none of them (`SHOW TABLES`, `\\d`) gets all of
them. A `kraftlake serve` endpoint registers every table at its start and keeps them current
(`kraftlake.endpoint`).

Each statement reads the lake as of each cluster's last complete increment: its tables are
views of a cut taken just before it runs (`lake.cut`), so two tables it joins never disagree
about how far a cluster got. A statement about the tables' versions (`VERSION AS OF`,
`TIMESTAMP AS OF`, `DESCRIBE HISTORY`, `DESCRIBE DETAIL`) gets the Delta tables instead:
time travel and Delta's history need them.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from ..lake.schema import table_names

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

    from ..lake.cut import TableCut
    from ..lake.delta import Lake

_WORD = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
# statements about the Delta tables themselves: their versions and their history
_OF_THE_TABLES = re.compile(r"\b(VERSION|TIMESTAMP)\s+AS\s+OF\b|\bDESCRIBE\s+(HISTORY|DETAIL)\b",
                            re.IGNORECASE)


def named_tables(text: str) -> list[str]:
    """The lake tables `text` names: every word equal to a table's name, whatever its case.
    A word in a string or a comment counts too, which registers a table too many, never one
    too few."""
    words = {w.lower() for w in _WORD.findall(text)}
    return [t for t in table_names() if t in words]


class LakeCatalog:
    """The tables registered so far in one local session."""

    def __init__(self, spark: SparkSession, lake: Lake) -> None:
        self._spark, self._lake = spark, lake
        # table -> what it is registered as: its TableCut, or None for the Delta table
        self._registered: dict[str, TableCut | None] = {}

    def prepare(self, text: str | None) -> None:
        """Register the tables `text` names (every table when it names none, or `text` is
        None) as of now: views of a cut, or the Delta tables for a statement about their
        versions. A table already registered as it should be is left alone."""
        wanted = (named_tables(text) if text is not None else []) or table_names()
        if text is not None and _OF_THE_TABLES.search(text):
            lake, want = self._lake, dict.fromkeys(wanted)
        else:
            lake = self._lake.consistent(wanted)
            assert lake.cut is not None
            want = {t: lake.cut.tables[t] for t in wanted}
        todo = [t for t in wanted if t not in self._registered or self._registered[t] != want[t]]
        if todo:
            lake.register_views(self._spark, todo)
            self._registered.update({t: want[t] for t in todo})
