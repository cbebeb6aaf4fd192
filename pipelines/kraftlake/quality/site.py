"""Great Expectations Data Docs: where the HTML report of a quality run goes.

A Data Docs *site* is a directory GX renders into (an index page listing every validation,
one page per suite and per validation result). Each `--report DIR` becomes its own site in
the run's (ephemeral) GX context, so nothing is written anywhere else - no
`gx/` project directory, no state in the repository.
"""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any


def _site_name(report_dir: Path) -> str:
    """A stable site name for a report directory (GX keys sites by name)."""
    digest = hashlib.sha1(str(Path(report_dir).resolve()).encode()).hexdigest()[:10]
    return f"kraftlake_{digest}"


def _site_config(report_dir: Path) -> dict[str, Any]:
    """Filesystem site config with kraftlake's renderers (`datadocs`: verdicts as text)."""
    from .datadocs import site_config

    return {
        "class_name": "SiteBuilder",
        "store_backend": {"class_name": "TupleFilesystemStoreBackend",
                          "base_directory": str(Path(report_dir).resolve())},
        **site_config(),
    }


def ensure_site(context: Any, report_dir: Path) -> str:
    """Register the report directory as a Data Docs site of `context` (once); its name."""
    name = _site_name(report_dir)
    Path(report_dir).mkdir(parents=True, exist_ok=True)
    if name not in context.get_site_names():
        context.add_data_docs_site(name, _site_config(report_dir))
    return name


SUMMARY_PAGE = "kraftlake.html"


def _validation_pages(report_dir: Path, suite: str, run_id: str) -> list[Path]:
    """GX's validation-result pages of one suite in one run (server-rendered HTML)."""
    base = Path(report_dir).resolve() / "validations" / suite / run_id
    return sorted(base.rglob("*.html")) if base.is_dir() else []


def publish(run: Any) -> Path:
    """Finish the run's report directory: GX's pages made self-contained
    (`offline.make_offline`) and kraftlake's summary page written; the summary's path."""
    from .offline import make_offline

    make_offline(run.report_dir)
    return write_summary(run)


def write_summary(run: Any) -> Path:
    """A landing page for the run: every suite with its verdict, linking GX's pages.

    It is plain HTML with its style inline, one page to open (or mail) first; GX's index
    lists the same validations with its own search and filters.
    """
    from html import escape

    from .suites import verdict

    rdir: Path = run.report_dir
    rows = []
    suites: dict[str, list[Any]] = {}
    for o in run.outcomes:
        suites.setdefault(o.suite, []).append(o)
    for suite, outs in suites.items():
        failed = [o for o in outs if not o.success]
        status = verdict(o.severity for o in failed)
        pages = _validation_pages(rdir, suite, run.run_id)
        link = (f'<a href="{escape(str(pages[0].relative_to(rdir)))}">{escape(suite)}</a>'
                if pages else escape(suite))
        detail = "".join(
            f"<li>[{escape(o.severity)}] {escape(o.expectation)}"
            f"{'' if o.unexpected_count is None else f' ({o.unexpected_count} unexpected)'}"
            f"</li>" for o in failed)
        css = status.replace(" ", "-")
        rows.append(f'<tr class="{css}"><td>{link}</td><td>{status}</td>'
                    f"<td>{len(outs) - len(failed)} of {len(outs)} passed</td>"
                    f"<td><ul>{detail}</ul></td></tr>")
    overall = verdict(o.severity for o in run.failed)
    page = f"""<!DOCTYPE html>
<html><head><meta charset="utf-8"><title>kraftlake quality {escape(run.run_id)}</title>
<style>body{{font-family:sans-serif;margin:2em}}table{{border-collapse:collapse}}
td,th{{border:1px solid #999;padding:4px 8px;vertical-align:top}}
tr.failed td:nth-child(2){{color:#b00;font-weight:bold}}
tr.passed-with-warnings td:nth-child(2){{color:#a60;font-weight:bold}}
tr.passed td:nth-child(2){{color:#070;font-weight:bold}}</style></head>
<body><h1>kraftlake data quality</h1>
<p>Run <b>{escape(run.run_id)}</b> at {escape(run.run_time.isoformat())}: <b>{overall}</b>
(exit status {run.exit_code})</p>
<table><tr><th>suite</th><th>result</th><th>expectations</th><th>failed</th></tr>
{''.join(rows)}</table>
<p>Great Expectations Data Docs: <a href="index.html">index</a>; the suite links above open
its validation pages. Every page opens offline.</p></body></html>
"""
    out = rdir / SUMMARY_PAGE
    out.write_text(page)
    return out
