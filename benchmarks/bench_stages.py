"""A first ingest's stages: wall seconds (`IncrementResult.stage_seconds`) and the CPU
seconds of the Spark JVM in each, for one log into a new lake, and each table's commit
(`IncrementResult.commit_seconds`).

    kraftlake simulate --out /tmp/large2 --scenario large --hours 2 --no-retention
    .venv/bin/python benchmarks/bench_stages.py /tmp/large2
    .venv/bin/python benchmarks/bench_stages.py /tmp/large2 --repeat 2 --work /tmp/b

The ingest runs as `kraftlake ingest` runs it (`spark.ingest_spark`, `jobs.batch.ingest`),
in this process; the JVM's CPU time (`/proc/<pid>/stat`) is read at each stage's progress
message, so a stage's figure is the JVM work its Spark jobs and planning cost
(silver's column expressions run there; the decoder's and the kernel's Python workers are
not counted). Each repeat writes a new lake, removed afterwards. Prints figures; asserts
nothing.
"""

from __future__ import annotations

import argparse
import itertools
import os
import shutil
import tempfile
import time
from pathlib import Path

from kraftlake.config import load_config
from kraftlake.jobs.batch import ingest
from kraftlake.jobs.inputs import find_inputs, input_bytes
from kraftlake.spark import ingest_spark


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("cluster", type=Path, help="a directory holding __cluster_metadata-0")
    ap.add_argument("--repeat", type=int, default=1, help="ingests, each into a new lake")
    ap.add_argument("--work", type=Path, help="write the lakes here (default: a temp dir)")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(dir=args.work) as tmp:
        cfg = load_config(lake=str(Path(tmp) / "lake"))
        size = input_bytes(find_inputs([str(args.cluster)], None, cfg))
        spark = ingest_spark(cfg, None, [str(args.cluster)], size)
        jvm = spark.sparkContext._jvm
        assert jvm is not None
        stat = Path(f"/proc/{jvm.java.lang.ProcessHandle.current().pid()}/stat")
        tick = os.sysconf("SC_CLK_TCK")

        def jvm_cpu() -> float:  # utime + stime, after the command name (which may hold spaces)
            fields = stat.read_text().rsplit(")", 1)[1].split()
            return (int(fields[11]) + int(fields[12])) / tick

        for i in range(args.repeat):
            cfg = load_config(lake=str(Path(tmp) / f"lake{i}"))
            marks: list[tuple[str, float]] = []
            t = time.perf_counter()
            (res,) = ingest(spark, cfg, [str(args.cluster)],
                            log=lambda m, marks=marks: marks.append(
                                (m.split(":", 1)[0], jvm_cpu())))
            wall = time.perf_counter() - t
            marks.append(("", jvm_cpu()))
            cpu: dict[str, float] = {}
            for (name, a), (_n, b) in itertools.pairwise(marks):
                cpu[name] = cpu.get(name, 0.0) + b - a
            print(f"ingest {i + 1}: {res.records:,} records, {res.changes:,} changes in "
                  f"{wall:.1f} s wall")
            for name, secs in res.stage_seconds.items():
                print(f"  stage {name:<10} {secs:7.1f} s wall {cpu.get(name, 0.0):7.1f} JVM CPU s")
            print("  commits (on three threads at once): " + ", ".join(
                f"{t} {secs:.1f} s" for t, secs in sorted(res.commit_seconds.items(),
                                                          key=lambda c: -c[1])))
            shutil.rmtree(cfg.lake, ignore_errors=True)
        spark.stop()


if __name__ == "__main__":
    main()
