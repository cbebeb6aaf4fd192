"""`kraftlake decode` against Kafka's own `kafka-dump-log --cluster-metadata-decoder`.

Whole processes, side by side, on the same files, as an operator would run them: start-up
(Python; the JVM) included. Output goes to /dev/null for both, so what is measured is reading,
decoding and printing every record. Prints wall-clock seconds, records/s and the ratio
(Kafka's time / kraftlake's: above 1 means kraftlake is faster); asserts nothing.

Two inputs:
- every real segment and snapshot (tests/data/kraft-real and, when present, its extension
  ../shared/fixtures/kraft-real: tests/conftest.py; one process each tool);
- a simulated busy log of at least 1 million records (`kraftlake simulate --scenario large`),
  made once into the temp dir.

Needs the pinned Kafka jars (test.sh resolves them) and .venv's `kraftlake` on the PATH.
Usage: python benchmarks/bench_dumplog.py [--hours H | --cluster DIR] [--repeat N]
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from tests.conftest import real_files  # noqa: E402
from tests.kafka.cluster import VERSIONS, java  # noqa: E402
from tests.kafka.dumplog import DUMP  # noqa: E402


def timed(cmd: list[str]) -> float:
    t0 = time.perf_counter()
    subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)
    return time.perf_counter() - t0


def count_records(files: list[Path]) -> int:
    out = subprocess.run(["kraftlake", "decode", "--count", *map(str, files)],
                         capture_output=True, text=True, check=True).stdout
    totals = [ln for ln in out.splitlines() if ln.strip().lower().startswith("total")]
    return int(totals[-1].split()[-1].replace(",", "")) if totals else 0


def compare(label: str, files: list[Path], repeat: int) -> None:
    kafka = java(VERSIONS[0], DUMP, "--cluster-metadata-decoder", "--files",
                 ",".join(map(str, files)), heap="1g")
    ours = ["kraftlake", "decode", *map(str, files)]
    ours_jsonl = [*ours, "--jsonl"]
    t_kafka = min(timed(kafka) for _ in range(repeat))
    t_ours = min(timed(ours) for _ in range(repeat))
    t_jsonl = min(timed(ours_jsonl) for _ in range(repeat))
    n = count_records(files)
    print(f"{label}: {len(files)} files, {n:,} records")
    for name, t in (("kafka-dump-log --cluster-metadata-decoder", t_kafka),
                    ("kraftlake decode (table)", t_ours),
                    ("kraftlake decode --jsonl", t_jsonl)):
        print(f"  {name:44s} {t:8.2f} s  {n / t:12,.0f} records/s")
    print(f"  ratio Kafka / kraftlake: table {t_kafka / t_ours:.2f}x, "
          f"jsonl {t_kafka / t_jsonl:.2f}x (above 1: kraftlake faster)")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--hours", type=float, default=24.0,
                    help="simulated hours of the large scenario (>= 1 M records)")
    ap.add_argument("--cluster", type=Path,
                    help="an already simulated cluster directory instead of --hours")
    ap.add_argument("--repeat", type=int, default=1)
    args = ap.parse_args()
    real = real_files("segment") + real_files("snapshot") + real_files("bootstrap")
    compare("real fixtures", real, args.repeat)
    with tempfile.TemporaryDirectory() as tmp:
        sim, label = args.cluster, f"simulated {args.cluster}"
        if sim is None:
            sim, label = Path(tmp) / "large", f"simulated large ({args.hours:g} h)"
            subprocess.run(["kraftlake", "simulate", "--scenario", "large", "--hours",
                            str(args.hours), "--out", str(sim)], check=True,
                           stdout=subprocess.DEVNULL, env={**os.environ})
        files = sorted((sim / "__cluster_metadata-0").glob("*.log"))
        compare(label, files, args.repeat)
    return 0


if __name__ == "__main__":
    sys.exit(main())
