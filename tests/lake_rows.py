"""A table's rows for comparing two lakes in a test, read with delta-rs.

Dozens of tests compare whole lakes table by table. Read by delta-rs, a small lake's fifteen
tables take 0.1-0.4 s; read by the test session's Spark (a snapshot and a query per table)
they took 7.6-8.7 s, warm, idle machine (2026-11-25, the nomanazeem log). delta-rs is also a
second Delta engine: two lakes it reads as equal are equal as Delta tables, not only as
Spark reads them (test_delta_engine.py checks that it reads every table Spark does).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import deltalake
import pyarrow as pa

from kraftlake.lake.delta import Lake


def table_dicts(path: str | Path, columns: list[str] | None = None,
                filters: list[tuple[str, str, Any]] | None = None) -> list[dict[str, Any]]:
    """The rows of the Delta table at `path` (those columns, those passing delta-rs's
    `filters`) as dicts; [] when there is no table, as a Spark read of a lake without it
    gives no rows (a table is created by its first write)."""
    if not deltalake.DeltaTable.is_deltatable(str(path)):
        return []
    return deltalake.DeltaTable(str(path)).to_pyarrow_table(
        columns=columns, filters=filters).to_pylist(maps_as_pydicts="strict")


# Columns that say where a lake's own Delta tables stand (`ingest_progress.table_versions`),
# not what it holds of a cluster: two lakes holding the same rows differ there whenever other
# jobs committed to one of them, or its maintenance did.
LAKE_OWN = {"ingest_progress": ("table_versions",)}


def comparable(name: str, row: dict[str, Any]) -> dict[str, Any]:
    """A row of table `name` without its `LAKE_OWN` columns, for comparing two lakes."""
    return {k: v for k, v in row.items() if k not in LAKE_OWN.get(name, ())}


def table_rows(lake: Lake, name: str) -> list[str]:
    """Sorted JSON rows of table `name`, every column but the `LAKE_OWN` ones."""
    return sorted(json.dumps(comparable(name, r), default=str, sort_keys=True)
                  for r in table_dicts(lake.path(name)))


def frame_rows(name: str, df) -> list[str]:
    """Sorted JSON rows of a Spark DataFrame of table `name` (a read through kraftlake's own
    views), comparable with `table_rows`."""
    return sorted(json.dumps(comparable(name, r), default=str, sort_keys=True)
                  for r in df.toArrow().to_pylist(maps_as_pydicts="strict"))


def row_count(path: str | Path, version: int | None = None) -> int:
    """The rows of the Delta table at `path` (at `version`), 0 when there is no table; one
    column is read. A Spark count of the test session costs about 0.3-0.45 CPU s."""
    if not deltalake.DeltaTable.is_deltatable(str(path)):
        return 0
    dt = deltalake.DeltaTable(str(path), version=version)
    return dt.to_pyarrow_table(columns=[dt.schema().fields[0].name]).num_rows


def table_files(lake: Lake, name: str) -> set[str]:
    """Data files of table `name`'s current snapshot, relative to the table's directory (none
    without a table). Through Spark (a read's input files and DESCRIBE DETAIL) this cost
    2.3-3.5 CPU s for the fifteen tables of a small lake, delta-rs 0.03."""
    path = lake.path(name)
    if not deltalake.DeltaTable.is_deltatable(path):
        return set()
    actions = pa.table(deltalake.DeltaTable(path).get_add_actions(flatten=False))
    return set(actions.column("path").to_pylist())


def table_operations(lake: Lake, name: str) -> list[str]:
    """The operation of every commit of table `name` (WRITE, MERGE, OPTIMIZE, ...), newest
    first. Spark's history query gave the same list for 2.5 CPU s over the thirteen tables
    of a small lake, delta-rs 0.03."""
    return [c["operation"] for c in deltalake.DeltaTable(lake.path(name)).history()]
