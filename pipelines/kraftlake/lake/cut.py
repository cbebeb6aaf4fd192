"""A consistent read of a lake: every table as of each cluster's last complete increment.

An increment commits its tables one after another (`jobs.increment`: the events first, the
progress row last), and jobs of several clusters commit at the same time. Delta has no
transaction across tables, so a reader of each table's latest version can see a cluster's
events without the timeline they came from, or the first tables of a cluster's first
increment and nothing else. A `Cut` is what a database's read-committed snapshot would give:
for every cluster, its rows of every table as its last complete increment left them.

It is built from what the tables say about themselves, without reading a row in the common
case:

* the `ingest_progress` snapshot's transactions say, per app id, the last increment that
  completed (its progress row is its last commit, with the same transaction id);
* each table's snapshot, taken after that one, lists the app ids committed to it; an
  increment app (`lake.apps`) whose version there is newer than its last completed one is a
  cluster with an increment under way in that table (or one that completed since);
* such a cluster is *held*: it is read from the table at the version its last complete
  increment recorded in `ingest_progress.table_versions` (no version: its first increment
  is under way, so none of its rows); every other cluster is read at the table's version
  taken here.

So a table is one version-pinned scan, plus one per cluster caught mid-increment; the
versions a held cluster is read at are those of an increment that was running moments ago,
far younger than what `maintain`'s vacuum may delete.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Protocol

from .apps import increment_cluster
from .location import PROGRESS_TABLE
from .schema import table_names

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession


class Tables(Protocol):
    """What a cut asks of a lake (`lake.delta.Lake` answers it; the Lake builds its
    consistent view from this module, so this module does not import it)."""

    def transactions(self, name: str) -> tuple[int | None, dict[str, int]]: ...

    def read(self, spark: SparkSession | None, name: str,
             version: int | None = None) -> DataFrame: ...

# Tables outside any increment: read at their version when the cut is taken (the progress
# table is the cut's own reference; quality results are written by `kraftlake quality`).
CUT_EXCLUDED = (PROGRESS_TABLE, "quality_results")


@dataclass(frozen=True)
class TableCut:
    """Where one table is read: at `version` (None: the table did not exist) for every
    cluster but the `held` ones, each at its own version (None: none of its rows)."""

    version: int | None
    held: dict[str, int | None] = field(default_factory=dict)


@dataclass(frozen=True)
class Cut:
    """Every table's `TableCut`, taken at one moment (`take_cut`)."""

    tables: dict[str, TableCut]

    @property
    def held(self) -> set[str]:
        """The clusters caught mid-increment in some table."""
        return {c for t in self.tables.values() for c in t.held}


def take_cut(lake: Tables, names: Iterable[str] | None = None) -> Cut:
    """The cut of `lake` now, for the tables `names` (default: every table).

    Costs one Delta log listing per table, and one small read of `ingest_progress` only
    when some cluster is mid-increment."""
    wanted = list(table_names() if names is None else names)
    # app id -> its last completed increment
    progress_version, completed = lake.transactions(PROGRESS_TABLE)
    tables: dict[str, TableCut] = {}
    held_in: dict[str, set[str]] = {}  # table -> clusters mid-increment in it
    for name in wanted:
        if name == PROGRESS_TABLE:
            tables[name] = TableCut(progress_version)
            continue
        version, txns = lake.transactions(name)
        tables[name] = TableCut(version)
        if name in CUT_EXCLUDED:
            continue
        for app_id, txn in txns.items():
            cid = increment_cluster(app_id)
            if cid is not None and txn > completed.get(app_id, -1):
                held_in.setdefault(name, set()).add(cid)
    if held_in:
        last = _completed_versions(lake, progress_version, set().union(*held_in.values()))
        for name, clusters in held_in.items():
            # a cluster whose progress rows predate `table_versions` (a lake upgraded from
            # an older kraftlake) cannot be held: it is read at the table's version
            held: dict[str, int | None] = {}
            for c in sorted(clusters):
                if c not in last:  # its first increment is under way: none of its rows
                    held[c] = None
                elif (versions := last[c]) is not None:
                    held[c] = versions.get(name)
            tables[name] = TableCut(tables[name].version, held)
    return Cut(tables)


def _completed_versions(lake: Tables, progress_version: int | None,
                        clusters: set[str]) -> dict[str, dict[str, int] | None]:
    """Per cluster with a progress row, the table versions of its last complete increment,
    from the progress table at `progress_version`: the newest version of each table over all
    its rows (the increments of one cluster run one at a time, so each one's versions are at
    least its predecessor's); None when its rows were written before kraftlake kept them."""
    if progress_version is None:
        return {}
    rows = (lake.read(None, PROGRESS_TABLE, progress_version)
            .filter(sql_in("cluster_id", clusters))
            .select("cluster_id", "table_versions").toArrow()
            .to_pylist(maps_as_pydicts="strict"))
    out: dict[str, dict[str, int] | None] = {}
    for r in rows:
        merged = out.setdefault(r["cluster_id"], None)
        if r["table_versions"] is None:
            continue
        merged = dict(merged or {})
        for t, v in r["table_versions"].items():
            merged[t] = max(v, merged.get(t, v))
        out[r["cluster_id"]] = merged
    return out


def sql_in(column: str, values: Iterable[str]) -> str:
    """`column IN ('a', 'b')` as SQL, the values quoted (cluster ids come from the input)."""
    quoted = ", ".join("'{}'".format(v.replace("'", "''")) for v in sorted(values))
    return f"{column} IN ({quoted})"


def cut_query(path: str, cut: TableCut) -> str:
    """One table under its cut as a SQL query over its Delta location (`path`): what a
    consistent read runs, and what the catalog's view of the table says."""
    table = "delta.`{}`".format(path.replace("`", "``"))
    query = f"SELECT * FROM {table} VERSION AS OF {cut.version}"
    if not cut.held:
        return query
    parts = [f"{query} WHERE NOT ({sql_in('cluster_id', cut.held)})"]
    parts += [f"SELECT * FROM {table} VERSION AS OF {v} WHERE {sql_in('cluster_id', [c])}"
              for c, v in cut.held.items() if v is not None]
    return " UNION ALL ".join(parts)
