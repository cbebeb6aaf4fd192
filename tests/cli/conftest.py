"""One real lake for the read commands' tests (timeline, sql, the Python API): the `mixed`
scenario of the simulator, 1 simulated hour with ELR, ingested by the real job; and one
`kraftlake serve` of it for the Spark Connect clients (test_serve.py, test_python_api.py), and
its HTML report written locally, which the reports made through the endpoint must equal."""

from __future__ import annotations

import re
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner

from kraftlake import ingest_dir, read_labels, simulate_cluster
from kraftlake.cli import main
from tests.cli.api_reads import report_page
from tests.conftest import cli_env

KRAFTLAKE = str(Path(sys.executable).with_name("kraftlake"))
URL = re.compile(r"sc://[\w.]+:\d+")


@pytest.fixture(scope="package")
def sim_lake(spark, tmp_path_factory) -> tuple[Path, list[dict]]:
    base = tmp_path_factory.mktemp("timeline")
    sim, lake = base / "cluster", base / "lake"
    simulate_cluster(sim, "mixed", seed=1, hours=1.0, elr=True)
    ingest_dir(spark, sim, lake)
    return lake, read_labels(sim)


@pytest.fixture(scope="package")
def server(sim_lake, tmp_path_factory) -> Iterator[str]:
    """`kraftlake serve` of `sim_lake` on a port the system picks on loopback; its `sc://`
    URL. One for the package, so its JVM starts and warms up (`serve.warm_up`) once."""
    log = tmp_path_factory.mktemp("serve") / "stderr"
    with log.open("w") as err:
        proc = subprocess.Popen([KRAFTLAKE, "serve", "--lake", str(sim_lake[0]), "--port",
                                 "0"], stdout=subprocess.PIPE, stderr=err, text=True,
                                env=cli_env())
    try:
        line = proc.stdout.readline()  # the JVM start and the tables' registration first
        found = URL.search(line)
        assert found, (f"serve printed {line!r} (exit status {proc.poll()}): "
                       f"{log.read_text()[-2000:]}")
        yield found.group(0)
    finally:
        proc.send_signal(signal.SIGTERM)
        try:
            status = proc.wait(120)
        except subprocess.TimeoutExpired:
            proc.kill()
            raise
    assert status == 0, f"serve ended with {status} on SIGTERM"


@pytest.fixture(scope="package")
def local_report(sim_lake, tmp_path_factory) -> str:
    """The page `kraftlake report --lake` writes of `sim_lake` on the worker's session, less
    the time it was generated (`report_page`)."""
    out = tmp_path_factory.mktemp("report") / "local.html"
    result = CliRunner().invoke(main, ["report", "--lake", str(sim_lake[0]), "--out", str(out)])
    assert result.exit_code == 0, result.output
    return report_page(out)
