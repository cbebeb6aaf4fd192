"""The one place a Spark session that runs Spark is made, so every job shares settings and the
DataSource (a Spark Connect client session on a `kraftlake serve` endpoint is `serve.connect`'s).

Python workers must run the driver's interpreter (`PYSPARK_PYTHON`), otherwise they start
another Python that cannot import kraftlake and fail to connect back.

Delta is Spark's own connector (delta-spark): its SQL extension and catalog are set here,
and its jars come from the pinned set resolved at setup (`kraftlake.jvm`), plus hadoop-aws
when a URI the job touches is `s3a://`, with kraftlake's own Delta LogStore for s3a
(`jvm/logstore.py`: commit files created by S3's conditional PUT, so writer processes on one
lake cannot replace each other's commits), and for a local master kraftlake's file:// file
system (`jvm/localfs.py`: Hadoop's, without a `chmod` or `readlink` process per file
written). A launcher that already brings jars (`spark-submit --packages io.delta:...`, or
`spark.jars` in the conf) is left to do so.

Quiet by default: the JVM kraftlake launches writes its stdout and stderr (Spark's log4j
lines, the JVM's own warnings, what Delta prints, such as VACUUM's "Deleted N files") to a
log file under the user's state directory (`spark_log()`), not to the console a command's
answer goes to; `--verbose` or `KRAFTLAKE_VERBOSE=1` leaves them on the console. Under
`spark-submit` the driver JVM is the launcher's (it is up before Python starts), so its
output stays where the launcher sends it.

The JVM kraftlake launches maps Spark's classes from a class-data archive in kraftlake's JVM
cache, written by the first JVM that answered one question, at its exit
(`kraftlake.jvm.cds`), and such a JVM takes a quick JIT and the serial collector
(`SHORT_JOB_JVM_OPTIONS`). No JVM kraftlake launches starts Python processes to look for
installed Python data sources (`NO_PYTHON_SOURCE_LOOKUP`).

Arrow's allocations, in the driver and in every Python worker, come from jemalloc where
pyarrow has it, the C library's malloc otherwise (`arrow_pool`), not from pyarrow's default,
mimalloc: on this project's machines the fold's Python spent 40 % of its time making its
output batches under mimalloc, a quarter under jemalloc, the difference mostly time in the
operating system (docs/decisions.md). `$ARROW_DEFAULT_MEMORY_POOL`, when set, wins; a
`spark.executorEnv.ARROW_DEFAULT_MEMORY_POOL` in the conf leaves every allocator as the
user set it (the driver's then pyarrow's own choice).
"""

from __future__ import annotations

import os
import signal
import socketserver
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING

import pyarrow as pa
from pyspark.sql import SparkSession

from .config import Config, load_config
from .jvm import JarResolutionError, resolve
from .jvm.javac import spark_jars
from .jvm.localfs import CLASSES as LOCAL_FS_CLASSES
from .jvm.localfs import CONF as LOCAL_FS_CONF
from .jvm.localfs import local_fs_jar
from .jvm.logstore import (
    CHECKPOINT_MANAGER_CLASS,
    CHECKPOINT_MANAGER_CONF,
    LOG_STORE_CLASS,
    LOG_STORE_CONF,
    log_store_jar,
)
from .uris import s3_options

if TYPE_CHECKING:
    from py4j.java_gateway import JavaGateway
    from pyspark import SparkConf

    from .jvm.cds import ClassArchive

DELTA_CONF = {
    "spark.sql.extensions": "io.delta.sql.DeltaSparkSessionExtension",
    "spark.sql.catalog.spark_catalog": "org.apache.spark.sql.delta.catalog.DeltaCatalog",
    # Delta 4 lists every file of a small table in each commit's checksum, which its commit
    # derives from the previous checksum or, for a table's first commits, from the snapshot:
    # a first ingest creates a dozen tables and paid about a tenth of its CPU for it
    # (examples/real-3-broker into new lakes, one warm session, alternating: 50.5 -> 45.2 and
    # 50.8 -> 45.5 CPU s over 8 ingests). Increments into an existing lake and cold reads of
    # every table cost the same either way (measured 2026-11-28; git log -p -- docs/benchmarks.md).
    "spark.databricks.delta.allFilesInCrc.enabled": "false",
    # The tables an increment replaces slices of are partitioned by cluster_id, and its joins
    # of their rows (old open rows against the ones the kernel rewrote) are on keys that
    # start with cluster_id, so Spark plans a dynamic partition pruning subquery for each.
    # It prunes nothing (every read already filters cluster_id by a literal), and with
    # adaptive execution off and expressions interpreted a task evaluated it before it was
    # computed ("IllegalArgumentException: ... IN dynamicpruning#... has not finished").
    "spark.sql.optimizer.dynamicPartitionPruning.enabled": "false",
}


# pyarrow's own variable: the allocator its default memory pool uses, read at the first use
ARROW_POOL_ENV = "ARROW_DEFAULT_MEMORY_POOL"


def arrow_pool() -> str:
    """The allocator of this process's Arrow buffers (named as `$ARROW_POOL_ENV` names one),
    made the default pool here unless that variable chose: jemalloc where this pyarrow
    build has it, else the system's."""
    named = os.environ.get(ARROW_POOL_ENV)
    if named:
        return named
    if "jemalloc" in pa.supported_memory_backends():
        pa.set_memory_pool(pa.jemalloc_memory_pool())
        return "jemalloc"
    pa.set_memory_pool(pa.system_memory_pool())
    return "system"


def _s3a_conf(conf: dict[str, str]) -> dict[str, str]:
    """Hadoop s3a settings from the AWS environment (`kraftlake.uris`), unless the conf
    sets them: the lake's writer then talks to the same store as the log readers."""
    opts = s3_options()
    out = {"spark.hadoop.fs.s3a.endpoint.region": opts["region"],
           # S3A checks that no object or directory is at a path before creating a file
           # there (a HEAD and a LIST), which no file the lake writes needs: data files have
           # new names, and a file that must not replace another (a commit, a checkpoint)
           # is created with S3's conditional PUT, which the store itself refuses
           "spark.hadoop.fs.s3a.create.performance": "true"}
    if "endpoint" in opts:
        out.update({"spark.hadoop.fs.s3a.endpoint": opts["endpoint"],
                    "spark.hadoop.fs.s3a.path.style.access": "true",
                    "spark.hadoop.fs.s3a.connection.ssl.enabled":
                        str(opts["endpoint"].startswith("https")).lower()})
    return {k: v for k, v in out.items() if k not in conf}


def _jars(conf: dict[str, str], uris: list[str]) -> str | None:
    """`spark.jars` for this session, or None when the launcher or the conf brings them.
    With the s3a jars comes the s3a LogStore's, which `conf` then names, unless it names
    one already (then none is built): delta-storage's default for s3a lets two writer
    processes of one lake replace each other's commit files (`jvm/logstore.py`). The same
    jar's checkpoint file manager writes a stream's checkpoint and Delta's checksum files with
    one PUT each instead of a rename, unless `conf` names another."""
    submitted = os.environ.get("PYSPARK_SUBMIT_ARGS", "")
    if "spark.jars" in conf or "--packages" in submitted or "--jars" in submitted:
        return None
    try:
        jars = resolve("delta")
        if any(str(u).startswith("s3a://") for u in uris):
            jars += resolve("s3")
            if LOG_STORE_CONF not in conf:
                jars.append(log_store_jar())
                conf[LOG_STORE_CONF] = LOG_STORE_CLASS
                conf.setdefault(CHECKPOINT_MANAGER_CONF, CHECKPOINT_MANAGER_CLASS)
    except JarResolutionError as exc:  # one line and exit status 1, not a traceback
        raise SystemExit(f"kraftlake: {exc}") from None
    return ",".join(jars)


def _local_fs(conf: dict[str, str]) -> None:
    """Name kraftlake's file:// file system in `conf` (`jvm/localfs.py`: Hadoop's, without
    a process per file written), its jar on the driver's class path, unless `conf` names
    another file:// file system (one of `LocalFiles.java`'s is given its jar) or there is
    no javac to build it (setup said so; Hadoop's own is used). For a local master only,
    whose executors are the driver's JVM: the launcher opens file:// before `spark.jars`
    are loaded, so the jar must be on the class path the JVM starts with, which a
    cluster's executors do not share."""
    if any(not conf[k].startswith(LOCAL_FS_CLASSES) for k in LOCAL_FS_CONF.keys() & conf.keys()):
        return
    try:
        jar = local_fs_jar()
    except JarResolutionError:
        return
    paths = conf.get("spark.driver.extraClassPath")
    conf["spark.driver.extraClassPath"] = os.pathsep.join([paths, jar]) if paths else jar
    for key, name in LOCAL_FS_CONF.items():
        conf.setdefault(key, name)


def class_archive(conf: dict[str, str] | None = None) -> ClassArchive:
    """The class-data archive (`jvm.cds`) the JVM of a session of `conf` maps or writes:
    Java's, keyed by Spark's jars and by the class path `conf` puts before them
    (`spark.driver.extraClassPath`). Without `conf`, a local session's, kraftlake's local
    file system first on its class path (`_local_fs`): what a benchmark waits for."""
    from .jvm.cds import ClassArchive

    if conf is None:
        conf = {}
        _local_fs(conf)
    extra = [p for p in conf.get("spark.driver.extraClassPath", "").split(os.pathsep) if p]
    return ClassArchive(spark_jars(), extra=extra)


# The driver's heap by the bytes a job reads, when nothing sets `spark.driver.memory`. The
# rows never gather in the driver (the fold runs in the executors' Python workers, the
# decoded source and the work frames are on disk), so the heap holds Spark's and Delta's
# own state and the sort and shuffle buffers of two tasks. A 4 GiB heap for a log of a few
# kilobytes made a small ingest's JVM grow to 2-3 GiB resident (examples/real-3-broker:
# process tree peak 4.3 GiB at 4g, 2.9 GiB at 1g). A week's `large` log (2.1 GB, 12 M
# records) ingests in 3g as fast as in 4g (765 against 779 s), and the process tree then
# peaks at 5.9 GiB against 7.3 (docs/benchmarks.md).
DRIVER_MEMORY_STEPS = ((64 << 20, "1g"), (512 << 20, "2g"))  # (input below, heap)
DRIVER_MEMORY_MAX = "3g"
# An ingest reading less than this is a short job (`SHORT_JOB_JVM_OPTIONS`): it ends within
# a minute or two. A new-process ingest of examples/real-3-broker took 37-40 CPU s and a
# peak process-tree PSS of 1.38-1.41 GiB with them, 63-71 CPU s and 1.62-1.75 GiB without
# (benchmarks/cpu_time.py, alternating, load 4-20).
SHORT_INGEST_BYTES = 64 << 20


def driver_memory(input_bytes: int) -> str:
    """The driver heap for a job reading `input_bytes` (see DRIVER_MEMORY_STEPS)."""
    return next((heap for below, heap in DRIVER_MEMORY_STEPS if input_bytes < below),
                DRIVER_MEMORY_MAX)


VERBOSE_ENV = "KRAFTLAKE_VERBOSE"
STATE_ENV = "KRAFTLAKE_STATE_DIR"
LOGS_KEPT = 20  # a new JVM log per command; older ones beyond this many are deleted


def verbose() -> bool:
    """Whether Spark's and the JVM's own output goes to the console (`--verbose`)."""
    return os.environ.get(VERBOSE_ENV, "").lower() not in ("", "0", "false", "no")


def state_dir() -> Path:
    """kraftlake's per-user directory for what it keeps between runs and away from the
    user's working directory (Spark's logs, its warehouse): $KRAFTLAKE_STATE_DIR, else
    $XDG_STATE_HOME/kraftlake, else ~/.local/state/kraftlake."""
    named = os.environ.get(STATE_ENV)
    if named:
        return Path(named)
    base = os.environ.get("XDG_STATE_HOME") or Path.home() / ".local" / "state"
    return Path(base) / "kraftlake"


_log: Path | None = None  # the log of the JVM this process launched


def spark_log() -> Path | None:
    """The file the JVM this process launched writes its output to (None: none launched
    here, or `--verbose`)."""
    return _log


def _new_log() -> Path:
    """A new log file for this process's JVM; the oldest beyond LOGS_KEPT are deleted."""
    logs = state_dir() / "logs"
    logs.mkdir(parents=True, exist_ok=True)
    for old in sorted(logs.glob("spark-*.log"))[:-LOGS_KEPT]:
        old.unlink(missing_ok=True)
    return logs / f"spark-{time.strftime('%Y%m%dT%H%M%S', time.gmtime())}-{os.getpid()}.log"


# The JIT and collector of a JVM that answers one question and ends (`get_spark(short=
# True)`: a `sql` statement or file, timeline, report, an ingest of a small log). C1 alone
# compiles fast and soon enough for a job of seconds, and the serial collector runs no GC
# threads beside the two cores' work: a cold one-row `sql` of the demo lake took 13.4-14.1 s
# of CPU and 0.76 GiB with them, against 29.5 s and 1.08 GiB with C2 and G1 (load ~25). C1
# alone would also shrink the code cache to 48 MiB, which Spark and Delta fill within
# minutes (the JVM then stops compiling, or fails: tests/conftest.py's C1_ONLY), hence the
# tiered default's size.
# A long job (ingest of a large log, stream, serve, the prompt) keeps Java's defaults: its
# executors run in this JVM and want C2's code.
SHORT_JOB_JVM_OPTIONS = ("-XX:TieredStopAtLevel=1", "-XX:ReservedCodeCacheSize=240m",
                         "-XX:+UseSerialGC")
JAVA_OPTIONS_CONF = "spark.driver.extraJavaOptions"


def _launch(conf: dict[str, str], short: bool) -> None:
    """Start the JVM unless one is running or the launcher started it (`spark-submit`,
    PYSPARK_GATEWAY_PORT): its stdout and stderr in a log file (on the console with
    `--verbose`), Spark's classes from the class-data archive (`jvm.cds`; a short job's
    JVM writes it when there is none), and for a short job the options above: added to
    the driver's Java options the conf already has.

    pyspark starts the JVM on the first SparkContext with the console as its output; the
    gateway launched here first, with the same settings, is the one that context then uses.
    """
    from pyspark import SparkConf, SparkContext
    if SparkContext._gateway is not None or "PYSPARK_GATEWAY_PORT" in os.environ:
        return
    archive = class_archive(conf)
    options = [*(SHORT_JOB_JVM_OPTIONS if short else ()), *archive.jvm_options(write=short)]
    if options:
        conf[JAVA_OPTIONS_CONF] = " ".join(filter(None, [conf.get(JAVA_OPTIONS_CONF),
                                                         *options]))
    spark_conf = SparkConf(loadDefaults=False)
    for k, v in conf.items():
        spark_conf.set(k, v)
    gateway = None
    try:
        with _jvm_ignoring_sigterm():
            gateway = _start_gateway(spark_conf)
    finally:
        archive.claim(gateway.proc.pid if gateway is not None and gateway.proc else None)
    SparkContext._ensure_initialized(gateway=gateway)


@contextmanager
def _jvm_ignoring_sigterm() -> Iterator[None]:
    """SIGTERM ignored while the JVM is launched, so that the JVM inherits that and does
    not install its own handler (HotSpot leaves an ignored termination signal alone).

    A service manager stops a job by sending SIGTERM to its whole process group (systemd's
    default), as a terminal sends Ctrl-C's SIGINT, which pyspark already has the JVM
    ignore: the driver stops the job in order (`kraftlake stream` stops its query, exits
    143), while a JVM that acted on the signal itself would shut down under it and turn the
    stop into a page of py4j errors. The JVM still ends with the driver (pyspark's gateway
    exits when the driver's end of its stdin closes), and SIGKILL still kills it."""
    if threading.current_thread() is not threading.main_thread():
        yield  # only the main thread may change a handler
        return
    previous = signal.signal(signal.SIGTERM, signal.SIG_IGN)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


# At its first data source lookup a JVM looks for Python data sources installed as
# `pyspark_*` packages, in a Python daemon and a worker of their own, whenever `command -v
# $PYSPARK_DRIVER_PYTHON` (python3 when unset) finds a command. The running JVM reads that
# variable otherwise only as the Python of a Spark Connect client's UDFs when $PYSPARK_PYTHON
# is unset, and `get_spark` sets that one. kraftlake reads no such package (it registers its
# own source by name), so the JVMs it launches are given a path that cannot be a command, and
# skip the lookup: a cold one-row `sql` took 13.6-14.5 CPU s and 11.0-11.6 s instead of
# 14.9-16.0 and 12.4-13.3 s, 0.66 GiB instead of 0.76 (benchmarks/cpu_time.py, three runs
# each, 2026-12-04).
NO_PYTHON_SOURCE_LOOKUP = {"PYSPARK_DRIVER_PYTHON": "/dev/null/no-python-data-source-lookup"}


def _start_gateway(spark_conf: SparkConf) -> JavaGateway:
    """pyspark's gateway, its output in kraftlake's Spark log unless `verbose()`, its
    environment this process's with NO_PYTHON_SOURCE_LOOKUP."""
    from pyspark.java_gateway import launch_gateway

    global _log
    with _environment(NO_PYTHON_SOURCE_LOOKUP):
        if verbose():
            return launch_gateway(spark_conf)
        log = _new_log()
        with open(log, "ab") as out:
            try:
                return launch_gateway(spark_conf, popen_kwargs={"stdout": out, "stderr": out})
            finally:
                _log = log


@contextmanager
def _environment(values: dict[str, str]) -> Iterator[None]:
    """`values` in os.environ for the block (pyspark hands the JVM a copy of os.environ),
    as they were after it."""
    before = {k: os.environ.get(k) for k in values}
    os.environ.update(values)
    try:
        yield
    finally:
        for k, v in before.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


def quiet_hangup(server: socketserver.BaseServer | None) -> None:
    """The JVM hanging up on pyspark's accumulator server (`SparkContext._accumulatorServer`)
    is an end, not an error.

    The server's handler means to stop when the JVM closes its connection (its poll counts
    a hang-up as readable), but it then reads a length that never comes, raises EOFError,
    and socketserver prints that as a traceback on stderr. That happens whenever the JVM
    ends first: at every exit (pyspark's atexit kills the JVM while the handler's thread
    still runs), and so after `kraftlake stream` stopped by Ctrl-C or SIGTERM printed its
    one line. Any other error of the server is still printed."""
    if server is None or getattr(server, "quiet_hangup", False):
        return
    report = server.handle_error

    def handle_error(request: object, client_address: object) -> None:
        if not isinstance(sys.exc_info()[1], EOFError):
            report(request, client_address)  # type: ignore[arg-type]

    server.handle_error = handle_error  # type: ignore[method-assign]
    server.quiet_hangup = True  # type: ignore[attr-defined]


def ingest_spark(cfg: Config, master: str | None, sources: list[str],
                 size: int) -> SparkSession:
    """The session of a command that ingests `size` bytes read from `sources` and then
    ends (`ingest`, `demo`): the driver's heap sized to the input, and a short job's JVM
    (`SHORT_JOB_JVM_OPTIONS`) below `SHORT_INGEST_BYTES`."""
    return get_spark(cfg, master=master, uris=sources, input_bytes=size,
                     short=size < SHORT_INGEST_BYTES)


def get_spark(cfg: Config | None = None, master: str | None = None,
              extra_conf: dict[str, str] | None = None,
              uris: list[str] | None = None, input_bytes: int | None = None,
              short: bool = False) -> SparkSession:
    """Get (or create) the session described by the configuration; registers `kraft-metadata`.

    Under `spark-submit` the master given on the command line wins (we only set one when
    the launcher did not). `uris`: the sources the job reads (the lake's is in `cfg`), so
    the s3a jars are added when one of them needs them. `input_bytes`: what the job reads,
    which sizes the driver's heap unless the configuration or the launcher sets it (without
    it, Spark's default: 1g; the commands that read only the lake take that). `short`: the
    JVM answers one question and ends (`SHORT_JOB_JVM_OPTIONS`).

    Args:
        cfg: the job's `Config` (default: `load_config()`'s, with no lake).
        master: Spark's master URL (default: the configuration's, `local[*]`).
        extra_conf: Spark settings on top of the configuration's.
        uris, input_bytes, short: as above.

    Returns:
        The active SparkSession, made if there was none. Example: the notebook
        `examples/kraftlake-api.ipynb`, which the suite runs.
    """
    cfg = cfg or load_config()
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    conf = {"spark.app.name": cfg.spark_app_name, **DELTA_CONF,
            **cfg.spark_conf, **(extra_conf or {})}
    # the Python workers' Arrow allocator: the driver's (Spark hands executorEnv to every
    # worker, a local master's included); a conf that names the workers' is the
    # user's choice, and kraftlake then sets neither
    pool_key = f"spark.executorEnv.{ARROW_POOL_ENV}"
    if pool_key not in conf:
        conf[pool_key] = arrow_pool()
    ours = "PYSPARK_GATEWAY_PORT" not in os.environ  # not spark-submit's JVM, whose conf rules
    if ours:
        # Spark's default is ./spark-warehouse: a directory left wherever a command ran
        conf.setdefault("spark.sql.warehouse.dir",
                        (state_dir() / "spark-warehouse").resolve().as_uri())
    if master or "spark.master" not in os.environ.get("PYSPARK_SUBMIT_ARGS", ""):
        conf["spark.master"] = master or cfg.spark_master
    if ours and conf.get("spark.master", "").startswith("local"):
        # the Python workers import the installed pyspark, not its zip (`python_daemon`);
        # a master from $PYSPARK_SUBMIT_ARGS is not in `conf`: Spark's daemon then
        conf.setdefault("spark.python.daemon.module", "kraftlake.python_daemon")
        if conf["spark.master"] == "local" or conf["spark.master"].startswith("local["):
            _local_fs(conf)  # not local-cluster[...], whose executors are JVMs of their own
    launcher = os.environ.get("PYSPARK_SUBMIT_ARGS", "")
    if input_bytes is not None and "spark.driver.memory" not in conf \
            and "--driver-memory" not in launcher and "spark.driver.memory" not in launcher:
        conf["spark.driver.memory"] = driver_memory(input_bytes)
    locations = [str(cfg.lake), *(uris or [])]
    jars = _jars(conf, locations)
    if jars:
        conf["spark.jars"] = jars
    if any(u.startswith(("s3a://", "s3://")) for u in locations):
        conf.update(_s3a_conf(conf))
    _launch(conf, short)
    builder = SparkSession.builder
    for k, v in conf.items():
        builder = builder.config(k, v)
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    quiet_hangup(getattr(spark.sparkContext, "_accumulatorServer", None))
    from .sources.datasource import KraftMetadataDataSource

    spark.dataSource.register(KraftMetadataDataSource)
    return spark
