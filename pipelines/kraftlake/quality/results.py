"""A quality run's outcomes, and the `quality_results` Delta table: one row per expectation
per quality run.

Kept in the lake beside the data it judges, so the history of checks is queried like any
other table (`kraftlake sql`, Spark, DuckDB): which invariant broke, since which run, how
many rows. The schema is `schemas/tables/quality_results.json`.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

import pyarrow as pa

from ..lake.delta import Lake
from ..lake.schema import table_schema

TABLE = "quality_results"


@dataclass
class Outcome:
    """The result of one expectation in one run (one row of `quality_results`)."""

    suite: str
    expectation: str
    expectation_type: str
    column: str | None
    severity: str
    invariant: str | None
    success: bool
    element_count: int | None = None
    unexpected_count: int | None = None
    observed_value: Any = None
    unexpected_sample: list[Any] = field(default_factory=list)
    exception: str | None = None


@dataclass
class QualityRun:
    """One quality run: its outcomes in the suites' order, and where its Data Docs went."""

    run_id: str
    run_time: datetime
    outcomes: list[Outcome]
    report_dir: Path | None = None

    @property
    def failed(self) -> list[Outcome]:
        return [o for o in self.outcomes if not o.success]

    @property
    def failed_errors(self) -> list[Outcome]:
        return [o for o in self.failed if o.severity == "error"]

    @property
    def exit_code(self) -> int:
        """0 when no error-severity expectation failed, 1 otherwise (for schedulers)."""
        return 1 if self.failed_errors else 0


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
