"""The lake's tables in the catalog of a local `kraftlake sql` session, registered as the
statements name them.

Registering a table loads its Delta snapshot (a few hundred milliseconds on an idle machine,
seconds under load), and a one-row question names one or two of the thirteen tables: a
cold `sql` registered all of them before answering. Here a statement's tables are registered
just before it runs; a statement that names none of them (`SHOW TABLES`, `\\d`) gets all of
them. A `kraftlake serve` endpoint registers every table once, at its start.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from ..lake.schema import table_names

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

    from ..lake.delta import Lake

_WORD = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


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
        self._registered: set[str] = set()

    def prepare(self, text: str | None) -> None:
        """Register the tables `text` names that are not yet, or every table when it names
        none (or `text` is None)."""
        wanted = (named_tables(text) if text is not None else []) or table_names()
        todo = [t for t in wanted if t not in self._registered]
        if todo:
            self._lake.register_views(self._spark, todo)
            self._registered.update(todo)
