"""Output never cut: a table to a pipe or a file is printed at its natural width, one wider
than the terminal folds into one column per line (psql's expanded display), and `decode`
prints whole records. The layout cases run through a pseudo-terminal of a fixed width, as a
user's terminal is; `kraftlake sql` as its own process on a real lake."""

from __future__ import annotations

import fcntl
import io
import os
import pty
import re
import struct
import subprocess
import sys
import termios
import threading

from click.testing import CliRunner

from kraftlake.cli import main
from kraftlake.cli.render import print_table
from kraftlake.lake.schema import table_schema
from tests.conftest import REPO, cli_env

WIDTH = 100
COLUMNS = table_schema("partition_current").names  # 22 columns, far wider than 100
ROW = [f"value of {c} " * 2 for c in COLUMNS]


def _pty(width: int = WIDTH) -> tuple[int, int]:
    """(master, slave) of a new pseudo-terminal `width` columns wide."""
    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 50, width, 0, 0))
    return master, slave


def _read_all(master: int) -> str:
    chunks = []
    while True:
        try:
            data = os.read(master, 65536)
        except OSError:  # EIO: the other side is closed
            break
        if not data:
            break
        chunks.append(data)
    return re.sub(r"\x1b\[[0-9;?]*[a-zA-Z]", "", b"".join(chunks).decode()).replace("\r", "")


def _in_terminal(columns: list[str], rows: list[list[str]], **kw) -> str:
    """What print_table shows on a terminal WIDTH columns wide (read as it is written: a
    terminal's buffer is small)."""
    master, slave = _pty()
    got: list[str] = []
    reader = threading.Thread(target=lambda: got.append(_read_all(master)))
    reader.start()
    with os.fdopen(slave, "w", closefd=True) as term:
        assert term.isatty()
        print_table(columns, rows, file=term, **kw)
    reader.join(timeout=60)
    os.close(master)
    return got[0]


def test_a_table_wider_than_the_terminal_folds_into_records(monkeypatch) -> None:
    monkeypatch.delenv("COLUMNS", raising=False)
    text = _in_terminal(COLUMNS, [ROW, ROW], title="partition_current")
    assert "…" not in text
    assert "-[ RECORD 1 ]-" in text and "-[ RECORD 2 ]-" in text
    for c, v in zip(COLUMNS, ROW, strict=True):
        assert re.search(rf"^{c}\s+\| {re.escape(v)}$", text, re.M), c


def test_a_table_that_fits_the_terminal_is_a_table(monkeypatch) -> None:
    monkeypatch.delenv("COLUMNS", raising=False)
    text = _in_terminal(["topic", "partition"], [["orders", "0"]])
    assert "RECORD" not in text and "orders" in text and "partition" in text


def test_a_table_to_a_pipe_is_whole_however_wide() -> None:
    out = io.StringIO()
    print_table(COLUMNS, [ROW], title="partition_current", file=out)
    text = out.getvalue()
    assert "…" not in text and "RECORD" not in text
    header = next(ln for ln in text.splitlines() if COLUMNS[0] in ln)
    assert [c for c in COLUMNS if c not in header] == []
    assert all(v in text for v in ROW)


def test_sql_in_a_100_column_terminal(sim_lake) -> None:
    """`SELECT * FROM partition_current` and `DESCRIBE HISTORY` in a real process whose
    stdout is a 100-column terminal: every column name and every value whole."""
    env = cli_env()
    env.pop("COLUMNS", None)
    master, slave = _pty()
    proc = subprocess.Popen(
        [sys.executable, "-m", "kraftlake", "sql", "--lake", str(sim_lake[0]), "--limit", "2",
         "SELECT * FROM partition_current ORDER BY topic_name, partition_id"],
        stdout=slave, stderr=subprocess.PIPE, env=env, cwd=REPO)
    os.close(slave)
    text = _read_all(master)
    os.close(master)
    assert proc.wait(timeout=900) == 0, proc.stderr.read() if proc.stderr else ""
    assert "…" not in text
    assert text.count("-[ RECORD ") == 2
    for c in COLUMNS:
        assert re.search(rf"^{c}\s+\|", text, re.M), (c, text)
    # every timestamp whole, in UTC with its zone
    assert re.search(r"^valid_from_ts\s+\| \d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z$", text, re.M)


def test_the_ingest_summary_to_a_pipe_has_whole_headers(sim_lake) -> None:
    """Re-ingesting the lake's own log (nothing new): the summary, captured as a cron log
    would be, names every column whole."""
    lake = sim_lake[0]
    out = CliRunner().invoke(main, ["ingest", str(lake.parent / "cluster"), "--lake",
                                    str(lake)])
    assert out.exit_code == 0, out.output
    header = next(ln for ln in out.stdout.splitlines() if "source" in ln)
    for col in ("source", "cluster", "offsets", "records", "quarantined", "changes",
                "timeline", "events", "unclean", "snapshot mismatches", "orphans"):
        assert col in header, header
    assert "…" not in out.stdout and "nothing new" in out.stdout
    assert str(lake.parent / "cluster") in out.stdout  # the source's whole path


def test_the_ingest_of_an_empty_segment_says_it_held_no_records(tmp_path) -> None:
    """A log directory whose only segment is empty (a controller that just started): the
    summary says so, not `None..0`."""
    log = tmp_path / "node" / "__cluster_metadata-0"
    log.mkdir(parents=True)
    (log / "00000000000000000000.log").write_bytes(b"")
    (log.parent / "meta.properties").write_text("cluster.id=EmptySegmentCluster000\n")
    out = CliRunner().invoke(main, ["ingest", str(log.parent), "--lake", str(tmp_path / "lake")],
                             env={"COLUMNS": "250"})
    assert out.exit_code == 0, out.output
    row = next(ln for ln in out.stdout.splitlines() if "EmptySegmentCluster000" in ln)
    assert "no records" in row and "None" not in row, row


def test_decode_prints_whole_records() -> None:
    """A PartitionRecord's JSON is longer than the 160 characters decode once cut it to:
    `leader_recovery_state`, its last field, is on every such line."""
    out = subprocess.run([sys.executable, "-m", "kraftlake", "decode",
                          str(REPO / "examples" / "real-3-broker")], capture_output=True,
                         text=True, check=True, env=cli_env())
    lines = [ln for ln in out.stdout.splitlines() if " PartitionRecord " in ln]
    assert lines and all(ln.endswith('"leader_recovery_state":0}') for ln in lines), lines[:3]
    assert any(len(ln) > 200 for ln in lines)
