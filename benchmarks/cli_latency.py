"""How long a question to the lake takes, side by side in one run: a one-row `kraftlake sql`
cold (a new process and JVM), the same through `kraftlake serve` (`--remote`), ten
statements in one session (`sql -f`) against one cold query, and the peak resident memory
of the process tree of a cold `sql`, `timeline` and `report` (issue 22's goals: <= 2 s
through serve, <= 8 s cold, ten <= 1.5x one cold, <= 1 GiB each).

    .venv/bin/python benchmarks/cli_latency.py [--lake LAKE] [--before DIR]

Without `--lake` it ingests `examples/real-3-broker` into a temporary lake first (not
timed). `--before DIR`: the `pipelines/` of an earlier commit (`git archive COMMIT
pipelines | tar -x -C DIR`), run through PYTHONPATH in the same virtual environment; each
cold command then runs with it and with this checkout, one after the other, so both carry
the same load. Before the cold commands it makes sure the JVM's class-data archive exists
(`kraftlake.jvm.cds`), timing the run that writes it. Each command runs in a session of its
own and is sampled every 0.2 s (`cpu_time.measure`): wall seconds, CPU seconds and
peak RSS of the process tree. On a shared machine the figures carry its load (printed at
the start and the end).
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

import cpu_time

REPO = Path(__file__).resolve().parents[1]
ONE_ROW = ("SELECT topic_name, partition_id, leader FROM partition_current "
           "ORDER BY topic_name, partition_id LIMIT 1")
GOALS = {"serve": 2.0, "cold": 8.0, "ten/cold": 1.5, "rss": 1.0}


def run(*args: str, code: Path | None = None) -> tuple[float, float, float, str]:
    """Wall seconds, CPU seconds and peak process-tree RSS (GiB) and stdout of `kraftlake
    ARGS`, of this checkout or of the `pipelines/` directory `code`."""
    env = dict(os.environ)
    if code is not None:
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(code),
                                                          env.get("PYTHONPATH")]))
    with tempfile.TemporaryFile() as out:
        status, wall, cpu, _procs, peak, _pss = cpu_time.measure(
            [sys.executable, "-m", "kraftlake", *args], out, env, err=subprocess.DEVNULL)
        out.seek(0)
        text = out.read().decode()
    if status != 0:
        raise SystemExit(f"kraftlake {' '.join(args)}: exit status {status}")
    return wall, cpu, peak / 2**30, text


def row(what: str, secs: float | None = None, rss: float | None = None, note: str = "",
        cpu: float | None = None) -> None:
    s = f"{secs:7.1f} s" if secs is not None else " " * 9
    c = f"{cpu:6.1f} s CPU" if cpu is not None else " " * 12
    r = f"{rss:5.2f} GiB" if rss is not None else " " * 9
    print(f"{what:<46} {s}  {c}  {r}  {note}", flush=True)


def load() -> str:
    one, five, _ = os.getloadavg()
    return f"load average {one:.1f} / {five:.1f} (1 / 5 min) on {os.cpu_count()} cores"


def prime_class_archive(lake: str) -> None:
    """Make sure the class-data archive exists (`kraftlake.jvm.cds`): a first `sql` writes it
    after its answer, in its JVM's exit; wait for that JVM."""
    from kraftlake.spark import class_archive

    archive = class_archive()
    if archive.path.exists():
        row("class-data archive: present", note=str(archive.path))
        return
    wall, cpu, rss, _ = run("sql", ONE_ROW, "--lake", lake)
    row("sql, the first: writes the class archive", wall, rss, "until its answer", cpu)
    t0 = time.monotonic()
    for claim in archive.path.parent.glob(f"{archive.path.name}.*.jvm"):
        pid = claim.read_text().strip()
        while pid.isdigit() and Path(f"/proc/{pid}").exists():
            time.sleep(0.5)
    row("  its JVM writing the archive after that", time.monotonic() - t0)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--lake", help="lake to query (default: examples/real-3-broker ingested)")
    ap.add_argument("--before", type=Path, help="pipelines/ of an earlier commit")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="kraftlake-latency-") as tmp:
        measure(args.lake, Path(tmp), args.before)


def measure(lake: str | None, tmp: Path, before: Path | None) -> None:
    if lake is None:
        lake = str(tmp / "lake")
        run("ingest", str(REPO / "examples/real-3-broker"), "--lake", lake)
    print(f"lake {lake}; at the start: {load()}", flush=True)

    t0 = time.monotonic()
    subprocess.run([sys.executable, "-c", "import kraftlake.cli"], check=True)
    row("python: import kraftlake.cli", time.monotonic() - t0)
    prime_class_archive(lake)

    script = tmp / "ten.sql"
    script.write_text("".join(f"{ONE_ROW.replace('LIMIT 1', f'LIMIT {i}')};\n"
                              for i in range(1, 11)))
    versions = [("before", before), ("after", None)] if before else [("", None)]
    cold = {}
    for label, code in versions:
        wall, cpu, rss, text = run("sql", ONE_ROW, "--lake", lake, "--format", "json",
                                   code=code)
        first = json.loads(text)[0]
        cold[label] = wall
        row(f"sql, one row, cold {label}", wall, rss,
            f"goal <= {GOALS['cold']:.0f} s, <= {GOALS['rss']:.0f} GiB", cpu)
    for label, code in versions:
        wall, cpu, rss, _ = run("sql", "-f", str(script), "--lake", lake, code=code)
        row(f"sql -f, ten statements, one session {label}", wall, rss,
            f"{wall / cold[label]:.2f}x one cold (goal <= {GOALS['ten/cold']}x)", cpu)
    for label, code in versions:
        wall, cpu, rss, _ = run("timeline", "--lake", lake, "--topic", first["topic_name"],
                                "--partition", str(first["partition_id"]), code=code)
        row(f"timeline, cold {label}", wall, rss, f"goal <= {GOALS['rss']:.0f} GiB", cpu)
    for label, code in versions:
        wall, cpu, rss, _ = run("report", "--lake", lake, "--out",
                                str(tmp / f"report{label}.html"), code=code)
        row(f"report, cold {label}", wall, rss, f"goal <= {GOALS['rss']:.0f} GiB", cpu)

    t0 = time.monotonic()
    server = subprocess.Popen([sys.executable, "-m", "kraftlake", "serve", "--lake", lake,
                               "--port", "0"], stdout=subprocess.PIPE,
                              stderr=subprocess.DEVNULL, text=True, start_new_session=True)
    try:
        found = re.search(r"sc://\S+:\d+", server.stdout.readline())
        if not found:
            raise SystemExit("serve did not start")
        url = found.group(0)
        row("serve: start until it listens", time.monotonic() - t0,
            cpu_time.session_usage(server.pid)[1] / 2**30)
        for i in (1, 2, 3):
            wall, cpu, rss, _ = run("sql", "--remote", url, ONE_ROW)
            row(f"sql --remote, one row (#{i})", wall, rss,
                f"goal <= {GOALS['serve']:.0f} s", cpu)
        wall, cpu, rss, _ = run("sql", "-f", str(script), "--remote", url)
        row("sql -f --remote, ten statements", wall, rss, cpu=cpu)
        wall, cpu, rss, _ = run("timeline", "--remote", url, "--topic", first["topic_name"],
                                "--partition", str(first["partition_id"]))
        row("timeline --remote", wall, rss, cpu=cpu)
        wall, cpu, rss, _ = run("report", "--remote", url, "--out", str(tmp / "remote.html"))
        row("report --remote", wall, rss, cpu=cpu)
        row("serve: resident after the queries", None,
            cpu_time.session_usage(server.pid)[1] / 2**30)
    finally:
        os.killpg(server.pid, signal.SIGTERM)
        server.wait(120)
    print(f"at the end: {load()}", flush=True)


if __name__ == "__main__":
    main()
