"""pyproject.toml lists kraftlake's packages by hand (the data folders at the top level are
mapped to packages, which setuptools cannot combine with package discovery): a package added
under pipelines/kraftlake and not listed would be missing from the wheel. This checks the
list against the tree, and that the data packages resolve through importlib.resources."""

from __future__ import annotations

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
