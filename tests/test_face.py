"""The package's face (`kraftlake/__init__.py`): every name it offers resolves, and
importing it stays cheap (no Spark, no JVM) because each command imports the package."""

from __future__ import annotations

import subprocess
import sys

import kraftlake


def test_every_public_name_resolves_to_its_module() -> None:
    for name in kraftlake.__all__:
        value = getattr(kraftlake, name)
        if name != "__version__":
            assert getattr(value, "__module__", kraftlake._FACE[name]).startswith("kraftlake")
    assert set(kraftlake.__all__) - {"__version__"} == set(kraftlake._FACE)


def test_importing_the_package_imports_no_spark() -> None:
    code = "import sys, kraftlake; print('pyspark' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True)
    assert out.stdout.strip() == "False"
