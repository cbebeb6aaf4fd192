"""Shared test fixtures: where the real KRaft metadata logs are, and the one SparkSession.

The real files come from two places with one layout (`<owner>__<repo>/<path in the repo>`):
the corpus in the repository, `tests/data/kraft-real/` (a few MB, every Kafka version and
record kind; tests/data/README.md), and its extension beside the checkout,
`../shared/fixtures/kraft-real/` (70 MB; $KRAFTLAKE_REAL_FIXTURES overrides the location).
CI always has the extension; a clone alone runs every test on the corpus and says once, in
the terminal summary, that the extension did not run.
"""

from __future__ import annotations

import atexit
import contextlib
import functools
import os
import shutil
import sys
import tempfile
from pathlib import Path

import pytest
import yaml

from tests import shared_jvm

os.environ.setdefault("PYSPARK_PYTHON", sys.executable)

# An xdist worker's __main__ is execnet's bootstrap, without __file__ or __spec__, and
# pyspark.sql.connect takes such a __main__ for a doctest run and exits 0 at import when
# grpc is missing (pyspark/sql/connect/utils.py, check_dependencies). great_expectations
# imports pyspark.sql.connect, so the quality tests would end in SystemExit on a worker.
_main = sys.modules["__main__"]
if getattr(_main, "__spec__", None) is None and not hasattr(_main, "__file__"):
    _main.__file__ = "<pytest-xdist worker>"

REPO = Path(__file__).resolve().parents[1]
CORPUS = REPO / "tests/data/kraft-real"
EXTENSION = Path(os.environ.get("KRAFTLAKE_REAL_FIXTURES",
                                REPO.parent / "shared/fixtures/kraft-real"))
# The corpus first: a file both hold is read from the repository's copy.
ROOTS = (CORPUS, EXTENSION) if EXTENSION.is_dir() else (CORPUS,)


# The one session's settings (docs/architecture.md: one session-scoped SparkSession fixture): two
# cores, few shuffle partitions for small test inputs, UTC so timestamps read the same
# everywhere, no UI. Spark evaluates expressions without generating Java code: on the
# tests' small inputs compiling the generated code was a third of the JVM's CPU (Janino and
# its regex-based code formatter in a profile of an increment), and turning it off cut an
# increment's JVM CPU time by a fifth to a quarter. Adaptive query execution is off: on these
# inputs it has nothing to adapt (one or two shuffle partitions, tables of kilobytes), but it plans
# the rest of a query again after every shuffle stage; off, an in-process ingest of a
# 188-record real log (nurlan-abdullazada) took 11.0-15.8 CPU s of the process tree against
# 13.3-18.3 with it on (three runs each, alternating in one warm session, 2026-11-26, load
# average about 30). The results depend on neither setting; the jobs the tests start as
# processes get the same settings (`cli_env`), except the installed-wheel demo, which runs
# the defaults (generated code, adaptive execution) and is checked against the simulator's
# labels.
TEST_SPARK_CONF = {
    "spark.sql.codegen.wholeStage": "false",
    "spark.sql.codegen.factoryMode": "NO_CODEGEN",
    "spark.sql.adaptive.enabled": "false",
    "spark.ui.enabled": "false",
    "spark.sql.shuffle.partitions": "1",
    "spark.default.parallelism": "2",
    "spark.sql.session.timeZone": "UTC",
    "spark.ui.showConsoleProgress": "false",
    "spark.databricks.delta.snapshotPartitions": "1",
}
# One shuffle partition and one Delta snapshot partition: the tests' tables hold kilobytes,
# and every shuffle stage and every Delta state rebuild then runs one task instead of two.
# Warm ingests of examples/real-3-broker into new lakes, alternating the two settings in one
# session (8 each, idle machine, 2026-11-28): a median 6.25 CPU s against 7.42 with two of
# each, the dearest with one below the median with two.
# Where the number of partitions is what a test is about, it runs with `SEVERAL_PARTITIONS`:
# the modules holding the Spark fold against the sequential replay, the simulator's labels,
# or a lake built in turns or micro-batches against one ingest (`several_partitions`),
# the kill -9 jobs (whose lakes are then compared with a clean ingest of one partition: the
# tables must not depend on it) and the standalone cluster's executors.
SEVERAL_PARTITIONS = {"spark.sql.shuffle.partitions": "2",
                      "spark.databricks.delta.snapshotPartitions": "2"}


# A job a test starts as a process (a CLI ingest, sql, quality, one available-now stream, the
# Kafka tests' user-topic refusals) is a JVM living a few minutes at most, where the C2 compiler
# costs more CPU than its code saves: C1 only (`-XX:TieredStopAtLevel=1`) cut one CLI ingest
# of a 2,067-record log from 130-146 to 99-104 CPU s in the same wall time,
# tests/cluster/test_s3.py (then four CLI jobs) from 750 to 547 CPU s (408 -> 351 s wall),
# tests/cluster/test_standalone.py (driver and executors C1 only) from 1,401 to 887 CPU s
# (462 -> 388 s wall) and the Kafka scenario (its live stream: three micro-batches in about
# five minutes) from 738 to 661 CPU s (345 -> 333 s wall), each run alone on an idle
# machine (benchmarks/cpu_time.py: CPU of the test's process tree). The two cores are
# saturated for the whole suite, so CPU saved is time saved. A JVM that lives for many
# increments wants C2: with the suite's own sessions on C1 only, a whole run took 20.9 min
# against 20.0, their JVMs 1,206 CPU s against 1,124 (2026-11-27, idle machine), so the
# sessions keep tiered compilation (`SESSION_JAVA_OPTIONS`).
# C1 alone also shrinks the JVM's default code cache from 240 MiB to 48 MiB, which Spark and
# Delta fill within two minutes: the JVM then stops compiling, or fails outright when it needs
# a method-handle adapter ("Out of space in CodeCache", an observer-log ingest of the Kafka
# tests, 2026-11-25); hence the size of the tiered default.
C1_ONLY = "-XX:TieredStopAtLevel=1 -XX:ReservedCodeCacheSize=240m"
SHORT_JOB_CONF = {**TEST_SPARK_CONF,
                  "spark.driver.extraJavaOptions": C1_ONLY,
                  "spark.executor.extraJavaOptions": C1_ONLY}

# The sessions of the suite's workers (`spark`) take the serial collector instead of G1: their
# live data is small (tiny tables, Delta's caches), and G1's concurrent marking and its
# parallel GC threads cost a warm increment 0.8-1.8 of its 6-8 JVM CPU s against 0.3-0.5 s
# for the serial collector (8 warm ingests of examples/real-3-broker in one session: 77.2
# against 66.0 JVM CPU s). A whole run (idle machine, 2026-11-27): 19.3 min against 20.0,
# the two sessions' JVMs 1,043 CPU s against 1,124.
# Starting C2 later (`-XX:Tier4*Threshold` at three times the default) cut three pipeline
# modules in one new session from 306.8 to 271.5 JVM CPU s (compilation was 95 of the 306.8),
# but not a whole run, whose sessions live 20 minutes: the groups they run took the same CPU
# (2026-11-27, `benchmarks/suite_cpu.py`), so it is not used.
# What does cut it is cheaper C2 compilations. A worker's session compiles all the while:
# 68,000 methods in five minutes of pipeline tests, 12,500 of them with C2, and the C2
# compilations alone took 141 of the JVM's 423 CPU s (a JFR recording of
# test_ingest_growth, test_maintain and test_restart_points; most of it in Catalyst's tree
# code, megamorphic, where deep inlining buys little). Inlining less deep and less large
# code (`INLINE_LESS`) halved the compilation time, 170 -> 95 s, and the JVM took 371
# against 412 CPU s at the same point (2026-11-28). A young generation of 1 GiB (`-Xmn1g`:
# Serial's default starts at a third of a small initial heap and collects often) cut its
# collections from 21 to 13.5 s. A whole run (idle machine, 2026-11-28): the two sessions'
# JVMs 958 against 1,046 CPU s.
INLINE_LESS = "-XX:MaxInlineLevel=6 -XX:FreqInlineSize=100 -XX:InlineSmallCode=1000"
SESSION_JAVA_OPTIONS = f"-XX:+UseSerialGC -Xmn1g {INLINE_LESS}"
# The sessions write and read local files without Hadoop's checksum layer (the raw local file
# system for `file:` paths, in both of Hadoop's interfaces: Delta's log store takes the
# second), kraftlake's (`jvm/LocalFiles.java`: no process per file written). That layer writes
# a `.crc` beside every file and checks it at every read, 8% of a warm increment's JVM
# samples; 8 warm ingests of examples/real-3-broker in one session took 60.9 and 57.2 CPU s
# without it against 67.0 and 61.8 with it (two sessions each, alternating, idle machine,
# 2026-11-28). Only Hadoop reads those files (Delta's own `<version>.crc` is a file of the
# table, written either way); the tables are the same. Not for the jobs tests start as
# processes, which run kraftlake's own choice (`kraftlake.spark._local_fs`): S3A buffers its
# uploads through the local file system and needs a checksummed class there (a
# ClassCastException in test_s3.py).
SESSION_RAW_LOCAL_FILES = {
    "spark.hadoop.fs.file.impl": "kraftlake.jvm.LocalFiles$Raw",
    "spark.hadoop.fs.AbstractFileSystem.file.impl": "kraftlake.jvm.LocalFiles$RawFs"}


def _conf_file(conf: dict[str, str]) -> str:
    """`conf` as the Spark settings of a kraftlake YAML file (removed when the process ends)."""
    fd, path = tempfile.mkstemp(prefix="kraftlake-test-", suffix=".yaml")
    with os.fdopen(fd, "w") as fh:
        # a stream reads a tail of NoOps at every trigger, as the tests' waits for a log's
        # end expect (tests/sources/test_stream_tail.py and the Kafka scenario's live stream,
        # tests/kafka/conftest.py, hold `stream.noop_every` themselves)
        yaml.safe_dump({"spark": {"conf": conf}, "stream": {"noop_every": 0}}, fh)
    atexit.register(os.unlink, path)
    return path


@functools.cache
def _short_job_conf_file() -> str:
    return _conf_file(SHORT_JOB_CONF)


def cli_env(**extra: str) -> dict[str, str]:
    """The environment of a `kraftlake` job a test starts as a process (the Kafka tests'
    user-topic refusals, the S3 and standalone-cluster jobs): `SHORT_JOB_CONF` through
    $KRAFTLAKE_CONF. On the standalone cluster TEST_SPARK_CONF took an ingest of the example
    log from 182-190 s to 137-140 s (two runs each). The installed-wheel test runs the demo
    on the built-in defaults, so generated code stays covered."""
    return {**os.environ, "KRAFTLAKE_CONF": _short_job_conf_file(), **extra}


def launch_command(state: Path) -> str:
    """The java command line of the newest JVM a `kraftlake` process with
    $KRAFTLAKE_STATE_DIR `state` and $SPARK_PRINT_LAUNCH_COMMAND set started (spark-class
    prints it to the JVM's log)."""
    log = sorted((state / "logs").glob("spark-*.log"))[-1]
    return next(ln for ln in log.read_text().splitlines() if ln.startswith("Spark Command:"))


# A `kraftlake` command a test runs in its own process (click's CliRunner) gets the worker's
# SparkSession, and pyspark's getOrCreate applies the modifiable settings of the command's
# configuration to that session: with the package defaults, the first in-process command of
# a worker left every later test on that worker with 8 shuffle partitions and 4 Delta
# snapshot partitions instead of TEST_SPARK_CONF's 1 and 1. The tests' process reads
# TEST_SPARK_CONF as its configuration instead (test_wheel.py removes it for the installed
# demo, which runs the defaults).
os.environ["KRAFTLAKE_CONF"] = _conf_file(TEST_SPARK_CONF)
# A `kraftlake serve` a test starts records itself under its lake; the reading commands of the
# other tests on that lake answer themselves, as they are asked to (a client session in the
# tests' process would also switch pyspark into Connect mode for the worker's later tests).
# tests/cli/test_serve.py takes the record up where it means to.
os.environ["KRAFTLAKE_NO_RESIDENT"] = "1"


_run_passed = False  # every test of the run passed (`pytest_sessionfinish`)


def _remove_state_dir(path: str) -> None:
    """At exit, once no JVM of the run uses it: the run's own state directory, whole when
    every test passed, else only when nothing was written there (a failing run's logs stay
    for reading)."""
    if _run_passed:
        shutil.rmtree(path, ignore_errors=True)
    else:
        with contextlib.suppress(OSError):  # not empty, or removed already
            os.rmdir(path)


# Spark's logs and warehouse (`kraftlake.spark.state_dir`) away from the user's home: the run's
# own temporary directory, shared by the jobs it starts as processes. Spark's scratch
# directories go there too: a JVM a test kills (kill -9, a stopped stream) leaves its
# `spark-*` directory behind (the delta jars Spark copies in, 9 MB), about a hundred a day
# in /tmp on a machine that runs the suite all day. The directory goes at exit when a run
# passes, or when nothing was written there (a process that imports this module outside
# pytest: benchmarks/suite_cpu.py, for the groups). Only the process that made it removes it:
# the workers inherit it in the environment, so their `_OWN_STATE_DIR` is empty.
# pyproject.toml's `tmp_path_retention_policy` does the same for pytest's temporary
# directories.
if "KRAFTLAKE_STATE_DIR" not in os.environ:
    os.environ["KRAFTLAKE_STATE_DIR"] = _OWN_STATE_DIR = tempfile.mkdtemp(
        prefix="kraftlake-state-")
    os.environ.setdefault("SPARK_LOCAL_DIRS", os.path.join(_OWN_STATE_DIR, "spark-local"))
    atexit.register(_remove_state_dir, _OWN_STATE_DIR)
else:
    _OWN_STATE_DIR = ""


# ------------------------------------------------------------ running on three workers
#
# test.sh runs the suite on three pytest-xdist workers on the machine's two cores: much of it
# waits (Spark's driver planning, JVM starts, a Kafka scenario stepping at Kafka's pace, a
# stream's trigger) while a core idles, and a third worker fills those waits. With every worker's
# session in one JVM (`tests/shared_jvm.py`) a worker adds only its Python process: 2026-12-04,
# two runs each way, alternating, 2 -> 3 workers: pytest 21.3-21.8 -> 20.2-20.9 min, the machine
# idle 153-154 -> 33-39 core-s, the CPU the same (2,319-2,327 -> 2,285-2,336 s). When each worker
# had a JVM of its own, a third cost more than it filled (25.9 against 24.0 min, 2026-12-01). A
# worker takes whole groups (the scheduler below), so a fixture shared by a group is built once:
# packages whose conftest holds session or package fixtures (a Kafka cluster, simulated lakes, the
# cluster tests' reference lake) are one group each, modules sharing a session fixture of
# tests/lakes.py are joined into one (`JOINED`), every other module is a group, and each kill -9
# test is a group of its own (they share nothing and are among the longest).
# (xdist's own `--dist loadgroup` cannot be used: it renames items through an attribute
# pytest 9.2 no longer reads, so its groups silently fall apart.)
PACKAGE_GROUPS = ("cli", "cluster", "kafka", "quality", "report", "simulate")
# module -> the group it joins: they share `busy_once` or `busy_runs`
JOINED = {"tests/pipeline/test_ingest_growth.py": "tests/pipeline/test_maintain.py",
          "tests/pipeline/test_nothing_new.py": "tests/pipeline/test_maintain.py"}

# The groups go to the workers longest first (longest processing time first: whichever
# worker is free takes the longest group left, so the run ends on short groups and the
# workers finish within about one short group of each other). A worker that is handed a group
# of one or two tests asks for the next group at once (xdist needs a worker's next test
# before it runs the current one), so a long group left for the end can keep one worker busy
# for a minute while the others have nothing left: test_wheel.py (one test of about a minute)
# came last in collection order. The seconds are estimates of one worker running the group,
# its fixtures included, summed from `--durations=0` of a whole run at 298b4ce (22.2 min,
# 2026-11-26); only their order matters. A group not listed (each under about 25 s) runs
# after them in collection order; a group that grows long belongs here.
GROUP_SECONDS = (
    # with test_ingest_growth.py and test_nothing_new.py (`JOINED`; the latter's 124 s
    # alone, its `busy_runs` included, on a loaded machine, 2026-12-01)
    ("tests/pipeline/test_maintain.py", 580),
    ("tests/kafka", 430),
    ("tests/quality", 225),
    ("tests/cluster", 560),  # 330 + test_s3_writers.py's two racing processes (160-210 s)
    ("tests/cli", 210),  # 170 + test_python_api.py's notebook runs and reads (2026-11-28)
    ("tests/pipeline/test_kill_restart.py::test_sigkill", 130),
    ("tests/pipeline/test_kill_restart.py::test_ingest_sigkilled", 120),
    ("tests/pipeline/test_kill_restart.py::test_a_stream_stopped", 115),
    ("tests/pipeline/test_kill_restart.py::test_a_full_disk", 90),
    ("tests/pipeline/test_kill_restart.py::test_a_stream_whose", 90),
    ("tests/pipeline/test_restart_points.py", 120),
    ("tests/sources/test_stream_tail.py", 110),
    ("tests/jobs/test_stream_fleet.py", 150),  # one stream process over three clusters
    ("tests/report", 105),
    ("tests/lake/test_delta_engine.py", 100),
    ("tests/pipeline/test_damaged_changes.py", 80),  # measured on a loaded machine: 126 s
    ("tests/pipeline/test_turns.py", 75),
    ("tests/pipeline/test_ingest.py", 70),
    ("tests/pipeline/test_clusters_at_once.py", 150),
    ("tests/test_wheel.py", 60),
    ("tests/simulate", 45),
    ("tests/pipeline/test_reconcile.py", 35),
    ("tests/pipeline/test_dumplog_ingest.py", 30),
    ("tests/fold/test_fold_real.py", 25),
    ("tests/pipeline/test_events_labels.py", 20),
    # a stream of a simulated cluster's log scraped by a real Prometheus (alone, cold
    # session included: 83-92 s, 2026-12-01)
    ("tests/metrics/test_prometheus.py", 60),
)


def group_of(nodeid: str) -> str:
    """The scheduling group of a test, from its node id."""
    module = nodeid.split("::", 1)[0]
    parts = module.split("/")
    if len(parts) > 2 and parts[1] in PACKAGE_GROUPS:
        return "/".join(parts[:2])
    if module.endswith("test_kill_restart.py"):
        return nodeid
    return JOINED.get(module, module)


def _seconds(item: pytest.Item) -> int:
    group = group_of(item.nodeid)
    return next((s for prefix, s in GROUP_SECONDS if group.startswith(prefix)), 0)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    items.sort(key=lambda item: -_seconds(item))  # stable: collection order within a group


class _GroupsPerWorker:
    """xdist's scheduler hook, registered only when xdist runs (pytest refuses a conftest
    hook it has no spec for, e.g. under `-p no:xdist`)."""

    @staticmethod
    def pytest_xdist_make_scheduler(config: pytest.Config, log):
        """Whole groups (`group_of`) to a worker, in collection order."""
        from xdist.scheduler import LoadScopeScheduling

        class GroupScheduling(LoadScopeScheduling):
            def _split_scope(self, nodeid: str) -> str:
                return group_of(nodeid)

        return GroupScheduling(config, log)


def pytest_configure(config: pytest.Config) -> None:
    # Every increment that continues from slices a job held in memory compares them with a
    # fresh read of the lake (`kraftlake.jobs.seed`), in the tests' processes and in the jobs
    # they start; set here, not at import, so the benchmarks that import this module's
    # settings measure what a user runs
    os.environ["KRAFTLAKE_CHECK_HELD"] = "1"
    if config.pluginmanager.hasplugin("xdist"):
        config.pluginmanager.register(_GroupsPerWorker(), "kraftlake-groups-per-worker")
    if shared_jvm.wanted(config):
        shared_jvm.start(_session_conf(SHARED_HEAP), config.option.numprocesses)


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    global _run_passed
    _run_passed = exitstatus == 0


def pytest_unconfigure(config: pytest.Config) -> None:
    shared_jvm.stop()


# the lakes tests build, their fixtures for every package's tests
pytest_plugins = ["tests.lakes"]


def real(relative: str) -> Path:
    """A real file or directory named by its path under a corpus root (its path in
    INVENTORY.md): the repository's copy, else the extension's."""
    for root in ROOTS:
        if (root / relative).exists():
            return root / relative
    raise FileNotFoundError(f"{relative} is in none of {[str(r) for r in ROOTS]}")


def rel(path: Path) -> str:
    """`path` relative to the corpus root that holds it (test ids, INVENTORY.md's paths)."""
    root = next(r for r in ROOTS if path.is_relative_to(r))
    return str(path.relative_to(root))


def _union(paths: dict[Path, list[Path]]) -> list[Path]:
    """One path per relative path over every root, the first root's copy winning."""
    out: dict[str, Path] = {}
    for root in ROOTS:
        for p in paths[root]:
            out.setdefault(str(p.relative_to(root)), p)
    return [out[k] for k in sorted(out)]


def real_files(kind: str) -> list[Path]:
    """Every real segment (`*.log`), snapshot (`*.checkpoint` in a log dir) or bootstrap
    file of the corpus and, when present, its extension."""
    if kind == "segment":
        found = {r: list(r.rglob("*.log")) for r in ROOTS}
    elif kind == "snapshot":
        found = {r: [p for p in r.rglob("*.checkpoint") if p.name != "bootstrap.checkpoint"]
                 for r in ROOTS}
    elif kind == "bootstrap":
        found = {r: list(r.rglob("bootstrap.checkpoint")) for r in ROOTS}
    else:
        raise ValueError(kind)
    return _union(found)


def real_log_dirs() -> list[Path]:
    """Every real `__cluster_metadata-0` directory with a segment, over the same roots."""
    return _union({r: list({p.parent for p in r.rglob("*.log")
                            if p.parent.name == "__cluster_metadata-0"}) for r in ROOTS})


def inventory(root: Path) -> list[list[str]]:
    """The table rows of `root`'s INVENTORY.md as cells: path, kind, bytes, sha256, source,
    batches / records, counts, MV, brokers, PCR LRS/ELR/LKE/Dirs, notes."""
    rows = []
    for line in (root / "INVENTORY.md").read_text().splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if line.startswith("| ") and len(cells) >= 11 and cells[0] != "path":
            rows.append(cells)
    return rows


def pytest_terminal_summary(terminalreporter, exitstatus: int, config: pytest.Config) -> None:
    """The one line saying the extension corpus did not run (nothing is skipped for it: the
    tests that iterate over real files ran on the corpus alone)."""
    if EXTENSION not in ROOTS and not hasattr(config, "workerinput"):  # not on xdist workers
        terminalreporter.write_line(
            f"kraft-real extension not run: {EXTENSION} not found (CI has it; set "
            f"KRAFTLAKE_REAL_FIXTURES): the real-file tests read only the "
            f"{len(real_files('segment') + real_files('snapshot') + real_files('bootstrap'))}"
            f" metadata-log files of {CORPUS.relative_to(REPO)}", yellow=True)


def _session_conf(heap: str) -> dict[str, str]:
    """The settings of the suite's sessions, with a driver heap of `heap`."""
    return {**TEST_SPARK_CONF, **SESSION_RAW_LOCAL_FILES, "spark.driver.memory": heap,
            "spark.driver.extraJavaOptions": SESSION_JAVA_OPTIONS}


# A worker's own session takes the heap `kraftlake ingest` gives a large input
# (`kraftlake.spark.DRIVER_MEMORY_MAX`, 3g): it runs every in-process test's increments, the
# hypothesis fold's 200 logs among them. The JVM the workers share (`tests/shared_jvm.py`)
# holds every worker's session.
SHARED_HEAP = "5g"


@pytest.fixture(scope="session")
def spark():
    """The SparkSession of the whole run, one per xdist worker (pipeline, quality and rules
    tests share it); under `./test.sh` every worker's session runs in one JVM the xdist
    controller started (`tests/shared_jvm.py`), which outlives them."""
    from kraftlake.config import load_config
    from kraftlake.spark import DRIVER_MEMORY_MAX, get_spark

    if os.environ.get(shared_jvm.GATEWAY_ENV):
        shared = shared_jvm.attach(_session_conf(SHARED_HEAP))
        if shared is not None:
            yield shared
            return
    s = get_spark(load_config(), master="local[2]", extra_conf=_session_conf(DRIVER_MEMORY_MAX))
    yield s
    s.stop()


@pytest.fixture(scope="module")
def several_partitions(spark):
    """`SEVERAL_PARTITIONS` for a module's tests and its module fixtures (`pytestmark =
    pytest.mark.usefixtures("several_partitions")`): the kernel then folds the partitions of
    an input in two tasks, as it does on any real input, and a key split between them would
    show. A `kraftlake` command run in the tests' process sets the session back to
    TEST_SPARK_CONF (see `KRAFTLAKE_CONF` above), so such a test comes last in its module."""
    before = {k: spark.conf.get(k) for k in SEVERAL_PARTITIONS}
    for k, v in SEVERAL_PARTITIONS.items():
        spark.conf.set(k, v)
    yield spark
    for k, v in before.items():
        spark.conf.set(k, v)
