"""Quiet by default: the commands that start Spark print their answer and nothing of the
JVM's or Spark's own log, leave no `spark-warehouse/` in the working directory, and a
failure inside Spark names the log file instead. Real commands, each in its own process
(its own JVM), as a user runs them."""

from __future__ import annotations

import shutil
import socket
import subprocess
import sys
import time
from pathlib import Path

from tests.conftest import cli_env

# what a JVM kraftlake launched printed on the console before (issue 22)
NOISE = ("WARN ", "log4j", "setLogLevel", "Using incubator modules", "Setting default log level",
         "Deleted ", "NativeCodeLoader")


def _run(cwd: Path, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "kraftlake", *args], cwd=cwd,
                          capture_output=True, text=True, timeout=900, check=False,
                          env=cli_env(KRAFTLAKE_STATE_DIR=str(cwd / "state"), **env))


def _assert_quiet(out: subprocess.CompletedProcess[str]) -> None:
    for line in (out.stdout + out.stderr).splitlines():
        assert not any(n in line for n in NOISE), line


def _logs(cwd: Path) -> list[Path]:
    return sorted((cwd / "state" / "logs").glob("spark-*.log"))


def test_sql_and_maintain_print_only_their_answer(sim_lake, tmp_path: Path) -> None:
    lake = sim_lake[0]
    out = _run(tmp_path, "sql", "SELECT count(*) AS n FROM topics", "--lake", str(lake),
               "--format", "json")
    assert out.returncode == 0, out.stderr
    assert out.stderr == ""
    assert out.stdout.strip().startswith("[") and '"n"' in out.stdout
    _assert_quiet(out)
    assert not (tmp_path / "spark-warehouse").exists()
    (log,) = _logs(tmp_path)  # where the JVM's output went instead
    assert "log4j" in log.read_text()

    # a copy: vacuum with no retention (so that it runs, on a lake younger than a week)
    # deletes what older versions of the shared lake still reference
    own = shutil.copytree(lake, tmp_path / "lake")
    out = _run(tmp_path, "maintain", "--lake", str(own), "--table", "topics", "--no-compact",
               "--retention-hours", "0", "--allow-short-retention")
    assert out.returncode == 0, out.stderr
    _assert_quiet(out)
    assert out.stderr == ""
    assert "topics" in out.stdout and "maintained" in out.stdout
    assert not (tmp_path / "spark-warehouse").exists()
    # Delta's VACUUM printed "Deleted N files and directories ..." on the JVM's stdout
    assert "Deleted " in _logs(tmp_path)[-1].read_text()


def test_a_failure_inside_spark_names_its_log(sim_lake, tmp_path: Path) -> None:
    out = _run(tmp_path, "sql", "SELECT 1", "--lake", str(sim_lake[0]),
               "--master", "nonsense://x")
    assert out.returncode == 1, out
    _assert_quiet(out)
    (line,) = out.stderr.strip().splitlines()
    (log,) = _logs(tmp_path)
    assert line.startswith("Error: ") and str(log) in line, line
    assert "Master must" in line  # the cause, from the log of the JVM that died
    assert "Traceback" not in out.stderr


def test_verbose_puts_the_jvm_output_on_the_console(sim_lake, tmp_path: Path) -> None:
    """`--verbose` (or KRAFTLAKE_VERBOSE=1): what went to the log file is on stderr, and no
    log file is written (a JVM that dies at start is quick to run)."""
    for how in (["--verbose"], []):
        out = _run(tmp_path, "sql", "SELECT 1", "--lake", str(sim_lake[0]), "--master",
                   "nonsense://x", *how, **({} if how else {"KRAFTLAKE_VERBOSE": "1"}))
        assert out.returncode == 1, out
        assert "Master must" in out.stderr and "log4j" in out.stderr, out.stderr
        assert _logs(tmp_path) == []


def test_the_jvm_hanging_up_on_the_driver_prints_nothing(capfd) -> None:
    """When the JVM ends first (every exit, and a stream stopped by a signal), its end of
    pyspark's accumulator connection closes, and pyspark's server printed an EOFError
    traceback after the stream's one-line stop (the stop test failed on it in CI).
    `quiet_hangup` silences that one error and no other. Two real pyspark servers (the
    session's own is busy serving its JVM's connection): one as pyspark leaves it, which
    prints the traceback (what makes this test able to fail), one as kraftlake sets it."""
    from pyspark.accumulators import _start_update_server

    from kraftlake.spark import quiet_hangup

    printed = {}
    for quiet in (False, True):
        server = _start_update_server("t0ken" * 8, False)
        if quiet:
            quiet_hangup(server)
        try:
            err = ""
            for token in (server.auth_token, "x" * len(server.auth_token)):
                with socket.create_connection(server.server_address) as s:
                    s.sendall(token.encode())
            deadline = time.monotonic() + 30
            while time.monotonic() < deadline and "not correct" not in err:
                time.sleep(0.1)
                err += capfd.readouterr().err
            printed[quiet] = err
        finally:
            server.shutdown()
    assert "EOFError" in printed[False] and "not correct" in printed[False], printed
    assert "EOFError" not in printed[True] and "not correct" in printed[True], printed
