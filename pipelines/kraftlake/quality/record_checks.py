"""Record-level checks for every ingest / stream batch: good rows on, bad rows to quarantine.

Signature (what the ingest and stream jobs call, once per increment / micro-batch):

    check_records(records: DataFrame) -> tuple[DataFrame, DataFrame]

* `records`: the batch's bronze rows - at least the columns of the `records` table (extra
  columns such as `row_kind` are kept), e.g. `src.filter(F.col("row_kind") == "record")`.
* returns `(good, quarantined)`:
  - `good`: the input rows (same columns) that pass every error-severity record-level
    check; feed these to the silver layer;
  - `quarantined`: one row per failing record, in the columns of the `quarantine` table
    (kind `invariant`, `reason` naming each failed check and what was found, `raw` = the
    record's value bytes, `state_unknown`: the offset is unknown to the fold, which never
    sees the record); append it to `quarantine`.

Write *all* rows to bronze `records` as before: the record stays in the lake, the
quarantine row says why it was kept out of silver, so nothing is dropped.

Which checks: the expectations of `expectations/records.json` whose `meta.scope` is
`record` (decidable on one row) and whose severity is `error`. They are translated from
the same JSON that Great Expectations validates, evaluated on the same derived columns
(`derive.record_columns`), so the batch path and `kraftlake quality` cannot disagree.
Undecodable records (`error` set) are not re-reported: the ingest already quarantines them
as kind `undecodable`.
"""

from __future__ import annotations

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from .derive import record_columns
from .suites import Check, checks

KIND = "invariant"


def record_level_checks(severity: str = "error") -> list[Check]:
    """The record-scope expectations of the records suite with that severity."""
    return [c for c in checks("records") if c.scope == "record" and c.severity == severity]


def failure(check: Check) -> Column:
    """Null when the row passes `check`, else its reason (a GX map expectation as Spark).

    Like GX, a null value passes every check except the null / not-null ones.
    """
    assert check.column is not None  # a record check is a column map expectation
    col = F.col(check.column)
    kw = check.kwargs
    typ = check.type
    if typ == "expect_column_values_to_be_null":
        bad = col.isNotNull()
    elif typ == "expect_column_values_to_not_be_null":
        bad = col.isNull()
    elif typ == "expect_column_values_to_be_in_set":
        bad = col.isNotNull() & ~col.isin(*kw["value_set"])
    elif typ == "expect_column_values_to_not_be_in_set":
        bad = col.isNotNull() & col.isin(*kw["value_set"])
    elif typ == "expect_column_values_to_be_between":
        bad = F.lit(False)
        if kw.get("min_value") is not None:
            bad = bad | (col < F.lit(kw["min_value"]))
        if kw.get("max_value") is not None:
            bad = bad | (col > F.lit(kw["max_value"]))
        bad = col.isNotNull() & bad
    else:
        raise ValueError(f"records.{check.name}: {typ} is not a record-level expectation")
    shown = F.coalesce(col.cast("string"), F.lit("null"))
    return F.when(bad, F.concat(F.lit(f"{check.name}: {check.column}="), shown))


def check_records(records: DataFrame) -> tuple[DataFrame, DataFrame]:
    """(good rows, quarantine rows) of one batch; see the module docstring."""
    cols = records.columns
    reasons = [failure(c) for c in record_level_checks("error")]
    flagged = record_columns(records).withColumn(
        "_dq_reason", F.concat_ws("; ", *reasons) if reasons else F.lit(""))
    flagged = flagged.withColumn("_dq_reason", F.when(
        (F.col("_dq_reason") != "") & F.col("error").isNull(), F.col("_dq_reason")))
    good = flagged.filter(F.col("_dq_reason").isNull()).select(*cols)
    bad = flagged.filter(F.col("_dq_reason").isNotNull()).select(
        "cluster_id", F.coalesce(F.col("source_file"), F.lit("")).alias("source_file"),
        F.lit(-1).cast("long").alias("byte_position"), F.col("offset").cast("long"),
        (F.col("offset") + 1).cast("long").alias("end_offset"), F.lit(KIND).alias("kind"),
        F.col("_dq_reason").alias("reason"), F.col("value").alias("raw"),
        # a record kept out of silver: the change it made (if any) is unknown, as a damaged
        # batch's would be (`jobs.increment` counts its offset as unknown)
        F.lit(True).alias("state_unknown"))
    return good, bad
