"""How fast kraftlake refuses input it can check before Spark starts (issue 22: under 1 s).

Each case is a real `kraftlake` process, timed from start to exit (the Python interpreter's
start and kraftlake's imports included); the median of `--repeat` runs is printed, and the
median CPU seconds of the process, which a loaded machine inflates far less than wall time. Asserts
nothing (tests/cli/test_refusals.py checks the answers and that no JVM was launched).

Usage: python benchmarks/refusals.py [--repeat N] [--before DIR]

`--before DIR`: the `pipelines/` of an earlier commit (`git archive COMMIT pipelines | tar -x
-C DIR`), run through PYTHONPATH in the same virtual environment beside this checkout, so
both columns carry the same load.
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from kraftlake.codec.batch import build_batch, encode_batch

REPO = Path(__file__).resolve().parents[1]
LOG = REPO / "examples" / "real-3-broker" / "__cluster_metadata-0"


def _user_segment(directory: Path) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    seg = directory / "00000000000000000000.log"
    seg.write_bytes(encode_batch(build_batch(0, 0, 0, [b'{"reading": 1}'] * 10)))
    return seg


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--before", type=Path, help="pipelines/ of an earlier commit")
    args = ap.parse_args()
    repeat = args.repeat
    work = Path(tempfile.mkdtemp(prefix="kraftlake-refusals-"))
    empty = work / "empty"
    empty.mkdir()
    seg = _user_segment(work / "telemetry-0")
    cases = {
        "stream --trigger banana": ["stream", str(LOG), "--lake", str(work / "l"),
                                    "--trigger", "banana"],
        "sql, --lake not a lake": ["sql", "SELECT 1", "--lake", str(empty)],
        "timeline, --lake not a lake": ["timeline", "--topic", "t", "--partition", "0",
                                        "--lake", str(empty)],
        "report, --lake not a lake": ["report", "--out", "r.html", "--lake", str(empty)],
        "quality, --lake not a lake": ["quality", "--lake", str(empty)],
        "maintain, --lake not a lake": ["maintain", "--lake", str(empty)],
        "maintain --retention-hours 1": ["maintain", "--lake", str(empty),
                                         "--retention-hours", "1"],
        "ingest, not a metadata log": ["ingest", str(empty), "--lake", str(work / "l")],
        "decode of a user topic": ["decode", str(seg)],
        "sql --remote with --master": ["sql", "SELECT 1", "--remote", "sc://127.0.0.1:1",
                                       "--master", "local[1]"],
        "kraftlake --help": ["--help"],
    }
    env = {**os.environ, "KRAFTLAKE_STATE_DIR": str(work / "state")}
    versions = {"after": env}
    if args.before:
        path = os.pathsep.join(filter(None, [str(args.before), env.get("PYTHONPATH")]))
        versions = {"before": {**env, "PYTHONPATH": path}, **versions}
    one, five, _ = os.getloadavg()
    print(f"load average {one:.1f} / {five:.1f} (1 / 5 min) on {os.cpu_count()} cores")
    print(f"{'refusal':<32}" + "".join(f" {v + ' median s':>17} {'max s':>6} {'CPU s':>6} "
                                       f"{'exit':>4}" for v in versions))
    for name, cmd in cases.items():
        line = f"{name:<32}"
        for venv in versions.values():
            times, cpu, status = [], [], None
            for _ in range(repeat):
                before = resource.getrusage(resource.RUSAGE_CHILDREN)
                t0 = time.perf_counter()
                out = subprocess.run([sys.executable, "-m", "kraftlake", *cmd], cwd=work,
                                     capture_output=True, env=venv, check=False)
                times.append(time.perf_counter() - t0)
                after = resource.getrusage(resource.RUSAGE_CHILDREN)
                cpu.append(after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime)
                status = out.returncode
            line += (f" {statistics.median(times):>17.2f} {max(times):>6.2f} "
                     f"{statistics.median(cpu):>6.2f} {status:>4}")
        print(line, flush=True)
    launched = list((work / "state").glob("logs/*.log"))
    print(f"JVMs launched: {len(launched)}")


if __name__ == "__main__":
    main()
