"""Rewrite a lake an older kraftlake laid out into this version's layout (`kraftlake upgrade`).

A table's layout is its partition columns and its columns, names and order
(`schemas/tables/`). An increment replaces one cluster's open rows of the mutable tables
(`Lake.replace`), which is a metadata-only delete only when those rows are whole partitions:
so `partition_timeline`, `partition_intervals` and `incidents` are partitioned by
`cluster_id` and whether the row is open, `partition_current` and `topics` by `cluster_id`,
and `incidents` has an `is_open` column to partition by. A lake an older kraftlake wrote
has them otherwise; a job refuses to write into it (`Lake._check_layout` names this
command) instead of mixing layouts.

Each table in another layout is rewritten by one Delta commit, an overwrite with the new
partitioning and schema, of its rows at the version read, the new columns derived
(`DERIVED`; `ingest_progress.newest_record_ts` from `records`). Delta keeps a table's
transaction ids across an overwrite, which exactly-once relies on: a re-run of an
increment after the upgrade must still find its commits; the ids and the row count are
checked after each table. A table already in this layout is left alone, so the command can
be run again after a failure, and on a current lake it does nothing. No job may write the
lake meanwhile (the overwrite would win over its commit).
"""

from __future__ import annotations

from dataclasses import dataclass

from pyspark.sql import DataFrame, Window
from pyspark.sql import functions as F

from .delta import Lake, conform
from .maintain import MaintenanceError, count_rows, lake_app_ids, txn_versions
from .schema import table_names, table_schema

# columns a table gained, as SQL over the columns it had
DERIVED = {"incidents": {"is_open": "end_offset IS NULL"}}


@dataclass
class TableUpgrade:
    """One rewritten table: its partition columns before and after, and its rows."""

    table: str
    before: tuple[str, ...]
    after: tuple[str, ...]
    rows: int


def upgrade(lake: Lake) -> list[TableUpgrade]:
    """Rewrite every table of `lake` whose layout is not this version's; what was done."""
    app_ids = lake_app_ids(lake)
    done = []
    for name in table_names():
        if lake.layout_problem(name) is None:  # in this layout, or no table
            continue
        before, after = lake.partition_columns(name), table_schema(name).partition_by
        version = lake.version(name)
        txns = txn_versions(lake, name, app_ids)
        rows = count_rows(lake, name, version)
        old = _derived(lake, name, lake.read(None, name, version))
        (conform(old, name).write.format("delta").mode("overwrite")
         .option("overwriteSchema", "true").partitionBy(*after).save(lake.path(name)))
        kept = count_rows(lake, name)
        now = txn_versions(lake, name, app_ids)
        moved = {a: (txns[a], now[a]) for a in app_ids}
        if kept != rows or now != txns:
            raise MaintenanceError(f"{lake.path(name)}: the rewrite changed the table "
                                   f"({rows} -> {kept} rows; transaction ids {moved})")
        done.append(TableUpgrade(name, before, after, rows))
    return done


def _derived(lake: Lake, name: str, old: DataFrame) -> DataFrame:
    """The rows of table `name` an older kraftlake wrote, with the columns it lacked."""
    old = old.withColumns({c: F.expr(sql) for c, sql in DERIVED.get(name, {}).items()})
    if name == "ingest_progress" and "newest_record_ts" not in old.columns:
        old = _with_newest(lake, old)
    return old


def _with_newest(lake: Lake, progress: DataFrame) -> DataFrame:
    """`ingest_progress.newest_record_ts` of rows kept before it was: what each increment
    would have kept, the newest of the cluster's log records below the row's end offset
    (a running maximum of their times in log order, read from `records`)."""
    upto = Window.partitionBy("cluster_id").orderBy("offset").rowsBetween(
        Window.unboundedPreceding, Window.currentRow)
    newest = lake.read(None, "records").filter(F.col("source") == "log").select(
        "cluster_id", (F.col("offset") + 1).alias("end_offset"),
        F.max("timestamp").over(upto).alias("newest_record_ts"))
    return progress.join(newest, ["cluster_id", "end_offset"], "left")
