"""Data files kraftlake reads at run time, shipped inside the package so that an installed
wheel works from any directory: Kafka's record layouts and the lake's table schemas
(`schemas/`), the Great Expectations suites (`expectations/`) and the default
configuration (`kraftlake.yaml`)."""

from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parent
SCHEMAS = ROOT / "schemas"
EXPECTATIONS = ROOT / "expectations"
DEFAULT_CONF = ROOT / "kraftlake.yaml"
