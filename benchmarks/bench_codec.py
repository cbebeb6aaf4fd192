"""Codec throughput: records/s and MB/s on one core, on real fixtures and on a busy log.

Prints figures; asserts nothing. Two inputs:
- every real segment, snapshot and bootstrap file (tests/data/kraft-real and, when present,
  its extension ../shared/fixtures/kraft-real: tests/conftest.py; ~98% NoOpRecords, the
  quorum heartbeat of quiet clusters);
- a generated PartitionChangeRecord-heavy segment (ISR/leader/ELR changes in controller-sized
  batches over 20,000 partitions), written with the codec's own encoder.
Two ways of reading each: Record objects (`iter_file`) and Arrow columns (`decode_columns`),
the form the pipeline's bronze layer consumes.

Usage: python benchmarks/bench_codec.py [--repeat N]
"""

from __future__ import annotations

import argparse
import random
import sys
import tempfile
import time
from pathlib import Path

from kraftlake.codec.batch import build_batch, encode_batch
from kraftlake.codec.columnar import decode_columns
from kraftlake.codec.logfiles import classify, iter_file
from kraftlake.codec.records import encode_metadata_value
from kraftlake.codec.wire import uuid_to_str

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tests.conftest import real_files


def real_paths() -> list[Path]:
    return real_files("segment") + real_files("snapshot") + real_files("bootstrap")


def busy_segment(path: Path, records: int = 300_000, seed: int = 7) -> Path:
    rng = random.Random(seed)
    topics = [uuid_to_str(rng.randbytes(16)) for _ in range(200)]
    out = bytearray()
    offset = 0
    ts = 1_700_000_000_000
    while offset < records:
        values = []
        for _ in range(rng.randint(1, 20)):
            isr = sorted(rng.sample(range(1, 7), rng.randint(1, 3)))
            d = {"partition_id": rng.randrange(100), "topic_id": rng.choice(topics), "isr": isr}
            if rng.random() < 0.4:
                d["leader"] = isr[0]
            if rng.random() < 0.3:
                d["eligible_leader_replicas"] = sorted(set(range(1, 7)) - set(isr))[:2]
                d["last_known_elr"] = []
            values.append(encode_metadata_value("PartitionChangeRecord", 2, d))
        out += encode_batch(build_batch(offset, 5, ts, values))
        offset += len(values)
        ts += rng.randint(1, 500)
    path.write_bytes(out)
    return path


def measure(name: str, paths: list[Path], repeat: int) -> None:
    size = sum(p.stat().st_size for p in paths)
    files = [classify(p) for p in paths]
    for mode in ("objects", "arrow"):
        best = float("inf")
        n = 0
        for _ in range(repeat):
            t0 = time.process_time()
            n = 0
            for lf in files:
                if mode == "objects":
                    for _batch, recs in iter_file(lf):  # type: ignore[arg-type]
                        n += len(recs)
                else:
                    n += decode_columns(lf.path.read_bytes(), str(lf.path)).table.num_rows  # type: ignore[union-attr]
            best = min(best, time.process_time() - t0)
        print(f"{name:<28} {mode:<8} {n:>10,} records  {size / 1e6:8.1f} MB  "
              f"{best:6.2f} s CPU  {n / best:>12,.0f} records/s  {size / 1e6 / best:6.1f} MB/s")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=3, help="best of N runs (default 3)")
    args = ap.parse_args()
    print("one core, CPU time of the decoding process (best of "
          f"{args.repeat}); targets: real >= 1,000,000 rec/s, busy >= 300,000 rec/s")
    measure("real fixtures (243 files)", real_paths(), args.repeat)
    with tempfile.TemporaryDirectory() as tmp:
        seg = busy_segment(Path(tmp) / "00000000000000000000.log")
        measure("PartitionChangeRecord-heavy", [seg], args.repeat)


if __name__ == "__main__":
    main()
