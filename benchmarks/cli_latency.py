"""How long a question to the lake takes, side by side in one run: a one-row `kraftlake sql`
cold (a new process and JVM), the same through `kraftlake serve` (`--remote`), ten
statements in one session (`sql -f`) against one cold query, and the peak resident memory
of the process tree of a cold `sql`, `timeline` and `report` (issue 22's goals: <= 2 s
through serve, <= 8 s cold, ten <= 1.5x one cold, <= 1 GiB each).

    .venv/bin/python benchmarks/cli_latency.py [--lake LAKE]

Without `--lake` it ingests `examples/real-3-broker` into a temporary lake first (not
timed). Each command runs in a session of its own and is sampled every 0.2 s
(`cpu_time.session_usage`). One run, one line per measurement; on a shared machine the
figures carry its load (printed first).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from cpu_time import session_usage

REPO = Path(__file__).resolve().parents[1]
KRAFTLAKE = str(Path(sys.executable).with_name("kraftlake"))
ONE_ROW = ("SELECT topic_name, partition_id, leader FROM partition_current "
           "ORDER BY topic_name, partition_id LIMIT 1")
GOALS = {"serve": 2.0, "cold": 8.0, "ten/cold": 1.5, "rss": 1.0}


def run(*args: str) -> tuple[float, float, str]:
    """Wall seconds, peak process-tree RSS (GiB) and stdout of `kraftlake ARGS`."""
    with tempfile.TemporaryFile() as out:
        t0 = time.monotonic()
        proc = subprocess.Popen([KRAFTLAKE, *args], start_new_session=True, stdout=out,
                                stderr=subprocess.DEVNULL)
        peak = 0
        while proc.poll() is None:
            peak = max(peak, session_usage(proc.pid)[1])
            time.sleep(0.2)
        wall = time.monotonic() - t0
        out.seek(0)
        text = out.read().decode()
    if proc.returncode != 0:
        raise SystemExit(f"kraftlake {' '.join(args)}: exit status {proc.returncode}")
    return wall, peak / 2**30, text


def row(what: str, secs: float | None = None, rss: float | None = None, note: str = "") -> None:
    s = f"{secs:7.1f} s" if secs is not None else " " * 9
    r = f"{rss:5.2f} GiB" if rss is not None else " " * 9
    print(f"{what:<44} {s}  {r}  {note}", flush=True)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--lake", help="lake to query (default: examples/real-3-broker ingested)")
    lake = ap.parse_args().lake
    with tempfile.TemporaryDirectory(prefix="kraftlake-latency-") as tmp:
        measure(lake, Path(tmp))


def measure(lake: str | None, tmp: Path) -> None:
    if lake is None:
        lake = str(tmp / "lake")
        run("ingest", str(REPO / "examples/real-3-broker"), "--lake", lake)
    load = os.getloadavg()
    print(f"lake {lake}; {os.cpu_count()} cores, load average {load[0]:.1f} / {load[1]:.1f} "
          f"(1 / 5 min)", flush=True)

    t0 = time.monotonic()
    subprocess.run([sys.executable, "-c", "import kraftlake.cli"], check=True)
    row("python: import kraftlake.cli", time.monotonic() - t0)

    cold, cold_rss, text = run("sql", ONE_ROW, "--lake", lake, "--format", "json")
    first = json.loads(text)[0]
    row("sql, one row, cold", cold, cold_rss,
        f"goal <= {GOALS['cold']:.0f} s, <= {GOALS['rss']:.0f} GiB")

    script = tmp / "ten.sql"
    script.write_text("".join(f"{ONE_ROW.replace('LIMIT 1', f'LIMIT {i}')};\n"
                              for i in range(1, 11)))
    ten, ten_rss, _ = run("sql", "-f", str(script), "--lake", lake)
    row("sql -f, ten statements in one session", ten, ten_rss,
        f"{ten / cold:.2f}x one cold (goal <= {GOALS['ten/cold']}x)")

    tl, tl_rss, _ = run("timeline", "--lake", lake, "--topic", first["topic_name"],
                        "--partition", str(first["partition_id"]))
    row("timeline, cold", tl, tl_rss, f"goal <= {GOALS['rss']:.0f} GiB")
    rp, rp_rss, _ = run("report", "--lake", lake, "--out", str(tmp / "report.html"))
    row("report, cold", rp, rp_rss, f"goal <= {GOALS['rss']:.0f} GiB")

    t0 = time.monotonic()
    server = subprocess.Popen([KRAFTLAKE, "serve", "--lake", lake, "--port", "0"],
                              stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
                              start_new_session=True)
    try:
        found = re.search(r"sc://\S+:\d+", server.stdout.readline())
        if not found:
            raise SystemExit("serve did not start")
        url = found.group(0)
        row("serve: start until it listens", time.monotonic() - t0,
            session_usage(server.pid)[1] / 2**30)
        for i in (1, 2, 3):
            secs, rss, _ = run("sql", "--remote", url, ONE_ROW)
            row(f"sql --remote, one row (#{i})", secs, rss,
                f"goal <= {GOALS['serve']:.0f} s")
        secs, rss, _ = run("sql", "-f", str(script), "--remote", url)
        row("sql -f --remote, ten statements", secs, rss)
        secs, rss, _ = run("timeline", "--remote", url, "--topic", first["topic_name"],
                           "--partition", str(first["partition_id"]))
        row("timeline --remote", secs, rss)
        secs, rss, _ = run("report", "--remote", url, "--out", str(tmp / "remote.html"))
        row("report --remote", secs, rss)
        row("serve: resident after the queries", None, session_usage(server.pid)[1] / 2**30)
    finally:
        os.killpg(server.pid, signal.SIGTERM)
        server.wait(120)


if __name__ == "__main__":
    main()
