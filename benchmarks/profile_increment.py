"""Where one small increment's time goes: wall time before the first stage and per stage, the
Spark jobs it runs, and what the driver JVM's CPU does (Java Flight Recorder samples).

    .venv/bin/python benchmarks/profile_increment.py                     # examples/real-3-broker
    .venv/bin/python benchmarks/profile_increment.py --log DIR           # another log directory
    .venv/bin/python benchmarks/profile_increment.py --set KEY=VALUE ... # A/B a Spark setting

An increment of a few thousand records is fixed cost: JVM start, table creation, Delta's
commit protocol, Catalyst planning. Knowing which of those dominates says where to cut.
The ingest runs in this process on `local[2]` with the test suite's settings
(`tests/conftest.py` TEST_SPARK_CONF), into a new lake, with the JVM started under JFR; the
recording is dumped with `jcmd` before the session stops (pyspark ends its JVM without
letting JFR write at exit). Samples are grouped by the first matching frame, leaf activities
(class loading, code generation, Java serialization) before the phases that call them.

Prints figures; asserts nothing. Needs a JDK's `jcmd` and `jfr` on PATH.
"""

from __future__ import annotations

import argparse
import collections
import json
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))  # tests.conftest: the suite's Spark settings

from tests.conftest import TEST_SPARK_CONF  # noqa: E402

from kraftlake.config import load_config  # noqa: E402
from kraftlake.jobs.batch import ingest  # noqa: E402
from kraftlake.spark import get_spark  # noqa: E402

# (category, regex over a sample's frames); the first match wins
CATEGORIES = [
    ("class loading", r"ClassLoader\.loadClass"),
    ("code generation (Janino)", r"codegen\.CodeGenerator"),
    ("Java (de)serialization", r"java\.io\.Object(Output|Input)Stream"),
    ("Delta: checksum of a commit", r"RecordChecksum|incrementallyDeriveChecksum"),
    ("Delta: snapshot state (files, skipping)",
     r"Snapshot\.allFiles|StateReconstruction|SnapshotManagement|DataSkippingReader"),
    ("Delta: table creation", r"CreateDeltaTableCommand"),
    ("Delta: commit", r"OptimisticTransactionImpl\.doCommit"),
    ("Parquet write", r"parquet\.hadoop|FileFormatWriter"),
    ("Parquet read", r"parquet"),
    ("Catalyst analysis", r"analysis\.Analyzer|HybridAnalyzer"),
    ("Catalyst optimizer", r"optimizer\.|Optimizer\."),
    ("physical planning", r"QueryPlanner|SparkPlanner|prepareForExecution|AdaptiveSparkPlan"),
    ("executor tasks (compute)", r"executor\.Executor\$TaskRunner"),
    ("py4j calls from Python", r"\bpy4j\."),
    ("scheduler, listeners", r"DAGScheduler|EventLoop|AsyncEventQueue|LiveListenerBus"),
]


def samples(jfr: Path) -> list[list[str]]:
    """The stack (leaf first) of every execution sample in the recording."""
    text = subprocess.run(["jfr", "print", "--events", "jdk.ExecutionSample",
                           "--stack-depth", "1024", str(jfr)],
                          capture_output=True, text=True, check=True).stdout
    out: list[list[str]] = []
    for block in text.split("jdk.ExecutionSample")[1:]:
        frames = re.findall(r"^\s{4}(\S[^(\n]*)", block, re.M)
        out.append([f for f in frames if f not in ("...", "]")])
    return out


def categorize(stacks: list[list[str]]) -> collections.Counter:
    counts: collections.Counter = collections.Counter()
    compiled = [(name, re.compile(p)) for name, p in CATEGORIES]
    for frames in stacks:
        joined = " | ".join(frames)
        counts[next((n for n, p in compiled if p.search(joined)), "other")] += 1
    return counts


def spark_jobs(event_dir: Path) -> tuple[int, float]:
    """(jobs, seconds inside jobs) from the Spark event log."""
    starts: dict[int, int] = {}
    busy = 0
    for f in event_dir.rglob("*"):
        if not f.is_file() or not f.name.startswith("events_"):  # not appstatus, .crc
            continue
        for line in f.read_text().splitlines():
            ev = json.loads(line)
            if ev["Event"] == "SparkListenerJobStart":
                starts[ev["Job ID"]] = ev["Submission Time"]
            elif ev["Event"] == "SparkListenerJobEnd" and ev["Job ID"] in starts:
                busy += ev["Completion Time"] - starts[ev["Job ID"]]
    return len(starts), busy / 1000


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--log", type=Path, default=REPO / "examples" / "real-3-broker",
                    help="a directory holding __cluster_metadata-0 (and meta.properties)")
    ap.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                    help="an extra Spark setting (repeatable)")
    args = ap.parse_args()
    work = Path(tempfile.mkdtemp(prefix="kraftlake-profile-"))
    events = work / "events"
    events.mkdir()
    conf = {**TEST_SPARK_CONF, "spark.eventLog.enabled": "true",
            "spark.eventLog.dir": str(events), "spark.eventLog.compress": "false",
            "spark.driver.extraJavaOptions": "-XX:StartFlightRecording=name=kraftlake,"
            "settings=profile -XX:FlightRecorderOptions:stackdepth=1024",
            **dict(kv.split("=", 1) for kv in args.set)}
    cfg = load_config(lake=str(work / "lake"))
    t0 = time.perf_counter()
    spark = get_spark(cfg, master="local[2]", extra_conf=conf)
    started = time.perf_counter() - t0
    marks: list[tuple[str, float]] = []
    t1 = time.perf_counter()
    (res,) = ingest(spark, cfg, [args.log],
                    log=lambda m: marks.append((m, time.perf_counter() - t1)))
    took = time.perf_counter() - t1
    pid = spark.sparkContext._jvm.java.lang.ProcessHandle.current().pid()
    jfr = work / "driver.jfr"
    subprocess.run(["jcmd", str(pid), "JFR.dump", "name=kraftlake", f"filename={jfr}"],
                   capture_output=True, check=True)
    tables = sum((d / "_delta_log").is_dir() for d in (work / "lake").iterdir())
    spark.stop()

    first_stage = next((t for m, t in marks if m.startswith("decode:")), took)
    jobs, in_jobs = spark_jobs(events)
    print(f"log: {args.log} ({res.records} records, {res.changes} partition changes)")
    print(f"Spark session started in {started:.1f} s; ingest {took:.1f} s, of which "
          f"{first_stage:.1f} s before the first stage (creating {tables} tables, reading "
          f"progress, planning the increment)")
    print("stages (s):", ", ".join(f"{k} {v}" for k, v in res.stage_seconds.items()))
    print(f"Delta commits: {sum(res.commit_seconds.values()):.1f} s in "
          f"{len(res.commit_seconds)} commits")
    print(f"Spark jobs: {jobs}, {in_jobs:.1f} s inside jobs, {took - in_jobs:.1f} s of the "
          f"ingest between them (driver: planning, Delta protocol, Python)")
    counts = categorize(samples(jfr))
    total = sum(counts.values())
    print(f"driver JVM CPU samples: {total}")
    for name, n in counts.most_common():
        print(f"  {100 * n / total:5.1f}%  {name}")
    print(f"work dir (lake, event log, recording): {work}")


if __name__ == "__main__":
    main()
