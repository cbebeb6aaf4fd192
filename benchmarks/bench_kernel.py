"""The kernel's ways of handing partitions to Python, side by side: `mapInArrow` over rows
repartitioned and sorted by partition key, each task writing the tables' files (`tasks`:
`fold.kernel.write_files`, a large increment's path), the driver folding the rows it
collected (`fold.kernel.run_on_driver`, a small increment's path) and
`groupBy(...).applyInArrow` (Spark groups the rows and calls Python once per partition key).

    .venv/bin/python benchmarks/bench_kernel.py                       # large, 1 h, seed 2
    .venv/bin/python benchmarks/bench_kernel.py --scenario mixed --hours 6 --rounds 3
    .venv/bin/python benchmarks/bench_kernel.py --sizes 1000,5000,20000,50000
        # the first N changes of the log, as increments of N changes: where the driver's
        # path stops paying (`ingest.driver_fold_max_records`)
    .venv/bin/python benchmarks/bench_kernel.py --against main --variants tasks,driver
        # also the kernel of git revision `main` (its `fold/kernel.py`, with this
        # checkout's rules), in the same rounds on the same changes: before and after
        # (`tasks` of a revision that has `write_files`)
    .venv/bin/python benchmarks/bench_kernel.py --log /tmp/large24 --variants tasks
        # a log simulated beforehand (bench_first_ingest.py's 24-hour `large` log), beside
        # the replay's fold of the same log: issue 47's "kernel alone" figure

A log is simulated and ingested once; its `partition_changes` (with no seed states and no
open intervals: a first ingest) are then folded by every variant in turn, `--rounds` times:
the tasks' run writes the tables' files into a new lake (what a first ingest's tasks do),
the others' output goes to Spark's `noop` sink. The outputs must hold the same rows
(compared by a hash of every row), or the script exits 1. With `--log`, the reference
replay's fold of that log is timed first: its records decoded beforehand, then applied one
by one (`reference/replay.py`, one core), the yardstick the kernel is held to. Wall and the
driver process's CPU are printed per run, and the CPU of the processes it started (its JVM,
Spark's Python workers; read from /proc, Linux only). Prints figures; asserts nothing about
time.
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from functools import partial
from pathlib import Path
from types import ModuleType
from typing import Any

import pyarrow as pa
from pyspark import cloudpickle
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.pandas.types import to_arrow_schema

from kraftlake.config import load_config
from kraftlake.fold import kernel
from kraftlake.fold.context import cluster_contexts
from kraftlake.fold.silver import KEY
from kraftlake.jobs.batch import ingest
from kraftlake.kraft.troubles import trouble_kinds
from kraftlake.lake.delta import Lake
from kraftlake.lake.schema import table_schema
from kraftlake.reference.replay import Replay, iter_log_records, plan_log_dir, read_records
from kraftlake.simulate.run import simulate_cluster
from kraftlake.spark import get_spark

TICK = os.sysconf("SC_CLK_TCK")
VARIANTS = ("tasks", "driver", "applyInArrow")


def tree_cpu() -> tuple[float, float]:
    """CPU seconds so far of the processes under this one, each with its reaped children's:
    (its JVM, Spark's Python workers and their daemon)."""
    children: dict[int, list[int]] = {}
    cpu: dict[int, tuple[str, float]] = {}
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            stat = Path(f"/proc/{pid}/stat").read_text()
        except OSError:  # exited meanwhile
            continue
        fields = stat[stat.rindex(")") + 2:].split()  # [1]: ppid; [11:15]: CPU
        children.setdefault(int(fields[1]), []).append(int(pid))
        comm = stat[stat.index("(") + 1:stat.rindex(")")]
        cpu[int(pid)] = comm, sum(int(x) for x in fields[11:15]) / TICK
    jvm = python = 0.0
    todo = list(children.get(os.getpid(), ()))
    while todo:
        pid = todo.pop()
        comm, seconds = cpu.get(pid, ("", 0.0))
        if comm == "java":
            jvm += seconds
        else:
            python += seconds
        todo.extend(children.get(pid, ()))
    return jvm, python


def kernel_at(rev: str) -> ModuleType:
    """`fold/kernel.py` as git revision `rev` holds it, loaded beside this checkout's (its
    relative imports read this checkout's modules). Spark's workers get its functions by
    value, as they cannot import it."""
    here = Path(kernel.__file__)
    source = subprocess.run(["git", "show", f"{rev}:pipelines/kraftlake/fold/kernel.py"],
                            cwd=here.parent, check=True, capture_output=True, text=True).stdout
    path = Path(tempfile.mkdtemp(prefix="kernel-at-")) / "kernel.py"
    path.write_text(source)
    name = "kraftlake.fold._kernel_at_" + "".join(c if c.isalnum() else "_" for c in rev)
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    cloudpickle.register_pickle_by_value(module)
    return module


def _apply_one(bc, arrow: pa.Schema, table: pa.Table) -> pa.Table:
    """One partition's rows (in any order) -> its kernel output, by the same
    `fold_batches`."""
    table = table.sort_by([("_role", "ascending"), ("offset", "ascending"),
                           ("seq", "ascending")])
    return pa.Table.from_batches(list(kernel.fold_batches(bc.value, arrow, table.to_batches())),
                                 arrow)


def by_apply(spark: SparkSession, changes: DataFrame, seeds: DataFrame, opened: DataFrame,
             contexts) -> DataFrame:
    """`kernel.run`'s input grouped by partition key through `applyInArrow`."""
    schema = kernel.output_schema()
    arrow = to_arrow_schema(schema, timezone=spark.conf.get("spark.sql.session.timeZone"))
    bc = spark.sparkContext.broadcast(contexts)

    def fold_group(table: pa.Table) -> pa.Table:  # type hints: how pyspark picks the API
        return _apply_one(bc, arrow, table)

    return kernel.input_rows(changes, seeds, opened).groupBy(*KEY).applyInArrow(
        fold_group, schema)


Parts = Callable[[str], DataFrame]  # a kernel's rows of one kind (`kernel.OUTPUTS`)


def frame_parts(out: DataFrame) -> Parts:
    """The kinds of rows of a kernel's output frame (`kernel.output_schema`), once the
    frame was run to Spark's `noop` sink (what is timed)."""
    out.write.format("noop").mode("overwrite").save()
    return lambda kind: kernel.part(out, kind)


def by_tasks(k: ModuleType, spark: SparkSession, work: str, changes: DataFrame,
             seeds: DataFrame, opened: DataFrame, contexts) -> Parts:
    """`kernel.write_files` into a new lake under `work`, as a large increment's tasks write
    a first ingest's tables: the kinds of rows, read back from the files."""
    root = tempfile.mkdtemp(dir=work)
    lake = Lake(root, spark)
    files = k.write_files(spark, changes, seeds, opened, contexts, {
        kind: lake.files_target(table, f"{root}/work") for kind, table in k.TABLES.items()})
    return lambda kind: (files.written[kind].files_frame(spark) if kind in k.TABLES
                         else files.gone_frame(spark))


def digest(part: Parts) -> tuple[tuple[int, int], ...]:
    """(rows, sum of a hash of every row) of each kind of a kernel's rows with a table, and
    of the partitions deleted, read as the table's columns: equal for two kernels that emit
    the same rows, whichever way they hand them over."""
    out_digests = []
    for kind in (*kernel.TABLES, "gone"):
        table = kernel.TABLES.get(kind)
        names = table_schema(table).spark.fieldNames() if table else list(kernel.PARTITION)
        row = part(kind).select(F.count(F.lit(1)),
                                F.sum(F.xxhash64(*names).cast("decimal(38,0)"))).first()
        out_digests.append((row[0], row[1]))
    return tuple(out_digests)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--scenario", default="large")
    ap.add_argument("--hours", type=float, default=1.0)
    ap.add_argument("--seed", type=int, default=2)
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--log", type=Path, default=None,
                    help="a cluster directory holding __cluster_metadata-0, simulated "
                         "beforehand: ingested instead of a new simulation")
    ap.add_argument("--master", default="local[2]")
    ap.add_argument("--sizes", type=lambda v: [int(x) for x in v.split(",")], default=None,
                    help="fold only the first N changes, for each N (default: all of them)")
    ap.add_argument("--against", metavar="REV", default=None,
                    help="also time the kernel of git revision REV on the same changes")
    ap.add_argument("--variants", type=lambda v: v.split(","), default=list(VARIANTS),
                    help=f"which of {','.join(VARIANTS)} to run (default: all; applyInArrow "
                         "only of this checkout's kernel, and not with --sizes)")
    args = ap.parse_args()
    kernels = {"": kernel}
    if args.against:
        kernels[f"@{args.against}"] = kernel_at(args.against)
    with tempfile.TemporaryDirectory(prefix="bench-kernel-") as tmp:
        t0 = time.perf_counter()
        if args.log is None:
            log = Path(tmp) / "log"
            simulate_cluster(log, args.scenario, args.seed, args.hours)
            what = f"simulated and ingested {args.scenario} {args.hours} h seed {args.seed}"
        else:
            log, what = args.log, f"ingested {args.log}"
            seconds, steps = replay_fold(log / "__cluster_metadata-0")
            print(f"replay's fold (records decoded beforehand, one core): {seconds:.2f} s, "
                  f"{steps:,} partition steps", flush=True)
        cfg = load_config(lake=str(Path(tmp) / "lake"))
        spark = get_spark(cfg, master=args.master, input_bytes=sum(
            f.stat().st_size for f in log.rglob("*") if f.is_file()))
        ingest(spark, cfg, [log])
        print(f"{what} in {time.perf_counter() - t0:.1f} s", flush=True)
        lake = Lake(cfg.lake, spark)
        every = lake.read(spark, "partition_changes")
        seeds = lake.read(spark, "partition_current").filter(F.lit(False))
        opened = lake.read(spark, "partition_intervals").filter(F.lit(False))
        topics = lake.read(spark, "topics").select("cluster_id", "topic_id", "topic_name",
                                                   "deleted_offset")
        contexts = cluster_contexts(lake.read(spark, "configs").toArrow(), topics.toArrow(),
                                    cfg.min_insync_replicas_default)
        for size in args.sizes or [None]:
            changes = (every if size is None else every.orderBy("offset", *KEY).limit(size))
            if not _compare(spark, kernels, changes.cache(), seeds, opened, contexts,
                            args.rounds, args.variants if size is None else
                            [v for v in args.variants if v != "applyInArrow"]):
                return 1
        spark.stop()
    return 0


def replay_fold(log: Path, rules: bool = False) -> tuple[float, int]:
    """CPU seconds the reference replay takes to apply the records of metadata-log directory
    `log`, decoded before the clock starts (its fold without its decoding), and the
    partition steps it made. CPU, not wall: the replay runs on one core, and a busy
    machine's waits are not its cost (the kernel's figures are CPU seconds too).

    `rules`: each step's events and trouble kinds too (`Step.events`, `trouble_kinds`), the
    rules the kernel applies beside the fold; the replay's fold alone applies only the
    records (`PartitionRegistration.merge`)."""
    plan = plan_log_dir(log)
    start = plan.start_snapshot
    loaded = list(read_records(start)) if start is not None else []
    records = list(iter_log_records(plan, start.offset - 1 if start is not None else -1))
    replay = Replay()
    t0 = time.process_time()
    made = replay.load_snapshot(loaded, start.offset) if start is not None else []
    steps = len(made)
    for rec in records:
        made = replay.apply(rec)
        steps += len(made)
        if rules:
            for step in made:
                step.events()
                trouble_kinds(step.after, step.context.min_isr)
    return time.process_time() - t0, steps


def _compare(spark: SparkSession, kernels: dict[str, ModuleType], changes: DataFrame,
             seeds: DataFrame, opened: DataFrame, contexts, rounds: int,
             which: list[str]) -> bool:
    """Time the variants on `changes`, of each of `kernels` (suffix -> module); False if
    their outputs differ. A round runs them in turn, the next round in reverse order, so that
    a change in the machine's load falls on each alike."""
    n_changes = changes.count()
    partitions = changes.select(*KEY).distinct().count()
    print(f"{n_changes:,} changes of {partitions:,} partitions; "
          f"{spark.conf.get('spark.sql.shuffle.partitions')} shuffle partitions")
    variants: dict[str, Callable[[], Parts]] = {}
    work = tempfile.mkdtemp(prefix="bench-kernel-files-")
    for suffix, k in kernels.items():
        if "tasks" in which:
            variants[f"tasks{suffix}"] = partial(by_tasks, k, spark, work, changes, seeds,
                                                 opened, contexts)
        if "driver" in which:
            variants[f"driver{suffix}"] = partial(_on_driver, k, spark, changes, seeds, opened,
                                                  contexts)
    if "applyInArrow" in which:
        variants["applyInArrow"] = lambda: frame_parts(by_apply(spark, changes, seeds, opened,
                                                                contexts))
    digests = {name: digest(make()) for name, make in variants.items()}
    for name, kinds in digests.items():
        print(f"{name}: {sum(rows for rows, _h in kinds):,} output rows")
    if len(set(digests.values())) != 1:
        print("the variants' outputs differ", file=sys.stderr)
        return False
    times: dict[str, list[float]] = {name: [] for name in variants}
    cpus: dict[str, list[float]] = {name: [] for name in variants}
    for r in range(rounds):
        for name in list(variants)[::-1 if r % 2 else 1]:
            t0, c0, (jvm0, py0) = time.perf_counter(), time.process_time(), tree_cpu()
            variants[name]()
            wall = time.perf_counter() - t0
            driver = time.process_time() - c0
            jvm, py = (now - before for now, before in zip(tree_cpu(), (jvm0, py0), strict=True))
            times[name].append(wall)
            cpus[name].append(driver + jvm + py)
            print(f"{name}: {wall:.2f} s wall; CPU: driver {driver:.2f} s, JVM {jvm:.2f} s, "
                  f"Python workers {py:.2f} s (load {os.getloadavg()[0]:.2f})", flush=True)
    shutil.rmtree(work, ignore_errors=True)
    for name, ts in times.items():
        print(f"{name}: best {min(ts):.2f} s wall, {min(cpus[name]):.2f} s CPU, "
              f"{n_changes / min(ts):,.0f} changes/s")
    return True


def _on_driver(k: ModuleType, spark: SparkSession, *inputs: Any) -> Parts:
    """`run_on_driver`'s table as a frame, run as the others are."""
    return frame_parts(spark.createDataFrame(k.run_on_driver(spark, *inputs), k.output_schema()))


if __name__ == "__main__":
    raise SystemExit(main())
