"""The alert rules kraftlake ships (conf/prometheus-alerts.yaml) are valid Prometheus rules,
and fire where they must and nowhere else: `promtool check rules`, and `promtool test rules`
on made-up series (tests/metrics/prometheus-alerts.test.yaml). promtool is Debian's
`prometheus` package, which ./test.sh installs (scripts/venv.sh `ensure_debian_tools`)."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

from kraftlake.metrics.exposition import METRICS

REPO = Path(__file__).resolve().parents[2]
RULES = REPO / "conf" / "prometheus-alerts.yaml"
RULE_TESTS = Path(__file__).with_name("prometheus-alerts.test.yaml")


def promtool(*args: str) -> str:
    tool = shutil.which("promtool")
    assert tool, "no promtool on PATH: install Debian's prometheus package (./test.sh does)"
    out = subprocess.run([tool, *args], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, f"promtool {' '.join(args)}:\n{out.stdout}{out.stderr}"
    return out.stdout


def test_alert_rules_are_valid() -> None:
    assert "SUCCESS: 6 rules found" in promtool("check", "rules", str(RULES))


def test_alert_rules_fire_where_they_must() -> None:
    assert "SUCCESS" in promtool("test", "rules", str(RULE_TESTS))


def test_alert_rules_name_only_served_metrics() -> None:
    """Every kraftlake metric a rule reads is one the stream serves (a renamed metric would
    leave its alert silent forever, which neither promtool command notices)."""
    used = set(re.findall(r"\b(kraftlake_\w+)", RULES.read_text(encoding="utf-8")))
    assert used, "the rules read no kraftlake metric"
    assert used <= set(METRICS), sorted(used - set(METRICS))
