"""Run the suites with Great Expectations on Spark DataFrames of the lake.

One `QualityContext` holds one ephemeral GX context (in-memory stores, no files) with one
Spark data source; suites, assets and validation definitions are added once and reused, so
a long-lived process (or a test session) pays GX's set-up cost once. Per suite a checkpoint
validates the suite's frame (`derive.frame`: the table plus its derived `dq_*` columns)
and, when a report directory is given, renders the result into Data Docs.

Parameters computed at run time are passed as GX suite parameters ($PARAMETER in the JSON):
`freshness_max_age_seconds` and the volume bounds of `derive.suite_parameters`.
"""

from __future__ import annotations

import json
import os
import uuid
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from pyspark import StorageLevel
from pyspark.sql import SparkSession

from ..lake.delta import Lake
from ..lake.schema import table_schema
from . import derive, report
from .suites import SUITES, checks, gx_suite

DEFAULT_MAX_AGE_SECONDS = 24 * 3600
SAMPLE_ROWS = 5


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


class QualityContext:
    """An ephemeral GX context with the kraftlake suites, reusable across runs."""

    def __init__(self) -> None:
        os.environ.setdefault("GX_ANALYTICS_ENABLED", "False")
        import great_expectations as gx
        from great_expectations.data_context.types.base import (
            DataContextConfig,
            InMemoryStoreBackendDefaults,
            ProgressBarsConfig,
        )

        self._gx = gx
        cfg = DataContextConfig(store_backend_defaults=InMemoryStoreBackendDefaults(),
                                progress_bars=ProgressBarsConfig(globally=False),
                                analytics_enabled=False)
        self.context = gx.get_context(mode="ephemeral", project_config=cfg)
        self.source = self.context.data_sources.add_spark("kraftlake")
        self._vds: dict[str, Any] = {}
        self._checkpoints: dict[tuple[str, str | None], Any] = {}

    def validation_definition(self, suite: str) -> Any:
        if suite not in self._vds:
            gx = self._gx
            asset = self.source.add_dataframe_asset(suite)
            batch_def = asset.add_batch_definition_whole_dataframe(suite)
            s = self.context.suites.add(gx_suite(suite))
            self._vds[suite] = self.context.validation_definitions.add(
                gx.ValidationDefinition(name=suite, data=batch_def, suite=s))
        return self._vds[suite]

    def checkpoint(self, suite: str, report_dir: Path | None) -> Any:
        site = report.ensure_site(self.context, report_dir) if report_dir else None
        key = (suite, site)
        if key not in self._checkpoints:
            from great_expectations.checkpoint import UpdateDataDocsAction

            actions = [UpdateDataDocsAction(name="data_docs", site_names=[site])] if site else []
            keys = list(table_schema(suite).key)
            fmt = {"result_format": "SUMMARY", "partial_unexpected_count": SAMPLE_ROWS,
                   "unexpected_index_column_names": keys}
            name = f"{suite}@{site or 'nodocs'}"
            self._checkpoints[key] = self.context.checkpoints.add(self._gx.Checkpoint(
                name=name, validation_definitions=[self.validation_definition(suite)],
                actions=actions, result_format=fmt))
        return self._checkpoints[key]


_DEFAULT: QualityContext | None = None


def _default_context() -> QualityContext:
    """The process-wide context (created on first use)."""
    global _DEFAULT
    if _DEFAULT is None:
        _DEFAULT = QualityContext()
    return _DEFAULT


def _jsonable(v: Any) -> Any:
    return json.loads(json.dumps(v, default=str))


def _outcome(suite: str, r: Any) -> Outcome:
    cfg = r.expectation_config
    meta = cfg.meta or {}
    res = r.result or {}
    sample = res.get("partial_unexpected_index_list") or res.get("partial_unexpected_list") or []
    exc = None
    info = r.exception_info or {}
    if isinstance(info, dict) and info.get("raised_exception"):
        exc = str(info.get("exception_message"))
    elif isinstance(info, dict):
        msgs = [str(v.get("exception_message")) for v in info.values()
                if isinstance(v, dict) and v.get("raised_exception")]
        exc = "; ".join(msgs) or None
    observed = res.get("observed_value")
    return Outcome(
        suite=suite, expectation=meta.get("name", cfg.type), expectation_type=cfg.type,
        column=cfg.kwargs.get("column"), severity=meta.get("severity", "error"),
        invariant=meta.get("invariant"), success=bool(r.success),
        element_count=res.get("element_count"), unexpected_count=res.get("unexpected_count"),
        observed_value=_jsonable(observed) if observed is not None else None,
        unexpected_sample=_jsonable(sample[:SAMPLE_ROWS]), exception=exc)


def run_suite(spark: SparkSession, lake: Lake, suite: str, *, run_id: Any, now: datetime,
              max_age_seconds: float, report_dir: Path | None,
              qctx: QualityContext) -> list[Outcome]:
    """Validate one suite's frame; outcomes in the suite's order.

    `run_id` is a GX `RunIdentifier` or a run name.
    """
    if isinstance(run_id, str):
        from great_expectations.core.run_identifier import RunIdentifier

        run_id = RunIdentifier(run_name=run_id, run_time=datetime.now(UTC))
    df = derive.frame(spark, lake, suite, now).persist(StorageLevel.MEMORY_AND_DISK)
    try:
        params: dict[str, Any] = {"freshness_max_age_seconds": float(max_age_seconds),
                                  **derive.suite_parameters(spark, lake, suite)}
        cp = qctx.checkpoint(suite, report_dir)
        result = cp.run(batch_parameters={"dataframe": df}, expectation_parameters=params,
                        run_id=run_id)
    finally:
        df.unpersist()
    outcomes: list[Outcome] = []
    for vr in result.run_results.values():
        outcomes.extend(_outcome(suite, r) for r in vr.results)
    order = {c.name: i for i, c in enumerate(checks(suite))}
    return sorted(outcomes, key=lambda o: order.get(o.expectation, len(order)))


def run_quality(spark: SparkSession, lake: Lake, *, suites: list[str] | None = None,
                report_dir: str | Path | None = None, now: datetime | None = None,
                max_age_seconds: float = DEFAULT_MAX_AGE_SECONDS,
                qctx: QualityContext | None = None, run_id: str | None = None,
                write_results: bool = True) -> QualityRun:
    """Run `suites` (default all) over `lake`; append the outcomes to `quality_results`.

    `now` is the reference time of freshness (default: the current time).
    """
    from great_expectations.core.run_identifier import RunIdentifier

    qctx = qctx or _default_context()
    run_time = datetime.now(UTC).replace(microsecond=0)
    now = now or run_time
    rid = run_id or f"{run_time:%Y%m%dT%H%M%SZ}-{uuid.uuid4().hex[:8]}"
    gx_run = RunIdentifier(run_name=rid, run_time=run_time)
    rdir = Path(report_dir).resolve() if report_dir else None
    outcomes: list[Outcome] = []
    for suite in suites or SUITES:
        if suite not in SUITES:
            raise KeyError(f"unknown suite {suite!r} (known: {', '.join(SUITES)})")
        outcomes += run_suite(spark, lake, suite, run_id=gx_run, now=now,
                              max_age_seconds=max_age_seconds, report_dir=rdir, qctx=qctx)
    run = QualityRun(rid, run_time, outcomes, rdir)
    if rdir is not None:
        report.publish(run)
    if write_results:
        from .results import append_results

        append_results(lake, run)
    return run
