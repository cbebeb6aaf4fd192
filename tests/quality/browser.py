"""A page of the quality report opened in a real headless Chromium with the network off.

The approach of tests/report/test_report_html.py (Debian's /usr/bin/chromium, a fresh profile
per run, `--screenshot` and `--dump-dom` with a virtual-time budget, console messages from
Chromium's own log), plus: every host name resolves to nothing and every request goes to a
proxy on a closed port, so only what the report directory holds can load. A probe script,
added to a copy of the page beside it (relative links unchanged), writes into the DOM what
only a loaded page knows: whether jQuery and bootstrap-table ran, which font the status
icons use and whether that font loaded, and a colour that only Bootstrap's CSS sets.
"""

from __future__ import annotations

import html
import json
import re
import shutil
import subprocess
from dataclasses import dataclass
from html.parser import HTMLParser
from pathlib import Path

import pytest

CHROMIUM = Path("/usr/bin/chromium")
FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync",
         # the network off: no name resolves, every request would go to a closed port
         "--proxy-server=127.0.0.1:9", "--host-resolver-rules=MAP * ~NOTFOUND",
         "--virtual-time-budget=10000"]
needs_chromium = pytest.mark.skipif(shutil.which("chromium") is None and not CHROMIUM.exists(),
                                    reason="chromium not installed (test.sh installs it as root)")

PROBE_ID = "kraftlake-probe"
PROBE = """<script>
window.addEventListener('load', function () {
  document.fonts.ready.then(function () {
    var icon = document.querySelector('i.fas');
    var alert = document.querySelector('.alert-secondary');
    var loaded = Array.from(document.fonts).filter(function (f) {
      return f.family.indexOf('Font Awesome') >= 0 && f.status === 'loaded'; });
    var p = document.createElement('pre');
    p.id = '@ID@';
    p.textContent = JSON.stringify({
      jquery: typeof window.jQuery,
      bootstrap_table: typeof (window.jQuery && window.jQuery.fn.bootstrapTable),
      icon_font: icon ? getComputedStyle(icon).fontFamily : null,
      icon_fonts_loaded: loaded.length,
      alert_background: alert ? getComputedStyle(alert).backgroundColor : null
    });
    document.body.appendChild(p);
  });
});
</script>""".replace("@ID@", PROBE_ID)


@dataclass
class Page:
    text: str  # what a reader sees (character data outside <script> and <style>)
    console: list[str]  # Chromium's CONSOLE log lines
    screenshot: Path
    probe: dict


def _chromium(args: list[str], tmp: Path) -> subprocess.CompletedProcess:
    profile = tmp / f"profile-{len(list(tmp.glob('profile-*')))}"
    profile.mkdir()
    return subprocess.run([str(CHROMIUM), *FLAGS, f"--user-data-dir={profile}", *args],
                          check=True, capture_output=True, text=True, timeout=180)


class _Text(HTMLParser):
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


def open_offline(path: Path, tmp: Path, size: str = "1300,1800") -> Page:
    """Screenshot, console, rendered text and probe of `path`, the network off."""
    probed = path.with_name(f"{path.stem}.probe.html")
    probed.write_text(path.read_text(encoding="utf-8").replace("</body>", PROBE + "</body>"),
                      encoding="utf-8")
    try:
        shot = tmp / f"{path.stem}.png"
        run = _chromium(["--enable-logging=stderr", "--v=0", f"--window-size={size}",
                         f"--screenshot={shot}", path.resolve().as_uri()], tmp)
        console = [ln for ln in run.stderr.splitlines() if "CONSOLE" in ln]
        dom = _chromium(["--dump-dom", probed.resolve().as_uri()], tmp).stdout
    finally:
        probed.unlink()
    m = re.search(rf'<pre id="{PROBE_ID}">([^<]*)</pre>', dom)
    assert m, f"the probe did not run in {path}"
    probe = json.loads(html.unescape(m.group(1)))
    dom = dom.replace(m.group(0), "")
    parser = _Text()
    parser.feed(dom)
    return Page(re.sub(r"\s+", " ", " ".join(parser.parts)), console, shot, probe)
