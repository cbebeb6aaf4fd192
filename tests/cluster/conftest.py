"""The cluster tests compare with the suite's SparkSession (local[2]): one local ingest of
the example log is the reference every cluster and object-store lake must equal.

Their jobs run as processes of their own (the s3a jars, a standalone master: settings a
JVM takes only at its start), and each such process is a JVM start costing 10-20 CPU s,
plus the executors it starts on a cluster. `cli_commands` runs several commands in one."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import REPO
from tests.lakes import ingested_once

EXAMPLE = REPO / "examples" / "real-3-broker"


@pytest.fixture(scope="package")
def local_lake(spark, cfg_factory, tmp_path_factory) -> Path:
    """`examples/real-3-broker` ingested on `local[2]` (built once in the run:
    `ingested_once`)."""
    return ingested_once(spark, cfg_factory, tmp_path_factory, EXAMPLE)


# The process of `cli_commands`. A script file, not `python -c`: pyspark.sql.connect (which
# great_expectations imports for `quality`) takes a __main__ without __file__ for a doctest
# run and exits at import (tests/conftest.py).
_COMMANDS_SCRIPT = '''\
"""kraftlake commands one after the other in this process (tests/cluster/conftest.py)."""
import json
import sys
import traceback

from click.testing import CliRunner

from kraftlake.cli import main

done = []
for args in json.loads(sys.argv[1]):
    r = CliRunner().invoke(main, args)
    crashed = r.exc_info is not None and not isinstance(r.exception, SystemExit)
    done.append([r.exit_code, r.stdout,
                 r.stderr + ("".join(traceback.format_exception(*r.exc_info)) if crashed else "")])
with open(sys.argv[2], "w") as fh:
    json.dump(done, fh)
'''


def cli_commands(commands: list[list[str]], work: Path, env: dict[str, str],
                 timeout: float = 900) -> list[subprocess.CompletedProcess]:
    """`kraftlake` commands (argument lists) run in order in one new process, each through
    click's CliRunner on `kraftlake.cli.main`, the group the `kraftlake` command runs: each
    command's own code, options and exit status, but one JVM for all of them (the first
    command's `get_spark` launches it, the others get its session). Each command's exit
    status, stdout and stderr (with the traceback of an exception it ended in) as a
    CompletedProcess; `timeout` is per command, as for a command run alone."""
    script, out = work / "kraftlake_commands.py", work / "kraftlake_commands.json"
    script.write_text(_COMMANDS_SCRIPT)
    proc = subprocess.run([sys.executable, str(script), json.dumps(commands), str(out)],
                          capture_output=True, text=True, timeout=timeout * len(commands),
                          env=env)
    if proc.returncode != 0 or not out.exists():
        raise RuntimeError(f"the commands' process ended with {proc.returncode}:\n"
                           f"{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}")
    return [subprocess.CompletedProcess(args, code, stdout, stderr)
            for args, (code, stdout, stderr) in zip(commands, json.loads(out.read_text()),
                                                    strict=True)]
