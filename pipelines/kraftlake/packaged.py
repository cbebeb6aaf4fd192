"""The data files kraftlake reads at run time, found through `importlib.resources`.

They live at the repository's top level (`schemas/`, `expectations/`, `conf/`) and ship in
the wheel as the packages `kraftlake.schemas`, `kraftlake.expectations` and
`kraftlake.conf` (`pyproject.toml` maps each folder to its package), so the same lookup
works from a checkout installed with `pip install -e` and from an installed wheel run in
any directory.
"""

from __future__ import annotations

from importlib.resources import files
from pathlib import Path


def _folder(package: str) -> Path:
    """The directory of a data package. kraftlake reads its data as plain files (globs,
    Spark reading JSON), so a package that is not a directory (a zip import) is refused."""
    root = files(package)
    if not isinstance(root, Path):
        raise RuntimeError(f"{package} is not installed as a directory ({root!r})")
    return root


SCHEMAS = _folder("kraftlake.schemas")
EXPECTATIONS = _folder("kraftlake.expectations")
DEFAULT_CONF = _folder("kraftlake.conf") / "kraftlake.yaml"
