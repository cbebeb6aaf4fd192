"""The kernel's Python alone, per change, beside the reference replay's fold of the same log.

    .venv/bin/python benchmarks/kernel_python.py /tmp/large24 --rows 300000 --against HEAD~1

The log (a cluster directory holding __cluster_metadata-0, e.g. bench_first_ingest.py's
24-hour `large` log) is ingested once into a temporary lake (or `--lake`, one ingested
beforehand); the kernel's input of a first ingest (every change, no seeds, no open
intervals), key-ordered, and the cluster contexts are then read back and Spark is stopped.
What is timed is `fold.kernel.fold_batches` over the first `--rows` input rows in this
process, one core, no Spark: the Arrow in, the rules, the timeline / event / interval rows
and the Arrow out, i.e. what each kernel task's Python does. `--against REV` also times the
kernel of git revision REV (its `fold/kernel.py`, with this checkout's rules) in alternate
rounds, and both outputs must be equal or the script exits 1; `--against-tree DIR` instead
times the `kraftlake` package under DIR (e.g. `git archive REV pipelines` unpacked: its
kernel and its rules), and this checkout's likewise, each round a process of its own on
the same input and the same Arrow memory pool. The yardsticks, per partition step: the
replay's fold (`reference/replay.py` applying the log's records, decoded beforehand: issue
59's), and the same fold with each step's events and trouble kinds by the rules the kernel
applies (`Step.events`, `trouble_kinds`), the kernel's work less its
rows. And the floor under any Python kernel of these rules (`floor`): the rules a change
must go through (`from_record` / `merge`, `step_events`, `trouble_kinds`) in the plainest
loop over the kernel's own input, and that input read as `fold_batches` reads it (the Arrow
in); then the conversion of the output rows' values alone (each column the kernel converts
row by row made Python values and timed back into Arrow). Prints figures; asserts nothing
about time.
"""

from __future__ import annotations

import argparse
import gc
import os
import pickle
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from types import ModuleType

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.feather as feather
from pyspark.sql import functions as F

from bench_kernel import kernel_at, replay_fold
from kraftlake.config import load_config
from kraftlake.fold import kernel
from kraftlake.fold.context import cluster_contexts
from kraftlake.jobs.batch import ingest
from kraftlake.kraft.events import CHANGED, CREATED, step_events
from kraftlake.kraft.partition import LRS_NO_CHANGE, NO_LEADER_CHANGE, PartitionRegistration
from kraftlake.kraft.troubles import trouble_kinds
from kraftlake.lake.delta import Lake
from kraftlake.spark import get_spark


def kernel_input(log: Path, lake_dir: Path, ingest_first: bool
                 ) -> tuple[pa.Table, dict, pa.Schema]:
    """The kernel's key-ordered input of a first ingest of `log`, its contexts and output
    schema, read from the lake (ingested here when `ingest_first`)."""
    cfg = load_config(lake=str(lake_dir))
    spark = get_spark(cfg, master="local[2]", extra_conf={"spark.driver.memory": "8g"})
    if ingest_first:
        ingest(spark, cfg, [log])
    lake = Lake(cfg.lake, spark)
    seeds = lake.read(spark, "partition_current").filter(F.lit(False))
    opened = lake.read(spark, "partition_intervals").filter(F.lit(False))
    rows = kernel.input_rows(lake.read(spark, "partition_changes"), seeds, opened).toArrow()
    topics = lake.read(spark, "topics").select("cluster_id", "topic_id", "topic_name",
                                               "deleted_offset")
    contexts = cluster_contexts(lake.read(spark, "configs").toArrow(), topics.toArrow(),
                                cfg.min_insync_replicas_default)
    schema = kernel._arrow_output_schema(spark)
    spark.stop()
    return rows.sort_by([(c, "ascending") for c in kernel.ORDER]), contexts, schema


def fold(k: ModuleType, rows: pa.Table, contexts: dict, schema: pa.Schema
         ) -> tuple[float, pa.Table]:
    """CPU seconds of kernel `k` folding `rows`, and its output."""
    batches = rows.to_batches(max_chunksize=10_000)
    t0 = time.process_time()
    out = list(k.fold_batches(contexts, schema, batches))
    return time.process_time() - t0, pa.Table.from_batches(out, schema)


def floor(rows: pa.Table, contexts: dict, out: pa.Table) -> tuple[float, float, float]:
    """CPU seconds of what any Python kernel of these rules pays (cycle collector paused, as
    the kernel's is): reading `rows` as `fold_batches` does, the rules of each change (a
    partition's first row a creation, every other a change; min.insync.replicas and
    metadata.version the context's at its first row), and converting the values of the
    kernel's output `out` from Python lists to Arrow (the columns it converts row by row:
    not those it takes from its input or from the timeline, nor those it converts once per
    run). A lower bound: no state, event or interval row is made, no partition's
    bookkeeping done."""
    gc.disable()
    try:
        t0 = time.process_time()
        window = kernel._Window()
        inputs = [kernel._input(b, window.add(b)) for b in rows.to_batches(max_chunksize=10_000)]
        t1 = time.process_time()
        for r in inputs:
            _rules(r, contexts)
        t2 = time.process_time()
        values = []
        made = kernel._Output(window)
        for kind in kernel.TABLES:
            rows_of = getattr(made, kind)  # what the kernel does not convert row by row
            skip = {*rows_of.inputs, *rows_of.taken, *rows_of.runs}
            struct = out.filter(pc.equal(out["out"], kind)).column(kind).combine_chunks()
            values += [(struct.field(i).to_pylist(), f.type)
                       for i, f in enumerate(struct.type) if f.name not in skip]
        t3 = time.process_time()
        for pylist, type_ in values:
            pa.array(pylist, type_)
        t4 = time.process_time()
    finally:
        gc.enable()
    return t1 - t0, t2 - t1, t4 - t3


def _rules(r: kernel._Input, contexts: dict) -> None:
    """`floor`'s rules over one input batch's rows."""
    empty = kernel.empty_context(1)
    fields, leaders, lrss = r.fields, r.leader, r.leader_recovery_state
    key: tuple | None = None
    state: PartitionRegistration | None = None
    min_isr = mv = None
    for i in range(len(r)):
        if r.key(i) != key:
            key, state = r.key(i), None
            ctx = contexts.get(r.cluster_id[i], empty)
            name = ctx.topic_names.get(r.topic_id[i])
            min_isr, mv = ctx.min_isr(name, r.offset[i], r.seq[i]), \
                ctx.mv_span(r.offset[i], r.seq[i])[0]
        if state is None:
            new, kind = PartitionRegistration.from_record(fields[i]), CREATED
        else:
            new, kind = state.merge(fields[i])[0], CHANGED
        leader, lrs = leaders[i], lrss[i]
        step_events(kind, state, new, min_isr=min_isr, metadata_version=mv,
                    leader_field=NO_LEADER_CHANGE if leader is None else leader,
                    lrs_field=LRS_NO_CHANGE if lrs is None else lrs)
        trouble_kinds(new, min_isr)
        state = new


def fold_saved(saved: Path) -> int:
    """One round in this process on the input `saved` (`--against-tree`'s rounds, run with
    another tree's package first on the path): prints the CPU seconds, writes the output."""
    rows = feather.read_table(saved / "rows.arrow")
    with open(saved / "context.pickle", "rb") as f:
        contexts, schema = pickle.load(f)
    cpu, out = fold(kernel, rows, contexts, schema)
    feather.write_feather(out, saved / "out.arrow")
    print(f"{cpu:.4f}")
    return 0


def fold_tree(tree: Path, saved: Path) -> tuple[float, pa.Table]:
    """The CPU seconds and output of the package under `tree` folding the input `saved`."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(tree), str(Path(__file__).parent)]),
           "ARROW_DEFAULT_MEMORY_POOL": pa.default_memory_pool().backend_name}
    got = subprocess.run([sys.executable, __file__, "--fold-saved", str(saved)], env=env,
                         check=True, capture_output=True, text=True)
    return float(got.stdout.split()[-1]), feather.read_table(saved / "out.arrow")


def main() -> int:
    if sys.argv[1:2] == ["--fold-saved"]:
        return fold_saved(Path(sys.argv[2]))
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("log", type=Path, help="a cluster directory holding __cluster_metadata-0")
    ap.add_argument("--lake", type=Path, default=None, help="the log ingested beforehand")
    ap.add_argument("--rows", type=int, default=300_000)
    ap.add_argument("--rounds", type=int, default=3)
    other = ap.add_mutually_exclusive_group()
    other.add_argument("--against", metavar="REV", default=None)
    other.add_argument("--against-tree", metavar="DIR", type=Path, default=None)
    args = ap.parse_args()
    kernels: dict[str, ModuleType | Path] = {"this checkout": kernel}
    if args.against:
        kernels[args.against] = kernel_at(args.against)
    if args.against_tree:  # both in processes of their own, alike
        kernels = {"this checkout": Path(kernel.__file__).parents[2],
                   str(args.against_tree): args.against_tree}
    saved = Path(tempfile.mkdtemp(prefix="kernel-python-"))
    try:
        return compare(args, kernels, saved)
    finally:
        shutil.rmtree(saved)


def compare(args: argparse.Namespace, kernels: dict[str, ModuleType | Path], saved: Path
            ) -> int:
    """The rounds of `main`: the input made and saved under `saved`, the yardsticks, each
    kernel's best CPU seconds; 1 if their outputs differ."""
    lake = args.lake or saved / "lake"
    rows, contexts, schema = kernel_input(args.log, lake, args.lake is None)
    rows = rows.slice(0, args.rows)
    feather.write_feather(rows, saved / "rows.arrow")
    with open(saved / "context.pickle", "wb") as f:
        pickle.dump((contexts, schema), f)
    for rules, what in ((False, "replay's fold"), (True, "replay's fold, events, troubles")):
        seconds, steps = replay_fold(args.log / "__cluster_metadata-0", rules)
        print(f"{what}: {seconds:.2f} CPU s for {steps:,} partition steps, "
              f"{seconds / steps * 1e6:.1f} us a step")
    best: dict[str, float] = {}
    outputs: dict[str, pa.Table] = {}
    for r in range(args.rounds):
        for name in list(kernels)[::-1 if r % 2 else 1]:
            k = kernels[name]
            cpu, outputs[name] = fold_tree(k, saved) if isinstance(k, Path) else fold(
                k, rows, contexts, schema)
            best[name] = min(best.get(name, cpu), cpu)
            print(f"{name}: {cpu:.2f} CPU s", flush=True)
    floors = [floor(rows, contexts, outputs["this checkout"]) for _ in range(args.rounds)]
    read, rules, convert = (min(f[i] for f in floors) / rows.num_rows * 1e6 for i in range(3))
    print(f"floor: the Arrow in {read:.1f} us and the rules {rules:.1f} us a change "
          f"({read + rules:.1f} us), the output's values into Arrow {convert:.1f} us: "
          f"{read + rules + convert:.1f} us a change before any bookkeeping")
    for name, cpu in best.items():
        print(f"kernel ({name}): {rows.num_rows:,} input rows -> {outputs[name].num_rows:,} "
              f"output rows, best {cpu:.2f} CPU s, {cpu / rows.num_rows * 1e6:.1f} us a change")
    if len({out.num_rows for out in outputs.values()}) > 1 or not all(
            out.equals(outputs["this checkout"]) for out in outputs.values()):
        print("the kernels' outputs differ", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
