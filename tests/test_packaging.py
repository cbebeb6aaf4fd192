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


def test_the_version_is_the_changelogs_newest_release() -> None:
    """pyproject.toml's version, `kraftlake.__version__` and the newest release heading of
    docs/CHANGELOG.md (`## X.Y.Z (date): ...`, below "Unreleased") are one version, and the
    releases are listed newest first with their dates in order."""
    import re

    import kraftlake

    project = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
    releases = re.findall(r"^## (\d+\.\d+\.\d+) \((\d{4}-\d\d-\d\d)\)",
                          (REPO / "docs" / "CHANGELOG.md").read_text(), flags=re.M)
    assert releases, "docs/CHANGELOG.md lists no release"
    assert project["version"] == kraftlake.__version__ == releases[0][0]
    versions = [tuple(int(n) for n in v.split(".")) for v, _ in releases]
    assert versions == sorted(versions, reverse=True)
    assert [d for _, d in releases] == sorted((d for _, d in releases), reverse=True)
