"""Simulator throughput: records generated per second, per scenario.

    .venv/bin/python benchmarks/bench_simulate.py                 # mixed + a 10k-partition day
    .venv/bin/python benchmarks/bench_simulate.py --large         # + the `large` scenario
    .venv/bin/python benchmarks/bench_simulate.py --scenario elr --hours 6

Prints one line per run: records, batches, bytes, partitions, seconds, records/s. The output
directories are temporary and deleted afterwards (pass --keep DIR to keep them).
"""

from __future__ import annotations

import argparse
import shutil
import tempfile
import time
from pathlib import Path

from kraftlake.simulate.cluster import SimConfig
from kraftlake.simulate.scenarios import DEFAULTS, Params, simulate


def run(name: str, root: Path, **over) -> dict:
    d = dict(DEFAULTS.get(name, {}))
    d.update({k: v for k, v in over.items() if v is not None})
    params = Params(**{k: d.pop(k) for k in ("brokers", "topics", "partitions",
                                             "replication_factor", "hours") if k in d})
    out = root / f"{name}-{len(list(root.iterdir()))}"
    cfg = SimConfig(out=out, seed=d.pop("seed", 1), brokers=params.brokers, **d)
    t0 = time.perf_counter()
    s = simulate(name, cfg, params)
    secs = time.perf_counter() - t0
    print(f"{name:<18} {params.brokers:>3} brokers {s['partitions']:>8,} partitions "
          f"{params.hours:>6.1f} h | {s['records']:>11,} records {s['batches']:>10,} batches "
          f"{s['bytes'] / 1e6:>8.1f} MB | {secs:>7.1f} s {s['records'] / secs:>10,.0f} records/s "
          f"({s['partition_steps'] / secs:,.0f} partition changes/s)", flush=True)
    return s


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--scenario", default=None)
    ap.add_argument("--hours", type=float, default=None)
    ap.add_argument("--large", action="store_true", help="also run the `large` scenario")
    ap.add_argument("--keep", type=Path, default=None)
    args = ap.parse_args()
    root = args.keep or Path(tempfile.mkdtemp(prefix="bench-sim-"))
    root.mkdir(parents=True, exist_ok=True)
    try:
        if args.scenario:
            run(args.scenario, root, hours=args.hours)
        else:
            run("mixed", root)
            run("rolling-restart", root, brokers=24, topics=100, partitions=100, hours=6.0)
            if args.large:
                run("large", root)
    finally:
        if args.keep is None:
            shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
