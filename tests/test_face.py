"""The package's face (`kraftlake/__init__.py`): every name it offers is defined in the module
`_FACE` names (not merely re-exported there), the type checker's imports say the same, and
importing the package stays cheap (no Spark, no JVM) because each command imports it."""

from __future__ import annotations

import ast
import doctest
import importlib
import importlib.util
import json
import subprocess
import sys
import tempfile
from pathlib import Path

import kraftlake


def _top_level_bindings(module: str) -> set[str]:
    """The names a module's own source defines at its top level: functions, classes and
    assignments; imported names are not among them."""
    spec = importlib.util.find_spec(module)
    assert spec is not None and spec.origin is not None, module
    names: set[str] = set()
    for node in ast.parse(Path(spec.origin).read_text()).body:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            names.add(node.name)
        elif isinstance(node, ast.Assign):
            names.update(t.id for t in node.targets if isinstance(t, ast.Name))
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            names.add(node.target.id)
    return names


def test_every_public_name_is_defined_in_its_module() -> None:
    assert set(kraftlake.__all__) - {"__version__"} == set(kraftlake._FACE)
    for name, module in kraftlake._FACE.items():
        assert name in _top_level_bindings(module), f"{module} does not define {name}"
        assert getattr(kraftlake, name) is getattr(importlib.import_module(module), name)


def test_the_type_checkers_imports_match_the_face() -> None:
    """`if TYPE_CHECKING:` imports each name from the module `_FACE` resolves it from."""
    tree = ast.parse(Path(kraftlake.__file__).read_text())
    guarded = [node for node in tree.body if isinstance(node, ast.If)
               and isinstance(node.test, ast.Name) and node.test.id == "TYPE_CHECKING"]
    assert len(guarded) == 1
    imported = {alias.name: node.module for node in guarded[0].body
                if isinstance(node, ast.ImportFrom) for alias in node.names}
    assert imported == kraftlake._FACE


def test_importing_the_package_imports_no_spark() -> None:
    code = "import sys, kraftlake; print('pyspark' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True)
    assert out.stdout.strip() == "False"


# names whose example is the notebook the suite runs (examples/kraftlake-api.ipynb,
# tests/cli/test_python_api.py): they need a SparkSession
NOTEBOOK = Path(kraftlake.__file__).resolve().parents[2] / "examples" / "kraftlake-api.ipynb"
# the examples that build a lake (`ingest`'s) and go on with it, run in this order, each with
# the names the ones before it made
LAKE_EXAMPLES = ("ingest", "ingest_dir", "start_stream", "maintain", "run_quality",
                 "write_report")
CONSTANTS = {"EVENT_TYPES", "SCENARIOS"}


def _doctests(name: str) -> list[doctest.DocTest]:
    return [t for t in doctest.DocTestFinder(recurse=False).find(getattr(kraftlake, name), name,
                                                                 globs={}) if t.examples]


def test_every_public_name_has_a_docstring_and_an_example() -> None:
    """Each function and class of the face says what it takes and returns, and shows it: a
    doctest in its docstring (run below) or the notebook the suite runs."""
    notebook = "".join("".join(c["source"]) for c in json.loads(NOTEBOOK.read_text())["cells"]
                       if c["cell_type"] == "code")
    for name in sorted(set(kraftlake._FACE) - CONSTANTS):
        assert (getattr(kraftlake, name).__doc__ or "").strip(), f"{name} has no docstring"
        assert _doctests(name) or f"kraftlake.{name}(" in notebook, f"{name}: no example"


def test_the_docstring_examples_run() -> None:
    runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS)
    for name in sorted(set(kraftlake._FACE) - set(LAKE_EXAMPLES)):
        for test in _doctests(name):
            runner.run(test)
    assert runner.failures == 0, f"{runner.failures} of {runner.tries} examples failed"


def test_the_examples_that_build_a_lake_run(spark, tmp_path, monkeypatch) -> None:
    """`ingest`'s example on the real log of `examples/` from the clone's root (as a reader
    runs it), then the examples that go on with its lake, in the order of LAKE_EXAMPLES;
    their temporary directories under the test's."""
    monkeypatch.chdir(NOTEBOOK.parents[1])
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    runner, names = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS), {}
    for name in LAKE_EXAMPLES:
        (test,) = _doctests(name)
        test.globs = names
        runner.run(test, clear_globs=False)
    assert runner.failures == 0, f"{runner.failures} of {runner.tries} examples failed"


def test_dir_lists_the_face_only() -> None:
    """`dir(kraftlake)` in a notebook lists what the package offers, not the helpers its
    module imports for itself (`importlib`, `Any`, `TYPE_CHECKING`, `annotations`)."""
    assert dir(kraftlake) == sorted(kraftlake.__all__)
