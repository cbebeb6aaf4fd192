"""Shared test fixtures: where the real KRaft metadata logs are.

The real files live in `../shared/fixtures/kraft-real/` beside the checkout (CI puts them
there too); $KRAFTLAKE_REAL_FIXTURES overrides the location.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
REAL = Path(os.environ.get("KRAFTLAKE_REAL_FIXTURES", REPO.parent / "shared/fixtures/kraft-real"))


def real_files(kind: str) -> list[Path]:
    """Every real segment (`*.log`), snapshot (`*.checkpoint` in a log dir) or bootstrap file."""
    if kind == "segment":
        return sorted(REAL.rglob("*.log"))
    if kind == "snapshot":
        return sorted(p for p in REAL.rglob("*.checkpoint") if p.name != "bootstrap.checkpoint")
    if kind == "bootstrap":
        return sorted(REAL.rglob("bootstrap.checkpoint"))
    raise ValueError(kind)


def real_log_dirs() -> list[Path]:
    return sorted({p.parent for p in REAL.rglob("*.log")
                   if p.parent.name == "__cluster_metadata-0"})


@pytest.fixture(scope="session")
def real_root() -> Path:
    if not REAL.is_dir():
        pytest.fail(f"real fixtures not found at {REAL} (set KRAFTLAKE_REAL_FIXTURES)")
    return REAL
