"""A page opened in a real headless Chromium with the network off, for the tests of the
HTML kraftlake writes (the incident report, the Data Docs).

The `chromium` on PATH (Debian's package; test.sh installs it when missing and run as root),
a fresh profile per run, `--screenshot` and `--dump-dom` with a virtual-time budget, and the console
messages from Chromium's own log (`--enable-logging=stderr`: each console call is a
`CONSOLE(line)` entry, uncaught exceptions included). Every host name resolves to nothing and
every request goes to a proxy on a closed port, so only files beside the page can load.
"""

from __future__ import annotations

import re
import shutil
import subprocess
from html.parser import HTMLParser
from pathlib import Path

import pytest

CHROMIUM = shutil.which("chromium")  # the one the tests run, and the one they skip without
FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync",
         # the network off: no name resolves, every request would go to a closed port
         "--proxy-server=127.0.0.1:9", "--host-resolver-rules=MAP * ~NOTFOUND",
         "--virtual-time-budget=10000"]
needs_chromium = pytest.mark.skipif(CHROMIUM is None,
                                    reason="no chromium on PATH (test.sh installs it as root)")


def chromium(args: list[str], tmp: Path) -> subprocess.CompletedProcess:
    """Run headless Chromium with `args` in a new profile under `tmp`."""
    profile = tmp / f"profile-{len(list(tmp.glob('profile-*')))}"
    profile.mkdir()
    assert CHROMIUM is not None, "only for tests marked needs_chromium"
    return subprocess.run([CHROMIUM, *FLAGS, f"--user-data-dir={profile}", *args],
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


def visible_text(dom: str) -> str:
    """The text a reader sees: character data outside <script> and <style>, spaces folded."""
    parser = _Text()
    parser.feed(dom)
    return re.sub(r"\s+", " ", " ".join(parser.parts))


def screenshot(path: Path, tmp: Path, size: str) -> tuple[Path, list[str]]:
    """A screenshot of `path` and the console lines its loading logged."""
    shot = tmp / f"{path.stem}.png"
    run = chromium(["--enable-logging=stderr", "--v=0", f"--window-size={size}",
                    f"--screenshot={shot}", path.resolve().as_uri()], tmp)
    return shot, [ln for ln in run.stderr.splitlines() if "CONSOLE" in ln]


def dom_of(path: Path, tmp: Path) -> str:
    """The page's DOM once loaded (scripts run)."""
    return chromium(["--dump-dom", path.resolve().as_uri()], tmp).stdout
