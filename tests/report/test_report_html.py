"""`kraftlake report` opened in headless Chromium: a screenshot is taken, the page's text names
the incidents and partitions the reference replay expects, the console shows no error, and
the file loads nothing from the network.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from click.testing import CliRunner

from kraftlake.cli import main
from tests.browser import dom_of, needs_chromium, screenshot, visible_text
from tests.report.oracle import expected


def open_page(path: Path, tmp: Path) -> tuple[str, list[str], Path]:
    """(rendered text, console lines, screenshot) of `path` in headless Chromium."""
    shot, console = screenshot(path, tmp, "1300,2000")
    return visible_text(dom_of(path, tmp)), console, shot


@pytest.fixture(scope="module")
def report(scenario_lakes, tmp_path_factory) -> tuple[Path, Path]:
    """(report of the mixed scenario written by the CLI, its log directory)."""
    log_dir, lake = scenario_lakes["mixed"]
    out = tmp_path_factory.mktemp("report") / "report.html"
    res = CliRunner().invoke(main, ["report", "--lake", str(lake), "--out", str(out),
                                    "--master", "local[2]"])
    assert res.exit_code == 0, res.output
    assert f"report: {out}" in res.output
    return out, log_dir


def test_report_is_self_contained(report) -> None:
    page = report[0].read_text()
    assert not re.search(r"<(script|link|img|iframe)[^>]+(src|href)=['\"]?(https?:)?//", page)
    assert page.count("<script") >= 2 and "Plotly.newPlot" in page


@needs_chromium
def test_report_in_chromium_names_incidents_and_partitions(report, tmp_path) -> None:
    out, log_dir = report
    ex = expected(log_dir)
    text, console, shot = open_page(out, tmp_path)
    assert shot.stat().st_size > 50_000
    assert console == [], console
    assert f"Incidents ({len(ex.incidents)})" in text
    for inc in ex.incidents:
        assert f"incident-{inc['start_offset']}" in text
        for p in inc["data_loss_partitions"]:
            assert p in text
    unclean = {f"{e[3]}:{e[4]}" for e in ex.events if "unclean_election" in e[5]}
    assert unclean and all(p in text for p in unclean)
    assert "broker 2: controlled_shutdown" in text  # the rolling restart's first broker
    # the plotly charts rendered: their SVG text is in the DOM
    assert "partitions in trouble, by kind" in text


@needs_chromium
def test_console_errors_are_seen(report, tmp_path) -> None:
    """The console check above can fail: a page with a script error is caught."""
    bad = tmp_path / "bad.html"
    bad.write_text(report[0].read_text().replace(
        "</body>", "<script>Plotly.newPlot('nowhere-' + undefinedThing, []);</script></body>"))
    _, console, _ = open_page(bad, tmp_path)
    assert any("undefinedThing" in c for c in console), console


def test_partition_option(scenario_lakes, tmp_path) -> None:
    _, lake = scenario_lakes["broker-crash"]
    out = tmp_path / "r.html"
    res = CliRunner().invoke(main, ["report", "--lake", str(lake), "--out", str(out),
                                    "--partition", "topic-0000:1", "--since", "2025-01-01"])
    assert res.exit_code == 0, res.output
    page = out.read_text()
    assert "topic-0000:1" in page and "topic-0000:2" not in page
    res = CliRunner().invoke(main, ["report", "--lake", str(lake), "--out", str(out),
                                    "--partition", "nope"])
    assert res.exit_code == 2 and "not topic:N" in res.output


def test_the_time_range_runs_to_the_newest_record(report, scenario_lakes) -> None:
    """Not to the last partition or broker change: the heartbeats after it say the cluster
    was watched until then."""
    from tests.lake_rows import table_dicts

    _log, lake = scenario_lakes["mixed"]
    newest = max(r["timestamp"] for r in table_dicts(lake / "records", ["timestamp", "source"])
                 if r["source"] == "log")
    changes = max(r["timestamp"] for r in table_dicts(lake / "partition_events", ["timestamp"]))
    assert newest > changes
    assert f" .. {newest:%Y-%m-%d %H:%M:%S}" in report[0].read_text()
