"""kraftlake installs like a library: its wheel carries every file it reads at run time, and
the installed package runs the demo from a directory that is not the checkout."""

from __future__ import annotations

import os
import subprocess
import sys
import zipfile
from pathlib import Path

from tests.conftest import REPO


def test_the_wheel_runs_the_demo_from_another_directory(tmp_path: Path) -> None:
    dist = tmp_path / "dist"
    subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation",
                    "-q", "-w", str(dist), str(REPO)], check=True, timeout=600)
    (wheel,) = dist.glob("kraftlake-*.whl")
    names = set(zipfile.ZipFile(wheel).namelist())
    for needed in ("kraftlake/resources/kraftlake.yaml",
                   "kraftlake/resources/schemas/redaction.json",
                   "kraftlake/resources/schemas/records/PartitionChangeRecord.json",
                   "kraftlake/resources/schemas/tables/partition_events.json",
                   "kraftlake/resources/expectations/partition_timeline.json",
                   "kraftlake/jvm/delta.pom.xml"):
        assert needed in names, needed

    # installed without the checkout on the path (its dependencies are this venv's)
    site = tmp_path / "site"
    subprocess.run([sys.executable, "-m", "pip", "install", "--no-deps", "-q", "--target",
                    str(site), str(wheel)], check=True, timeout=600)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    env = {**os.environ, "PYTHONPATH": str(site), "COLUMNS": "200"}
    env.pop("KRAFTLAKE_CONF", None)
    where = subprocess.run([sys.executable, "-c", "import kraftlake; print(kraftlake.__file__)"],
                           cwd=elsewhere, env=env, capture_output=True, text=True, check=True)
    assert where.stdout.startswith(str(site)), where.stdout
    out = subprocess.run([sys.executable, "-m", "kraftlake", "demo", "--hours", "0.5",
                          "--lake", "lake"], cwd=elsewhere, env=env, capture_output=True,
                         text=True, timeout=900, check=False)
    assert out.returncode == 0, out.stdout + out.stderr
    assert "unclean_election" in out.stdout
    assert (elsewhere / "lake" / "partition_events" / "_delta_log").is_dir()
