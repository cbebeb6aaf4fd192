"""`kraftlake serve`: a real server process over the simulated lake of the read commands'
tests, queried by a real Spark Connect client (pyspark's `SparkSession.builder.remote`) and
by `kraftlake sql/timeline/report --remote`; every answer equals the local command's.

Clients run as processes of their own: a Connect session in the test process would switch
pyspark into Connect mode for every later test of the worker (`SPARK_CONNECT_MODE_ENABLED`).
One server (one JVM, `server` in conftest.py) serves the whole package; the prompt is
driven through a pseudo-terminal over that server, so it adds no JVM start.
"""

from __future__ import annotations

import json
import re
import shutil
import socket
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pexpect
from click.testing import CliRunner

from kraftlake.cli import main
from kraftlake.endpoint import NO_RESIDENT_ENV, RECORD
from kraftlake.lake.delta import Lake
from kraftlake.lake.schema import table_names
from tests.cli.api_reads import report_page
from tests.cli.conftest import KRAFTLAKE
from tests.conftest import cli_env
from tests.lake_rows import row_count

EVENTS_BY_TYPE = ("SELECT event_type, count(*) AS n, max(offset) AS last FROM partition_events "
                  "GROUP BY event_type ORDER BY event_type")


def _local_sql(lake: Path, *args: str):
    return CliRunner().invoke(main, ["sql", *args, "--lake", str(lake)])


# A `kraftlake` command run in a fresh interpreter that then checks it started no JVM (py4j's
# gateway is what a local SparkSession launches)
_NO_JVM = textwrap.dedent("""
    import sys
    from pyspark import SparkContext
    from kraftlake.cli import main
    try:
        main(sys.argv[1:], prog_name="kraftlake")
    except SystemExit as e:
        status = e.code or 0
    assert SparkContext._gateway is None, "a --remote command started a JVM"
    sys.exit(status)
""")


def _remote(*args: str, timeout: float = 600, resident: bool = False
            ) -> subprocess.CompletedProcess:
    """`kraftlake ARGS` in a process that must start no JVM; `resident`: it may find the
    endpoint recorded under the lake (the suite's environment ignores such records)."""
    env = cli_env()
    if resident:
        del env[NO_RESIDENT_ENV]
    return subprocess.run([sys.executable, "-c", _NO_JVM, *args], capture_output=True,
                          text=True, env=env, timeout=timeout)


_CLIENT = textwrap.dedent("""
    import json, sys
    from pyspark.sql import SparkSession
    spark = SparkSession.builder.remote(sys.argv[1]).getOrCreate()
    out = {"counts": {n: spark.table(n).count() for n in sys.argv[4:]},
           "events": [r.asDict() for r in spark.sql(sys.argv[2]).collect()],
           "first_version": spark.sql(f"SELECT count(*) AS n FROM delta.`{sys.argv[3]}` "
                                      f"VERSION AS OF 0").first().n}
    print(json.dumps(out))
""")


def test_a_spark_connect_client_reads_every_table(server, sim_lake, spark) -> None:
    lake = Lake(sim_lake[0], spark)
    absent = [n for n in table_names() if not lake.exists(n)]
    assert absent, "every table exists: the empty view of a missing one is not exercised"
    got = subprocess.run([sys.executable, "-c", _CLIENT, server, EVENTS_BY_TYPE,
                          lake.path("records"), *table_names()],
                         capture_output=True, text=True, timeout=600)
    assert got.returncode == 0, got.stderr[-2000:]
    answer = json.loads(got.stdout)
    assert answer["counts"] == {n: row_count(lake.path(n)) for n in table_names()}
    assert all(answer["counts"][n] == 0 for n in absent)
    assert answer["events"] == json.loads(
        _local_sql(sim_lake[0], EVENTS_BY_TYPE, "--format", "json").stdout)
    assert answer["first_version"] == row_count(lake.path("records"), version=0)


def test_sql_remote_equals_local_and_starts_no_jvm(server, sim_lake) -> None:
    local = _local_sql(sim_lake[0], EVENTS_BY_TYPE, "--format", "json")
    assert local.exit_code == 0, local.output
    remote = _remote("sql", "--remote", server, EVENTS_BY_TYPE, "--format", "json")
    assert remote.returncode == 0, remote.stderr
    assert json.loads(remote.stdout) == json.loads(local.stdout)
    assert len(json.loads(remote.stdout)) > 3


def test_sql_remote_refusal_is_one_line_and_exit_2(server) -> None:
    out = _remote("sql", "--remote", server, "SELECT * FROM no_such_table")
    assert out.returncode == 2, out.stderr
    lines = out.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("Error: [TABLE_OR_VIEW_NOT_FOUND]"), lines


def test_timeline_remote_equals_local(server, sim_lake) -> None:
    lake, labels = sim_lake
    case = next(x for x in labels if "unclean_election" in x["events"])
    args = ["timeline", "--topic", case["topic_name"], "--partition", str(case["partition_id"])]
    local = CliRunner().invoke(main, [*args, "--lake", str(lake)])
    assert local.exit_code == 0, local.output
    remote = _remote(*args, "--remote", server)
    assert remote.returncode == 0, remote.stderr
    assert remote.stdout == local.stdout
    assert "unclean_election" in remote.stdout


def test_report_remote_equals_local(server, local_report, tmp_path) -> None:
    remote = tmp_path / "remote.html"
    got = _remote("report", "--remote", server, "--out", str(remote))
    assert got.returncode == 0, got.stderr
    assert report_page(remote) == local_report
    assert "unclean" in local_report


def test_sql_and_report_find_the_server_recorded_under_the_lake(server, sim_lake, local_report,
                                                               tmp_path, monkeypatch) -> None:
    """The server records itself under the lake it serves: `sql` and `report` given only
    `--lake` answer through it (no JVM started) and say so in one line; a stale record (its
    process gone, nothing on its port) is ignored and the command answers itself."""
    lake = sim_lake[0]
    assert json.loads(lake.joinpath(*RECORD).read_text())["url"] == server
    said = (f"answering through `kraftlake serve` at {server} (recorded under the lake; give "
            f"--master or --conf to start Spark here)")
    local = _local_sql(lake, EVENTS_BY_TYPE, "--format", "json")
    got = _remote("sql", "--lake", str(lake), EVENTS_BY_TYPE, "--format", "json",
                  resident=True)
    assert got.returncode == 0, got.stderr
    assert got.stderr.strip() == said
    assert json.loads(got.stdout) == json.loads(local.stdout)
    page = tmp_path / "report.html"
    got = _remote("report", "--lake", str(lake), "--out", str(page), resident=True)
    assert got.returncode == 0 and got.stderr.strip() == said, got.stderr
    assert report_page(page) == local_report
    # a copy of the lake keeps the record of a server long gone: ignored
    copy = tmp_path / "copy"
    shutil.copytree(lake, copy)
    gone = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"],
                          capture_output=True, text=True, check=True)
    copy.joinpath(*RECORD).write_text(json.dumps(
        {"url": "sc://127.0.0.1:1", "host": socket.gethostname(), "pid": int(gone.stdout)}))
    monkeypatch.delenv(NO_RESIDENT_ENV)
    mine = _local_sql(copy, EVENTS_BY_TYPE, "--format", "json")
    assert mine.exit_code == 0 and "answering through" not in mine.output, mine.output
    assert json.loads(mine.stdout) == json.loads(local.stdout)


def test_an_endpoint_that_is_not_there_is_one_line(tmp_path) -> None:
    t0 = time.monotonic()
    out = _remote("sql", "--remote", "sc://127.0.0.1:1", "SELECT 1", timeout=120)
    assert out.returncode == 1, out.stderr
    lines = out.stderr.strip().splitlines()
    assert len(lines) == 1 and "no Spark Connect endpoint answers" in lines[0], lines
    assert time.monotonic() - t0 < 60


def test_a_port_taken_is_refused_before_spark_starts(sim_lake) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        t0 = time.monotonic()
        out = subprocess.run([KRAFTLAKE, "serve", "--lake", str(sim_lake[0]), "--port",
                              str(port)], capture_output=True, text=True, timeout=300)
    assert out.returncode == 1, out.stderr
    assert out.stderr.strip() == (f"Error: cannot listen on 127.0.0.1:{port}: "
                                  "Address already in use"), out.stderr
    assert time.monotonic() - t0 < 30  # no JVM started (one takes a minute here)


def test_the_prompt(server, tmp_path) -> None:
    """Two statements (the second refused, the first spread over two lines), `\\d`, and `\\q`,
    through a pseudo-terminal; the statements are in the history afterwards."""
    env = cli_env(XDG_STATE_HOME=str(tmp_path), TERM="dumb")
    child = pexpect.spawn(KRAFTLAKE, ["sql", "--remote", server], env=env, encoding="utf-8",
                          timeout=300, dimensions=(40, 200))
    try:
        child.expect_exact("kraftlake> ")
        child.sendline("SELECT count(*) AS n")
        child.expect_exact("-> ")
        child.sendline("FROM partition_events WHERE event_type = 'unclean_election';")
        child.expect_exact("kraftlake> ")
        count = re.search(r"\b(\d+)\b", child.before.split("unclean_election';")[-1])
        assert count and int(count.group(1)) > 0, child.before
        child.sendline("SELECT nothing FROM partition_events;")
        child.expect_exact("Error: [UNRESOLVED_COLUMN")
        child.expect_exact("kraftlake> ")
        child.sendline("\\d")
        child.expect_exact("kraftlake> ")
        listing = child.before
        for table, column in (("partition_events", "event_type"), ("incidents", "cause"),
                              ("records", "record_type")):
            assert re.search(rf"{table}\W+{column}\W", listing), listing
        child.sendline("\\q")
        child.expect(pexpect.EOF)
    finally:
        child.close()
    assert child.exitstatus == 0
    history = (tmp_path / "kraftlake" / "sql_history").read_text()
    assert "unclean_election" in history and "SELECT nothing" in history


def test_a_file_of_statements(sim_lake, tmp_path) -> None:
    lake = sim_lake[0]
    script = tmp_path / "three.sql"
    script.write_text("-- three statements; one session\n"
                      "SELECT count(*) AS n FROM partition_events;\n"
                      "SELECT ';' AS semicolon,\n"
                      "       count(*) AS n FROM incidents;\n"
                      "SELECT max(offset) AS last FROM records\n")
    out = _local_sql(lake, "-f", str(script), "--format", "json")
    assert out.exit_code == 0, out.output
    results, text, dec = [], out.stdout.strip(), json.JSONDecoder()
    while text:
        value, end = dec.raw_decode(text)
        results.append(value)
        text = text[end:].lstrip()
    expect = [json.loads(_local_sql(lake, q, "--format", "json").stdout) for q in (
        "SELECT count(*) AS n FROM partition_events",
        "SELECT ';' AS semicolon, count(*) AS n FROM incidents",
        "SELECT max(offset) AS last FROM records")]
    assert results == expect

    bad = tmp_path / "bad.sql"
    bad.write_text("SELECT 1 AS one;\n\nSELECT *\n  FROM no_such_table;\nSELECT 3 AS three;\n")
    out = _local_sql(lake, "-f", str(bad), "--format", "json")
    assert out.exit_code == 2, out.output
    lines = out.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"Error: {bad}:3: [TABLE_OR_VIEW_NOT_FOUND]")
    assert json.loads(out.stdout) == [{"one": 1}]  # the statements after it did not run
