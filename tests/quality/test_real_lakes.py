"""`kraftlake quality` on lakes built from real logs and the simulator: every suite passes,
results land in `quality_results`, the exit status follows error-severity failures, and the
Data Docs report opens in a real headless Chromium.
"""

from __future__ import annotations

import html
import json
import re
import shutil
import subprocess
from pathlib import Path

import pytest
from click.testing import CliRunner

from kraftlake.cli import main
from kraftlake.quality.suites import SUITES, checks
from tests.quality import crafted as C

CHROMIUM = Path("/usr/bin/chromium")
FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking"]


@pytest.fixture(scope="module")
def good_run(spark, real_lake, tmp_path_factory):
    """`kraftlake quality --lake <real lake> --report DIR` (all suites)."""
    report = tmp_path_factory.mktemp("report_good")
    res = CliRunner().invoke(main, ["quality", "--lake", str(real_lake.root),
                                    "--report", str(report)])
    return res, report


@pytest.fixture(scope="module")
def broken_run(spark, real_lake, tmp_path_factory):
    """The same command on a copy of the lake where one timeline state has leader 9999."""
    root = tmp_path_factory.mktemp("broken")

    def edit(t):
        i = C.find_row(t, lambda r: r["valid_to_offset"] is not None)
        return C.set_cell(t, i, "leader", 9999)

    lake = C.copy_lake(real_lake, root / "lake", {"partition_timeline": edit})
    report = root / "report"
    res = CliRunner().invoke(main, ["quality", "--lake", str(lake.root), "--report",
                                    str(report), "--suite", "partition_timeline"])
    return res, report, lake


def test_every_suite_passes_on_real_and_simulated_lakes(good_run, real_lake):
    res, _ = good_run
    assert res.exit_code == 0, res.output
    rows = real_lake.read_arrow("quality_results").to_pylist()
    run_ids = {r["run_id"] for r in rows}
    assert len(run_ids) == 1
    assert len(rows) == sum(len(checks(s)) for s in SUITES)
    failed = [(r["suite"], r["expectation"]) for r in rows if not r["success"]]
    # historical logs are old: freshness is the only (warning) failure
    assert failed == [("records", "records_fresh")]
    fresh = next(r for r in rows if r["expectation"] == "records_fresh")
    assert fresh["severity"] == "warning"
    assert len(json.loads(fresh["unexpected_sample"])) == len(
        {c for c in real_lake.read_arrow("records", columns=["cluster_id"])
         .column("cluster_id").to_pylist()})
    clusters = set(real_lake.read_arrow("partition_current", columns=["cluster_id"])
                   .column("cluster_id").to_pylist())
    assert len(clusters) >= 2  # a real cluster and the simulated one were validated
    assert "0 error(s) failed, 1 warning(s) failed" in res.output
    assert re.search(r"partition_timeline\s+leader_in_isr\s+error\s+ok\s+0", res.output)


def test_error_failure_exits_1_and_is_recorded(broken_run):
    res, _, lake = broken_run
    assert res.exit_code == 1, res.output
    assert re.search(r"partition_timeline\s+leader_in_isr\s+error\s+FAIL\s+1", res.output)
    rows = lake.read_arrow("quality_results").to_pylist()
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


def _page_text(path: Path, shot: Path) -> str:
    """Open `path` in headless Chromium: take a screenshot, return the rendered DOM's text."""
    assert CHROMIUM.exists(), "install Debian package chromium (/usr/bin/chromium)"
    url = path.resolve().as_uri()
    subprocess.run([str(CHROMIUM), *FLAGS, f"--screenshot={shot}", "--window-size=1280,1600",
                    url], check=True, capture_output=True, timeout=120)
    assert shot.is_file() and shot.stat().st_size > 5000
    dom = subprocess.run([str(CHROMIUM), *FLAGS, "--dump-dom", url], check=True,
                         capture_output=True, text=True, timeout=120).stdout
    dom = re.sub(r"<(script|style)[^>]*>.*?</\1>", " ", dom, flags=re.S)
    return html.unescape(re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", dom)))


@pytest.mark.skipif(shutil.which("chromium") is None and not CHROMIUM.exists(),
                    reason="chromium not installed")
def test_report_opens_in_chromium(good_run, broken_run, tmp_path):
    _, good = good_run
    text = _page_text(good / "kraftlake.html", tmp_path / "summary.png")
    for suite in SUITES:
        assert re.search(rf"\b{suite}\b (PASSED|WARNING)", text), (suite, text[:2000])
    assert "records WARNING 8 of 9 passed [warning] records_fresh" in text
    assert "PASSED" in text and "FAILED" not in text
    # GX's own validation page of a suite (server-rendered Data Docs), reached from the summary
    page = next((good / "validations" / "partition_timeline").rglob("*.html"))
    gx_text = _page_text(page, tmp_path / "gx_timeline.png")
    assert "Expectation Suite: partition_timeline" in gx_text
    assert "Status: Succeeded" in gx_text
    assert "[error] The leader is -1 or a member of the ISR." in gx_text

    _, bad, _ = broken_run
    text = _page_text(bad / "kraftlake.html", tmp_path / "broken.png")
    assert "partition_timeline FAILED 9 of 10 passed [error] leader_in_isr (1 unexpected)" in text
    page = next((bad / "validations" / "partition_timeline").rglob("*.html"))
    gx_text = _page_text(page, tmp_path / "gx_broken.png")
    assert "Status: Failed" in gx_text and "Unsuccessful Expectations 1" in gx_text
    assert "leader 9999 not in ISR" in gx_text
    assert (bad / "index.html").is_file()  # GX's index is rendered too
