"""The layers of docs/architecture.md are the code's: every import of every module of
`pipelines/kraftlake` (at module level, under TYPE_CHECKING and inside functions alike, read
with `ast`) goes to its own layer or one before it in `kraftlake.layers.LAYERS`, no two
modules import each other through any chain, and the page's table of layers lists them in
that order with exactly the layers each one imports."""

from __future__ import annotations

import ast
import re
from collections import defaultdict
from pathlib import Path

from kraftlake.layers import LAYERS

REPO = Path(__file__).resolve().parents[1]
PACKAGE = REPO / "pipelines" / "kraftlake"
PAGE = REPO / "docs" / "architecture.md"


def _modules() -> dict[str, Path]:
    """Dotted name -> file of every module of the package."""
    out = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        out[".".join(parts)] = path
    return out


MODULES = _modules()


def _imports(name: str, path: Path) -> list[tuple[str, int]]:
    """(kraftlake module imported, line) of every import statement anywhere in the file: a
    `from X import y` imports `X.y` when that is a module, else `X`."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    out = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            targets = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[:len(package.split(".")) - node.level + 1]
                mod = ".".join([*base, *([node.module] if node.module else [])])
            else:
                mod = node.module or ""
            targets = [f"{mod}.{a.name}" if f"{mod}.{a.name}" in MODULES else mod
                       for a in node.names]
        else:
            continue
        out += [(t, node.lineno) for t in targets if t.split(".")[0] == "kraftlake"]
    return out


IMPORTS = {name: _imports(name, path) for name, path in MODULES.items()}


def layer_of(module: str) -> str:
    """`kraftlake.fold.kernel` -> fold, `kraftlake.spark` -> spark, `kraftlake` -> __init__."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "__init__"


def _where(module: str, line: int) -> str:
    return f"{MODULES[module].relative_to(REPO)}:{line}"


def test_every_module_is_in_one_layer() -> None:
    assert len(set(LAYERS)) == len(LAYERS), "a layer named twice in LAYERS"
    layers = {layer_of(m) for m in MODULES}
    assert sorted(layers - set(LAYERS)) == [], "modules of no layer: add them to LAYERS"
    assert sorted(set(LAYERS) - layers) == [], "LAYERS names layers that do not exist"


def test_every_import_names_a_module_that_exists() -> None:
    missing = [f"{_where(m, line)} imports {t}" for m, imports in IMPORTS.items()
               for t, line in imports if t not in MODULES]
    assert missing == []


def test_imports_follow_the_layer_order() -> None:
    rank = {layer: i for i, layer in enumerate(LAYERS)}
    upward = [f"{_where(m, line)}: {layer_of(m)} imports {t} ({layer_of(t)} comes after it)"
              for m, imports in IMPORTS.items() for t, line in imports
              if rank[layer_of(t)] > rank[layer_of(m)]]
    assert upward == []


def test_no_import_cycle() -> None:
    """No chain of imports leads from a module back to itself, however deep in a function
    one of them is (such a cycle only works because of the import's place)."""
    graph = {m: sorted({t for t, _ in imports if t != m and t in MODULES})
             for m, imports in IMPORTS.items()}
    cycles = []
    done: set[str] = set()

    def visit(m: str, path: list[str]) -> None:
        if m in path:
            cycles.append(" -> ".join([*path[path.index(m):], m]))
            return
        if m in done:
            return
        for t in graph[m]:
            visit(t, [*path, m])
        done.add(m)

    for m in graph:
        visit(m, [])
    assert cycles == []


def _page_table() -> list[tuple[str, set[str]]]:
    """(layer, layers it imports) of each row of the table in the page's "Layers" section."""
    section = PAGE.read_text(encoding="utf-8").split("\n## Layers\n", 1)[1].split("\n## ", 1)[0]
    rows = []
    for line in section.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if not line.startswith("|") or len(cells) < 2 or not cells[0].startswith("`"):
            continue
        imports = set(re.findall(r"`([\w.]+)`", cells[1]))
        rows.append((cells[0].strip("`"), imports))
    return rows


def test_page_shows_the_layers_as_they_are() -> None:
    derived: dict[str, set[str]] = defaultdict(set)
    for m, imports in IMPORTS.items():
        derived[layer_of(m)] |= {layer_of(t) for t, _ in imports} - {layer_of(m)}
    table = _page_table()
    assert [name for name, _ in table] == list(LAYERS), \
        "docs/architecture.md's layers are not kraftlake.layers.LAYERS, in order"
    wrong = {name: {"page": sorted(shown), "code": sorted(derived[name])}
             for name, shown in table if shown != derived[name]}
    assert wrong == {}, "docs/architecture.md's imports of these layers are not the code's"
