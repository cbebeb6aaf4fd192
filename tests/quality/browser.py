"""A page of the quality report opened in headless Chromium with the network off
(`tests/browser.py`), plus a probe script, added to a copy of the page beside it (relative
links unchanged), that writes into the DOM what only a loaded page knows: whether jQuery and
bootstrap-table ran, which font the status icons use and whether that font loaded, and a
colour that only Bootstrap's CSS sets.
"""

from __future__ import annotations

import html
import json
import re
from dataclasses import dataclass
from pathlib import Path

from tests.browser import dom_of, screenshot, visible_text

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


def open_offline(path: Path, tmp: Path, size: str = "1300,1800") -> Page:
    """Screenshot, console, rendered text and probe of `path`, the network off."""
    probed = path.with_name(f"{path.stem}.probe.html")
    probed.write_text(path.read_text(encoding="utf-8").replace("</body>", PROBE + "</body>"),
                      encoding="utf-8")
    try:
        shot, console = screenshot(path, tmp, size)
        dom = dom_of(probed, tmp)
    finally:
        probed.unlink()
    m = re.search(rf'<pre id="{PROBE_ID}">([^<]*)</pre>', dom)
    assert m, f"the probe did not run in {path}"
    probe = json.loads(html.unescape(m.group(1)))
    return Page(visible_text(dom.replace(m.group(0), "")), console, shot, probe)
