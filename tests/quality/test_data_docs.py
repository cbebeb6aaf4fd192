"""The Data Docs of `kraftlake quality --report DIR` open offline and say what the terminal says.

GX's pages link their CSS, scripts and icon font from public CDNs; kraftlake vendors them and
relinks every page (`quality.offline`). The pages are opened in a real headless Chromium with
the network off (tests/quality/browser.py): the index's table is filled by bootstrap-table,
Bootstrap's CSS and the icon font are applied, every expectation's status is text, a
warning-only run reads "passed with warnings" (its exit status is 0), and the freshness
line counts clusters, not rows. The runs are those of test_real_lakes.py (session fixtures).
"""

from __future__ import annotations

import re
from pathlib import Path
from urllib.parse import unquote

import great_expectations
import pytest

from kraftlake.quality.offline import ASSETS, GX_IMAGES, LOGOS, VENDORED, remote_references
from kraftlake.quality.suites import SUITES, checks
from tests.browser import needs_chromium
from tests.quality.browser import Page, open_offline

GX_VIEW = Path(great_expectations.__file__).parent / "render" / "view"
# a status cell followed by its expectation's description ("[error] ..." / "[warning] ...")
ROW = re.compile(r"\b(passed|failed|warning|exception) \[(error|warning)\] ")
LOCAL_ASSET = re.compile(r"<(?:script|link|img)\b[^>]*?\b(?:src|href)=\"([^\"]+)\"")
BOOTSTRAP_ALERT_SECONDARY = "rgb(226, 227, 229)"  # .alert-secondary in bootstrap 4.3.1


def _pages(report: Path) -> list[Path]:
    return sorted(report.rglob("*.html"))


def _validation_page(report: Path, suite: str) -> Path:
    pages = sorted((report / "validations" / suite).rglob("*.html"))
    assert len(pages) == 1, pages
    return pages[0]


def _assert_styled_offline(page: Page) -> None:
    """Scripts ran, Bootstrap's CSS and the vendored icon font are in use, nothing failed."""
    assert page.probe["jquery"] == "function", page.probe
    assert page.probe["bootstrap_table"] == "function", page.probe
    assert page.probe["alert_background"] == BOOTSTRAP_ALERT_SECONDARY, page.probe
    assert "Font Awesome 6 Free" in page.probe["icon_font"], page.probe
    assert page.probe["icon_fonts_loaded"] >= 1, page.probe
    assert page.console == [], page.console
    assert page.screenshot.stat().st_size > 50_000


# ------------------------------------------------------------------ without Spark


def test_every_cdn_asset_of_gx_is_vendored() -> None:
    """Each address GX's installed templates load from is mapped to a shipped file (a GX
    upgrade that links something new fails here first)."""
    found = set()
    for tpl in [*(GX_VIEW / "templates").glob("*.j2"), *(GX_VIEW / "static").rglob("*.css")]:
        for ref in remote_references(tpl.read_text()):
            found.add(re.sub(r"^.*?(?=https?:|//)", "", ref))
    assert len(found) >= 10, f"the scan is broken: {found}"
    assert sorted(found - set(ASSETS) - {GX_IMAGES + name for name in LOGOS}) == []
    for target in ASSETS.values():
        assert (VENDORED / target).is_file(), target


def test_vendored_css_finds_its_fonts() -> None:
    """Font Awesome's CSS names its webfonts relative to itself; they are shipped."""
    for css in VENDORED.rglob("*.css"):
        for ref in re.findall(r"url\(\s*['\"]?([^'\")]+)", css.read_text()):
            if not ref.startswith("data:"):
                assert (css.parent / ref.split("?")[0].split("#")[0]).is_file(), (css, ref)


# ------------------------------------------------------------------ the runs' pages


def test_pages_reference_nothing_remote_and_every_local_asset_exists(good_run, broken_run):
    for report in (good_run[1], broken_run[1]):
        pages = _pages(report)
        assert any(p.name == "index.html" for p in pages) and len(pages) >= 3
        for page in pages:
            text = page.read_text()
            assert remote_references(text) == [], page
            for ref in LOCAL_ASSET.findall(text):
                assert (page.parent / unquote(ref.split("?")[0])).is_file(), (page, ref)


def test_terminal_states_the_verdict(good_run, broken_run):
    res, _ = good_run
    assert res.exit_code == 0
    assert "0 error(s) failed, 1 warning(s) failed: passed with warnings" in res.output
    res, _, _ = broken_run
    assert res.exit_code == 1
    assert "1 error(s) failed, 0 warning(s) failed: failed" in res.output


@needs_chromium
def test_index_offline_lists_every_suite_with_its_verdict(good_run, tmp_path):
    _, report = good_run
    page = open_offline(report / "index.html", tmp_path)
    _assert_styled_offline(page)
    # bootstrap-table built the rows from the page's data: one per suite, verdict as text
    rows = re.findall(r"(passed with warnings|passed|failed) \d{4}-\d\d-\d\d [\d:]+ UTC "
                      r"\S+ (\w+) ", page.text)  # verdict, run time, run name, asset (suite)
    assert sorted((suite, v) for v, suite in rows) == sorted(
        [(s, "passed with warnings" if s == "records" else "passed") for s in SUITES]), page.text
    assert "failed" not in page.text.lower()


@needs_chromium
def test_warning_only_validation_page_reads_passed_with_warnings(good_run, real_lake, tmp_path):
    _, report = good_run
    page = open_offline(_validation_page(report, "records"), tmp_path)
    _assert_styled_offline(page)
    assert "Status: Passed with warnings" in page.text and "Status: Failed" not in page.text
    rows = ROW.findall(page.text)
    assert len(rows) == len(checks("records")), page.text
    assert [s for s, _ in rows].count("warning") == 1
    assert all(s == "passed" for s, sev in rows if s != "warning")
    assert "warning [warning] Freshness:" in page.text
    clusters = len(set(real_lake.read_arrow("records", columns=["cluster_id"])
                       .column("cluster_id").to_pylist()))
    assert (f"{clusters} of {clusters} clusters have their newest record older than the "
            f"allowed 86400 seconds") in page.text
    assert "total rows" not in page.text


@needs_chromium
def test_passing_validation_page(good_run, tmp_path):
    _, report = good_run
    page = open_offline(_validation_page(report, "partition_timeline"), tmp_path)
    _assert_styled_offline(page)
    assert "Expectation Suite: partition_timeline" in page.text
    assert "Status: Passed " in page.text
    assert "passed [error] The leader is -1 or a member of the ISR." in page.text
    assert {s for s, _ in ROW.findall(page.text)} == {"passed"}


@needs_chromium
def test_error_failure_reads_failed_everywhere(broken_run, tmp_path):
    _, report, _ = broken_run
    page = open_offline(_validation_page(report, "partition_timeline"), tmp_path)
    _assert_styled_offline(page)
    assert "Status: Failed" in page.text and "Unsuccessful Expectations 1" in page.text
    assert "failed [error] The leader is -1 or a member of the ISR." in page.text
    assert "leader 9999 not in ISR" in page.text
    index = open_offline(report / "index.html", tmp_path)
    assert re.search(r"\bfailed \d{4}-\d\d-\d\d ", index.text), index.text


@pytest.mark.parametrize("which", ["good", "broken"])
@needs_chromium
def test_summary_page_offline(which, good_run, broken_run, tmp_path):
    report = good_run[1] if which == "good" else broken_run[1]
    page = open_offline(report / "kraftlake.html", tmp_path, size="1300,900")
    assert page.console == []
    if which == "good":
        assert "passed with warnings (exit status 0)" in page.text
        assert "records passed with warnings 8 of 9 passed [warning] records_fresh" in page.text
        for suite in SUITES:
            assert re.search(rf"\b{suite} passed\b", page.text), suite
    else:
        assert "failed (exit status 1)" in page.text
        assert ("partition_timeline failed 9 of 10 passed [error] leader_in_isr "
                "(1 unexpected)") in page.text
