"""Data Docs that open without a network: GX's CDN assets, vendored and linked relatively.

GX's page templates load Bootstrap, bootstrap-table, jQuery, Popper, bootstrap-datepicker,
bootstrap-dark, Font Awesome and Vega from public CDNs, and its logo from S3; its templates
cannot be overridden (a site's custom views are searched after GX's own). Offline - a
scheduled job's host, an air-gapped site, a report mailed as a zip - the index page showed
no results and the validation pages no styling and no status. So after GX has rendered a
site, `make_offline` copies the pinned copies shipped in `datadocs_static/` (see its
README.md for versions, sources and licences) into the site's `static/vendor/` and points
every page's references at them by relative path. A reference to an address that is not in
`ASSETS` is left alone and reported by `remote_references` (the tests require none).
"""

from __future__ import annotations

import os
import re
import shutil
from pathlib import Path

VENDORED = Path(__file__).with_name("datadocs_static")
VENDOR_DIR = "static/vendor"

# CDN address in GX's templates -> file under datadocs_static/ (GX 1.24's templates)
ASSETS: dict[str, str] = {
    "https://maxcdn.bootstrapcdn.com/bootstrap/4.3.1/css/bootstrap.min.css":
        "bootstrap@4.3.1/bootstrap.min.css",
    "https://stackpath.bootstrapcdn.com/bootstrap/4.3.1/js/bootstrap.min.js":
        "bootstrap@4.3.1/bootstrap.min.js",
    "https://unpkg.com/bootstrap-table@1.19.1/dist/bootstrap-table.min.css":
        "bootstrap-table@1.19.1/bootstrap-table.min.css",
    "https://unpkg.com/bootstrap-table@1.19.1/dist/bootstrap-table.min.js":
        "bootstrap-table@1.19.1/bootstrap-table.min.js",
    "https://unpkg.com/bootstrap-table@1.19.1/dist/extensions/filter-control/"
    "bootstrap-table-filter-control.min.js":
        "bootstrap-table@1.19.1/bootstrap-table-filter-control.min.js",
    "https://unpkg.com/bootstrap-table@1.19.0/dist/extensions/filter-control/"
    "bootstrap-table-filter-control.min.css":
        "bootstrap-table@1.19.0/bootstrap-table-filter-control.min.css",
    "https://unpkg.com/bootstrap-table@1.19.0/dist/extensions/filter-control/"
    "bootstrap-table-filter-control.css":
        "bootstrap-table@1.19.0/bootstrap-table-filter-control.css",
    "https://cdnjs.cloudflare.com/ajax/libs/bootstrap-datepicker/1.9.0/css/"
    "bootstrap-datepicker.min.css":
        "bootstrap-datepicker@1.9.0/bootstrap-datepicker.min.css",
    "https://cdnjs.cloudflare.com/ajax/libs/bootstrap-datepicker/1.9.0/js/"
    "bootstrap-datepicker.min.js":
        "bootstrap-datepicker@1.9.0/bootstrap-datepicker.min.js",
    "https://cdn.jsdelivr.net/npm/@forevolve/bootstrap-dark@1.1.0/dist/css/"
    "bootstrap-prefers-dark.css":
        "bootstrap-dark@1.1.0/bootstrap-prefers-dark.min.css",
    "https://cdnjs.cloudflare.com/ajax/libs/font-awesome/6.6.0/css/all.min.css":
        "fontawesome-free@6.6.0/css/all.min.css",
    "https://code.jquery.com/jquery-3.7.1.min.js": "jquery@3.7.1/jquery.min.js",
    "https://cdnjs.cloudflare.com/ajax/libs/popper.js/1.12.9/umd/popper.min.js":
        "popper.js@1.12.9/popper.min.js",
    # the CDN serves the newest 5.x / 6.x; these are the newest when vendored
    "https://cdn.jsdelivr.net/npm/vega@5": "vega@5.33.1/vega.min.js",
    "https://cdn.jsdelivr.net/npm/vega-lite@5": "vega-lite@5.23.0/vega-lite.min.js",
    "https://cdn.jsdelivr.net/npm/vega-embed@6": "vega-embed@6.29.0/vega-embed.min.js",
}
# GX's logo on S3 -> the logo GX itself copies into every site's static/images/
GX_IMAGES = "https://great-expectations-web-assets.s3.us-east-2.amazonaws.com/"
LOGOS = {"logo-long.png": "logo-long.png", "full_logo_dark.png": "logo-long.png"}

# an address in an attribute that loads something, or in a CSS url()
_REMOTE = re.compile(r"""(?:<(?:script|link|img|iframe|source)\b[^>]*?\b(?:src|href)\s*=\s*|"""
                     r"""url\(\s*)["']?(https?:)?//[^"')\s>]+""", re.I)
# a path into the site's static/ as GX writes it: GX counts the "../" per template and gets
# the favicon of validation pages one level short
_STATIC = re.compile(r"""(["'(])(?:\./|(?:\.\./)+)static/""")
# integrity/crossorigin name the CDN copy; a file:// page cannot make a CORS request
_SRI = re.compile(r"""\s+(?:integrity|crossorigin)="[^"]*\"""")


def _rewrite(page: str, rel: str) -> str:
    """`page` with every known CDN address replaced by its path relative to the page, and
    every path into the site's static/ made relative to the page's own depth."""
    page = _STATIC.sub(lambda m: f"{m.group(1)}{rel}/static/", page)
    for url, target in ASSETS.items():
        page = page.replace(f'"{url}"', f'"{rel}/{VENDOR_DIR}/{target}"')
    for name, local in LOGOS.items():
        page = re.sub(re.escape(GX_IMAGES + name) + r"(\?[^\"')]*)?",
                      f"{rel}/static/images/{local}", page)
    return _SRI.sub("", page)


def make_offline(site: Path) -> list[Path]:
    """Vendor the assets into `site` and relink every HTML page of it; the pages changed."""
    site = Path(site)
    dest = site / VENDOR_DIR
    shutil.copytree(VENDORED, dest, ignore=shutil.ignore_patterns("README.md"),
                    dirs_exist_ok=True)
    changed = []
    for html in sorted(site.rglob("*.html")):
        text = html.read_text(encoding="utf-8")
        rel = os.path.relpath(site, html.parent).replace(os.sep, "/")
        new = _rewrite(text, rel)
        if new != text:
            html.write_text(new, encoding="utf-8")
            changed.append(html)
    return changed


def remote_references(page: str) -> list[str]:
    """The network addresses `page` would load something from (links to follow excluded)."""
    return [m.group(0) for m in _REMOTE.finditer(page)]
