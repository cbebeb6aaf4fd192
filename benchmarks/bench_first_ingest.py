"""A first ingest of a whole log against one Python loop: `kraftlake ingest` in a new process
into a new lake, beside the sequential replay (`reference/replay.py`) of the same log on one
core, in a process of its own. The figure issue 47 asks for: ingest / replay.

    kraftlake simulate --out /tmp/large24 --scenario large --hours 24 --no-retention  # 1.6M
    kraftlake simulate --out /tmp/large7d --scenario large                # 7 days, 10.7M, 11 min
    .venv/bin/python benchmarks/bench_first_ingest.py /tmp/large24
    .venv/bin/python benchmarks/bench_first_ingest.py /tmp/large7d --no-replay
    .venv/bin/python benchmarks/bench_first_ingest.py /tmp/large24 --before /tmp/before/pipelines
        # also an earlier checkout's pipelines/ (`git worktree add`), first, in the same run

Each ingest is measured as `cpu_time.py` measures a command: wall seconds, the CPU seconds
of every process it started (driver, JVM, Python workers), peak PSS. The lakes are written
under a temporary directory (or `--work`) and removed. Prints figures; asserts nothing.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from cpu_time import measure

REPLAY = ("import sys, time; from pathlib import Path; "
          "from kraftlake.reference.replay import replay_dir; t = time.perf_counter(); "
          "_, steps = replay_dir(Path(sys.argv[1])); print(time.perf_counter() - t, len(steps))")


def measured(cmd: list[str], env: dict[str, str]) -> tuple[float, float, float]:
    """(wall s, CPU s of the process tree, peak PSS GiB) of `cmd`, its output discarded."""
    code, wall, cpu, _procs, _rss, pss = measure(cmd, env=env)
    if code:
        raise SystemExit(f"{' '.join(cmd)}: exit {code}")
    return wall, cpu, pss / 2**30


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("cluster", type=Path, help="a directory holding __cluster_metadata-0")
    ap.add_argument("--before", type=Path, metavar="PIPELINES",
                    help="an earlier checkout's pipelines/ directory, measured first")
    ap.add_argument("--no-replay", action="store_true", help="skip the replay")
    ap.add_argument("--work", type=Path, help="write the lakes here (default: a temp dir)")
    args = ap.parse_args()
    log = args.cluster / "__cluster_metadata-0"
    replay = None
    if not args.no_replay:
        out = subprocess.run([sys.executable, "-c", REPLAY, str(log)], check=True,
                             capture_output=True, text=True).stdout.split()
        replay = float(out[0])
        print(f"replay (one core): {replay:.1f} s, {int(out[1]):,} steps")
    runs = [("before", args.before), ("this checkout", None)] if args.before else \
        [("this checkout", None)]
    with tempfile.TemporaryDirectory(dir=args.work) as tmp:
        for name, pipelines in runs:
            env = dict(os.environ)
            if pipelines is not None:
                env["PYTHONPATH"] = str(pipelines)
            lake = Path(tmp) / name.replace(" ", "-")
            wall, cpu, pss = measured([sys.executable, "-m", "kraftlake", "ingest",
                                       str(args.cluster), "--lake", str(lake)], env)
            ratio = f", ingest / replay {wall / replay:.1f}x" if replay else ""
            print(f"{name}: first ingest {wall:.1f} s wall, {cpu:.1f} CPU s, peak PSS "
                  f"{pss:.2f} GiB{ratio}")
            shutil.rmtree(lake, ignore_errors=True)


if __name__ == "__main__":
    main()
