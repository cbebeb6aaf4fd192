"""How fast kraftlake refuses input it can check before Spark starts (issue 22: under 1 s).

Each case is a real `kraftlake` process, timed from start to exit (the Python interpreter's
start and kraftlake's imports included); the median of `--repeat` runs is printed. Asserts
nothing (tests/cli/test_refusals.py checks the answers and that no JVM was launched).

Usage: python benchmarks/refusals.py [--repeat N]
"""

from __future__ import annotations

import argparse
import os
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
    repeat = ap.parse_args().repeat
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
        "kraftlake --help": ["--help"],
    }
    env = {**os.environ, "KRAFTLAKE_STATE_DIR": str(work / "state")}
    print(f"{'refusal':<32} {'median s':>9} {'max s':>7}  exit")
    for name, args in cases.items():
        times, status = [], None
        for _ in range(repeat):
            t0 = time.perf_counter()
            out = subprocess.run([sys.executable, "-m", "kraftlake", *args], cwd=work,
                                 capture_output=True, env=env, check=False)
            times.append(time.perf_counter() - t0)
            status = out.returncode
        print(f"{name:<32} {statistics.median(times):>9.2f} {max(times):>7.2f}  {status}")
    launched = list((work / "state").glob("logs/*.log"))
    print(f"JVMs launched: {len(launched)}")


if __name__ == "__main__":
    main()
