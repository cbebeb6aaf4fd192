"""The `quality_results` Delta table: one row per expectation per quality run.

Kept in the lake beside the data it judges, so the history of checks is queried like any
other table (`kraftlake sql`, Spark, DuckDB): which invariant broke, since which run, how
many rows. The schema is `schemas/tables/quality_results.json`.
"""

from __future__ import annotations

import json

import pyarrow as pa

from ..lake.delta import Lake
from ..lake.schema import table_schema
from .runner import QualityRun

TABLE = "quality_results"


def _to_arrow(run: QualityRun) -> pa.Table:
    """The run's outcomes as rows of `quality_results`."""
    rows = [{
        "run_id": run.run_id, "run_time": run.run_time, "suite": o.suite,
        "expectation": o.expectation, "expectation_type": o.expectation_type,
        "column": o.column, "severity": o.severity, "invariant": o.invariant,
        "success": o.success, "element_count": o.element_count,
        "unexpected_count": o.unexpected_count,
        "observed_value": None if o.observed_value is None else json.dumps(o.observed_value),
        "unexpected_sample": json.dumps(o.unexpected_sample) if o.unexpected_sample else None,
        "exception": o.exception,
    } for o in run.outcomes]
    return pa.Table.from_pylist(rows, schema=table_schema(TABLE).arrow)


def append_results(lake: Lake, run: QualityRun) -> None:
    """Append once per run id (a retried write of the same run adds nothing)."""
    lake.append(TABLE, _to_arrow(run), app_id=f"kraftlake-quality:{run.run_id}", version=0)
