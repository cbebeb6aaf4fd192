"""`kraftlake report` opened in headless Chromium: a screenshot is taken, the page's text names
the incidents and partitions the reference replay expects, the console shows no error, and
the file loads nothing from the network.
"""

from __future__ import annotations

import re
import shutil
import subprocess
from html.parser import HTMLParser
from pathlib import Path

import pytest
from click.testing import CliRunner

from kraftlake.cli import main
from tests.report.oracle import expected

CHROMIUM = Path("/usr/bin/chromium")
FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync"]
needs_chromium = pytest.mark.skipif(shutil.which("chromium") is None and not CHROMIUM.exists(),
                                    reason="chromium not installed")


def _chromium(args: list[str], tmp: Path) -> subprocess.CompletedProcess:
    profile = tmp / f"profile-{len(list(tmp.glob('profile-*')))}"
    profile.mkdir()
    return subprocess.run([str(CHROMIUM), *FLAGS, f"--user-data-dir={profile}", *args],
                          check=True, capture_output=True, text=True, timeout=180)


def open_page(path: Path, tmp: Path) -> tuple[str, list[str], Path]:
    """(rendered text, console errors, screenshot) of `path` in headless Chromium.

    Console messages come from Chromium's own log (`--enable-logging=stderr`: each console
    call is a `CONSOLE(line)` entry, uncaught exceptions included)."""
    url = path.resolve().as_uri()
    shot = tmp / f"{path.stem}.png"
    run = _chromium(["--enable-logging=stderr", "--v=0", "--virtual-time-budget=10000",
                     "--window-size=1300,2000", f"--screenshot={shot}", url], tmp)
    console = [ln for ln in run.stderr.splitlines() if "CONSOLE" in ln]
    dom = _chromium(["--virtual-time-budget=10000", "--dump-dom", url], tmp).stdout
    parser = _Text()
    parser.feed(dom)
    return re.sub(r"\s+", " ", " ".join(parser.parts)), console, shot


class _Text(HTMLParser):
    """The text a reader sees: character data outside <script> and <style>."""

    def __init__(self) -> None:
        super().__init__()
        self.parts: list[str] = []
        self._skip = 0

    def handle_starttag(self, tag: str, attrs) -> None:
        self._skip += tag in ("script", "style")

    def handle_endtag(self, tag: str) -> None:
        self._skip -= tag in ("script", "style")

    def handle_data(self, data: str) -> None:
        if not self._skip:
            self.parts.append(data)


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
