"""Wall time of the commands that find nothing to do, each in a new process (issue 59,
item 6: "nothing to do costs no JVM"; goal: an ingest of an unchanged log <= 2 s):

* `kraftlake ingest LOG --lake L` of the log the lake already holds ("nothing new");
* `kraftlake upgrade --lake L` of a lake in this version's layout;
* `kraftlake timeline --lake L --topic T --partition P` that must ask which cluster (the
  lake holds the log under two cluster ids; exit status 2).

    .venv/bin/python benchmarks/nothing_to_do.py [--before DIR] [--runs N]

It ingests `examples/real-3-broker` twice into a temporary lake first (the second time under
another cluster id; not timed). `--before DIR`: the `pipelines/` of an earlier commit (`git
archive COMMIT pipelines | tar -x -C DIR`), run through PYTHONPATH in the same virtual
environment; each command then runs with it and with this checkout, one after the other, so
both carry the same load. Prints each run's wall seconds and the median, and the load
average at the start and the end (the machine is shared).
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

REPO = Path(__file__).resolve().parents[1]
LOG = REPO / "examples" / "real-3-broker"
GOAL = 2.0  # s, the ingest of an unchanged log


def kraftlake(*args: str, code: Path | None = None, ok: tuple[int, ...] = (0,)) -> float:
    """Wall seconds of `kraftlake ARGS` in a new process, of this checkout or of the
    `pipelines/` directory `code`; its exit status must be one of `ok`."""
    env = dict(os.environ)
    if code is not None:
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(code), env.get("PYTHONPATH")]))
    t0 = time.perf_counter()
    out = subprocess.run([sys.executable, "-m", "kraftlake", *args], env=env,
                         capture_output=True, text=True, check=False)
    wall = time.perf_counter() - t0
    if out.returncode not in ok:
        raise SystemExit(f"kraftlake {' '.join(args)}: exit status {out.returncode}\n"
                         f"{out.stderr[-2000:]}")
    return wall


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--before", type=Path, help="pipelines/ of the commit to compare with")
    ap.add_argument("--runs", type=int, default=3)
    a = ap.parse_args()
    print(f"load average {os.getloadavg()[0]:.1f} at the start")
    with tempfile.TemporaryDirectory(prefix="nothing-to-do-") as tmp:
        lake = str(Path(tmp) / "lake")
        kraftlake("ingest", str(LOG), "--lake", lake)
        kraftlake("ingest", str(LOG), "--lake", lake, "--cluster-id", "SecondCluster")
        commands = {
            "ingest, nothing new": (("ingest", str(LOG), "--lake", lake), (0,)),
            "upgrade, lake current": (("upgrade", "--lake", lake), (0,)),
            "timeline, which cluster?": (("timeline", "--lake", lake, "--topic", "_schemas",
                                          "--partition", "0"), (2,)),
        }
        codes: list[tuple[str, Path | None]] = [("this checkout", None)]
        if a.before is not None:
            codes.insert(0, ("before", a.before.resolve()))
        for what, (args, ok) in commands.items():
            walls: dict[str, list[float]] = {name: [] for name, _ in codes}
            for _ in range(a.runs):
                for name, code in codes:
                    walls[name].append(kraftlake(*args, code=code, ok=ok))
            for name, _ in codes:
                runs = ", ".join(f"{w:.1f}" for w in walls[name])
                goal = f" (goal <= {GOAL:.0f} s)" if what.startswith("ingest") else ""
                print(f"{what:26} {name:14} median {statistics.median(walls[name]):5.1f} s"
                      f"  runs: {runs}{goal}")
    print(f"load average {os.getloadavg()[0]:.1f} at the end")


if __name__ == "__main__":
    main()
