"""The ingest's own decode step: records/s on one core of `sources.decode.read_range`.

`read_range` is what every Spark task of `kraftlake ingest` / `stream` runs on its byte
range (bytes -> Arrow batches of bronze rows); this times exactly that, in one process, on:

- every real segment and snapshot (tests/data/kraft-real and its extension, as bench_codec;
  quiet clusters: ~98% NoOpRecord heartbeats);
- a PartitionChangeRecord-heavy segment (bench_codec.busy_segment: ISR / leader / ELR
  changes in controller-sized batches);
- a simulated `large`-scenario log (the shape of the 10.7M-record log the first-ingest
  target is about), when `--large DIR` names one (`kraftlake simulate --scenario large`).

Prints records/s per core (CPU time of this process, best of --repeat); asserts nothing.

Usage: python benchmarks/bench_decode.py [--repeat N] [--large DIR]
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_codec import busy_segment, real_paths
from kraftlake.codec.logfiles import classify
from kraftlake.sources.decode import read_range
from kraftlake.sources.files import ReadRange


def ranges(paths: list[Path]) -> list[ReadRange]:
    out = []
    for p in paths:
        lf = classify(p)
        if lf is None or lf.kind not in ("segment", "snapshot"):
            continue
        if lf.kind == "snapshot":
            out.append(ReadRange("bench", str(p), "snapshot", snapshot_end=lf.offset,
                                 snapshot_role="check"))
        else:
            out.append(ReadRange("bench", str(p), "segment", note="rolled"))
    return out


def measure(name: str, rs: list[ReadRange], repeat: int) -> None:
    size = sum(Path(r.path).stat().st_size for r in rs)
    best, n = float("inf"), 0
    for _ in range(repeat):
        t0 = time.process_time()
        n = sum(b.num_rows for r in rs for b in read_range(r))
        best = min(best, time.process_time() - t0)
    print(f"{name:<30} {n:>11,} rows {size / 1e6:9.1f} MB {best:8.2f} s CPU "
          f"{n / best:>11,.0f} records/s per core")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=3, help="best of N runs (default 3)")
    ap.add_argument("--large", type=Path, help="a simulated cluster directory to time too")
    args = ap.parse_args()
    print(f"sources.decode.read_range, one core, best of {args.repeat}")
    measure("real fixtures", ranges(real_paths()), args.repeat)
    with tempfile.TemporaryDirectory() as tmp:
        seg = busy_segment(Path(tmp) / "00000000000000000000.log")
        measure("PartitionChangeRecord-heavy", ranges([seg]), args.repeat)
    if args.large is not None:
        log = args.large / "__cluster_metadata-0"
        measure(f"simulated {args.large.name}", ranges(sorted(log.iterdir())), args.repeat)


if __name__ == "__main__":
    main()
