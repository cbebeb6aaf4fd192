"""pyproject.toml lists kraftlake's packages by hand (the data folders at the top level are
mapped to packages, which setuptools cannot combine with package discovery): a package added
under pipelines/kraftlake and not listed would be missing from the wheel. This checks the
list against the tree, that the data packages resolve through importlib.resources, and that
the checkout's install is found wherever Python starts."""

from __future__ import annotations

import os
import subprocess
import sys
import tomllib

from kraftlake.packaged import DEFAULT_CONF, EXPECTATIONS, SCHEMAS
from tests.conftest import REPO


def test_pyproject_lists_every_package_of_the_tree_and_the_data_folders() -> None:
    setup = tomllib.loads((REPO / "pyproject.toml").read_text())["tool"]["setuptools"]
    code = {".".join(p.parent.relative_to(REPO / "pipelines").parts)
            for p in (REPO / "pipelines").rglob("*.py")}
    data = {f"kraftlake.{d}": d for d in ("schemas", "expectations", "conf")}
    assert set(setup["packages"]) == code | set(data)
    assert {k: v for k, v in setup["package-dir"].items() if k} == data


def test_the_data_packages_are_the_top_level_folders() -> None:
    assert SCHEMAS == REPO / "schemas"
    assert EXPECTATIONS == REPO / "expectations"
    assert DEFAULT_CONF == REPO / "conf" / "kraftlake.yaml"
    assert (SCHEMAS / "records" / "PartitionChangeRecord.json").is_file()
    assert (SCHEMAS / "tables" / "partition_events.json").is_file()
    assert (EXPECTATIONS / "partition_timeline.json").is_file()


def test_import_kraftlake_beside_a_folder_named_kraftlake(tmp_path) -> None:
    """In the clone's parent directory (the clone is a folder named `kraftlake`, and Python
    puts the current directory first on sys.path), `import kraftlake` is the package, not
    that folder as an empty namespace package: scripts/venv.sh puts pipelines/ on the venv's
    path. Without $PYTHONPATH, so that the install alone decides."""
    (tmp_path / "kraftlake").mkdir()
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    out = subprocess.run(
        [sys.executable, "-c", "import kraftlake, kraftlake.packaged as p; "
         "print(kraftlake.__file__); print(p.SCHEMAS); print(kraftlake.Lake.__module__)"],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == [str(REPO / "pipelines" / "kraftlake" / "__init__.py"),
                                  str(REPO / "schemas"), "kraftlake.lake.delta"]
