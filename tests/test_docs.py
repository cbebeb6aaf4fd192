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


TESTING = REPO / "docs" / "testing.md"
MODULE = re.compile(r"(?<![\w/.])(\w+)\.py\b")


def _layout() -> dict[str, str]:
    """Folder path -> its text in the code block of docs/testing.md's "Layout" section: a line
    whose first word ends in `/` opens a folder, two spaces of indent per level below the one
    above; lines that start in the description column continue the folder above."""
    page = TESTING.read_text()
    block = page.split("## Layout\n", 1)[1].split("```\n", 2)[1]
    out: dict[str, str] = {}
    parents: list[str] = []
    current = None
    for line in block.splitlines():
        head = line[:23]
        if head.strip():
            indent = (len(head) - len(head.lstrip())) // 2
            word = head.split()[0]
            parents = parents[:indent]
            current = "".join(parents) + word if word.endswith("/") else None
            if current:
                parents.append(word)
                out[current] = ""
        if current:
            out[current] += line[23:] + "\n"
    return out


def _folders() -> dict[str, set[str]]:
    """Folder path -> the Python modules in it, for the package and the tests."""
    out = {}
    for root in (REPO / "pipelines" / "kraftlake", REPO / "tests"):
        for folder in [root, *sorted(p for p in root.rglob("*") if p.is_dir())]:
            modules = {p.name for p in folder.glob("*.py")} - {"__init__.py"}
            if modules:
                out[folder.relative_to(REPO).as_posix() + "/"] = modules
    return out


def test_testing_layout_names_every_folder_and_module() -> None:
    layout, folders = _layout(), _folders()
    assert sorted(set(folders) - set(layout)) == []
    missing = {f: sorted(m - set(MODULE.findall(layout[f])) - {"__init__"}
                         ) for f, m in ((f, {n[:-3] for n in ms}) for f, ms in folders.items())}
    assert {f: m for f, m in missing.items() if m} == {}


def test_testing_layout_names_no_module_that_is_gone() -> None:
    layout, folders = _layout(), _folders()
    gone = {f: sorted(set(MODULE.findall(text)) - {"__init__"}
                      - {n[:-3] for n in folders.get(f, set())})
            for f, text in layout.items() if f.startswith(("pipelines/", "tests/"))}
    assert {f: m for f, m in gone.items() if m} == {}
