"""`kraftlake quality` on lakes built from real logs and the simulator: every suite passes,
results land in `quality_results` and the exit status follows error-severity failures (the
Data Docs of the same runs: test_data_docs.py). The tables' rows are read by delta-rs
(tests/lake_rows.py): a Spark query of the session costs about 0.45 CPU s.
"""

from __future__ import annotations

import json
import re
from datetime import UTC, datetime

from click.testing import CliRunner

from kraftlake.cli import main
from kraftlake.quality.suites import SUITES, checks
from tests.lake_rows import table_dicts


def test_every_suite_passes_on_real_and_simulated_lakes(good_run, real_lake):
    res, _ = good_run
    assert res.exit_code == 0, res.output
    rows = table_dicts(real_lake.path("quality_results"))
    run_ids = {r["run_id"] for r in rows}
    assert len(run_ids) == 1
    assert len(rows) == sum(len(checks(s)) for s in SUITES)
    failed = [(r["suite"], r["expectation"]) for r in rows if not r["success"]]
    # historical logs are old: freshness is the only (warning) failure
    assert failed == [("records", "records_fresh")]
    fresh = next(r for r in rows if r["expectation"] == "records_fresh")
    assert fresh["severity"] == "warning"
    assert len(json.loads(fresh["unexpected_sample"])) == len(
        {r["cluster_id"] for r in table_dicts(real_lake.path("records"), ["cluster_id"])})
    clusters = {r["cluster_id"]
                for r in table_dicts(real_lake.path("partition_current"), ["cluster_id"])}
    assert len(clusters) >= 2  # a real cluster and the simulated one were validated
    assert "0 error(s) failed, 1 warning(s) failed" in res.output
    assert re.search(r"partition_timeline\s+leader_in_isr\s+error\s+ok\s+0", res.output)


def test_error_failure_exits_1_and_is_recorded(broken_run):
    res, _, lake = broken_run
    assert res.exit_code == 1, res.output
    assert re.search(r"partition_timeline\s+leader_in_isr\s+error\s+FAIL\s+1", res.output)
    rows = table_dicts(lake.path("quality_results"))
    assert {r["suite"] for r in rows} == {"partition_timeline"}
    bad = [r for r in rows if not r["success"]]
    assert [r["expectation"] for r in bad] == ["leader_in_isr"]
    sample = json.loads(bad[0]["unexpected_sample"])
    assert sample[0]["dq_leader_violation"].startswith("leader 9999 not in ISR")
    assert bad[0]["unexpected_count"] == 1 and bad[0]["invariant"] == "10"


def test_unknown_suite_is_a_usage_error(real_lake):
    res = CliRunner().invoke(main, ["quality", "--lake", str(real_lake.root),
                                    "--suite", "nope"])
    assert res.exit_code == 2 and "unknown suite" in res.output


def test_a_run_without_data_docs_reports_what_one_with_them_does(spark, qctx, broken_run,
                                                                 tmp_path):
    """Without a report directory GX is asked for counts first and for the unexpected rows
    of the failed expectations only (runner.COUNTS, SAMPLES): every outcome, samples
    included, must be what GX reports in the one pass that renders Data Docs."""
    from tests.quality.conftest import validate

    _, _, lake = broken_run
    suites = ["partition_timeline", "records"]  # failures of either severity
    now = datetime.now(UTC)
    with_docs = validate(spark, qctx, lake, suites, now=now, max_age=60,
                         report_dir=tmp_path / "docs")
    without = validate(spark, qctx, lake, suites, now=now, max_age=60)
    assert {("partition_timeline", "leader_in_isr"), ("records", "records_fresh")} <= {
        (o.suite, o.expectation) for o in without.failed}
    assert without.outcomes == with_docs.outcomes
