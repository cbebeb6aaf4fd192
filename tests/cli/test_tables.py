"""`kraftlake tables`: every table and column with its meaning, from the table schemas that
the pipeline writes by (no second list to drift)."""

from __future__ import annotations

import pytest
from click.testing import CliRunner

from kraftlake.cli import main
from kraftlake.lake.schema import table_names, table_schema


@pytest.mark.parametrize("name", table_names())
def test_every_column_has_a_meaning(name: str) -> None:
    t = table_schema(name)
    assert t.doc.strip()
    assert [c["name"] for c in t.columns if not c.get("doc", "").strip()] == []


def test_the_command_prints_every_table_and_column_with_its_meaning() -> None:
    out = CliRunner().invoke(main, ["tables"])
    assert out.exit_code == 0, out.output
    lines = out.output.splitlines()
    for name in table_names():
        t = table_schema(name)
        assert f"{name} ({t.layer}): {t.doc}" in lines
        for c in t.columns:
            assert any(ln.split()[:2] == [c["name"], c["type"]] and ln.rstrip().endswith(
                c["doc"] + ("" if c["nullable"] else " (never null)")) for ln in lines), c


def test_one_table_and_an_unknown_one() -> None:
    out = CliRunner().invoke(main, ["tables", "incidents"])
    assert out.exit_code == 0 and out.output.startswith("incidents (gold)")
    assert "partition_events (gold)" not in out.output
    out = CliRunner().invoke(main, ["tables", "incident"])
    assert out.exit_code == 2 and "no table incident" in out.output
