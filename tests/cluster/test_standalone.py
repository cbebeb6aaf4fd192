"""`kraftlake ingest` and `kraftlake stream` on a real Spark standalone cluster (a master and
two workers on 127.0.0.1, each its own JVM and work directory): the executors decode and
write in other processes than the driver, and the lakes equal a `local[2]` ingest, table for
table, although an executor was killed with SIGKILL in the middle of each job (its tasks run
again elsewhere, the worker starts another executor)."""

from __future__ import annotations

import os
import signal
import subprocess
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
import yaml

from kraftlake.jvm.localfs import local_fs_jar
from kraftlake.lake.delta import Lake
from kraftlake.lake.schema import KRAFTLAKE_DIR, table_names
from kraftlake.spark import class_archive
from tests.cluster.conftest import EXAMPLE, cli_commands
from tests.cluster.servers import spark_standalone
from tests.conftest import C1_ONLY, SEVERAL_PARTITIONS, SHORT_JOB_CONF, cli_env
from tests.lake_rows import table_rows

# ingest_progress and quality_results record runs, not the log
TABLES = [t for t in table_names() if t not in ("ingest_progress", "quality_results")]
CLUSTER_ID = "EP6hyiddQNW5FPrAvR9kWw"  # EXAMPLE's meta.properties
JOBS = [["ingest"], ["stream", "--available-now"]]


def _jvm_options() -> str:
    """Options for the JVMs of the cluster (master, workers, executors), each living only for
    this module: C1 alone and the serial collector, as kraftlake gives a short job's driver
    (`kraftlake.spark.SHORT_JOB_JVM_OPTIONS`), and Spark's classes mapped from kraftlake's
    class-data archive (`kraftlake.jvm.cds`) when one is there: the one the suite's local
    sessions write, whose class path these JVMs are given (`_class_path`). The executors and
    daemons of one cluster ingest took 29-33 CPU s with C1 alone, 28-30 with the serial
    collector too, 21-24 with the archive as well (two runs each, alternating, load
    10-20)."""
    archive = class_archive({"spark.driver.extraClassPath": _class_path()})
    return " ".join([C1_ONLY, "-XX:+UseSerialGC", *archive.jvm_options(write=False)])


def _class_path() -> str:
    """What goes before Spark's jars on the class path of every JVM of the cluster, the
    driver's included: kraftlake's local file system (`jvm/localfs.py`), as a local session
    has it. No conf names it for a cluster, so no class of it is used; it is there because
    Java maps a class-data archive only for the class path it was written with, and the
    local sessions write it."""
    return local_fs_jar()


@pytest.fixture(scope="module")
def master(tmp_path_factory) -> Iterator[tuple[str, Path]]:
    """The master's URL and the cluster's directory (a `worker-<i>` work dir per worker)."""
    work = tmp_path_factory.mktemp("standalone")
    with spark_standalone(work, java_options=_jvm_options(), class_path=_class_path()) as url:
        yield url, work


def _executors(cluster: Path) -> dict[int, Path]:
    """The live executor processes the cluster's workers started: pid -> work directory
    (`<worker dir>/<app id>/<executor id>`, where the executor logs its tasks)."""
    found = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            cmd = (entry / "cmdline").read_bytes()
            cwd = Path(os.readlink(entry / "cwd"))
        except OSError:  # gone meanwhile, or not ours to read
            continue
        if b"CoarseGrainedExecutorBackend" in cmd and cluster in cwd.parents:
            found[int(entry.name)] = cwd
    return found


class ExecutorKiller(threading.Thread):
    """Kills one executor with SIGKILL when each of `moments` (checked in turn) comes: what a
    machine or container lost in the middle of a job does to Spark. `killed`: the work
    directories of the executors it killed."""

    def __init__(self, cluster: Path, moments: list[Callable[[Path], bool]]) -> None:
        super().__init__(daemon=True)
        self.cluster, self.moments = cluster, list(moments)
        self.killed: list[Path] = []
        self.done = threading.Event()

    def run(self) -> None:
        while self.moments and not self.done.is_set():
            for pid, wdir in _executors(self.cluster).items():
                if self.moments[0](wdir):
                    os.kill(pid, signal.SIGKILL)
                    self.killed.append(wdir)
                    self.moments.pop(0)
                    break
            time.sleep(0.05)


def _running_tasks(wdir: Path) -> bool:
    log = wdir / "stderr"
    return log.exists() and "Running task" in log.read_text(errors="replace")


@pytest.fixture(scope="module")
def cluster_lakes(master, tmp_path_factory
                  ) -> tuple[list[tuple[subprocess.CompletedProcess, Path]], list[Path]]:
    """Each job of JOBS run on the cluster into a lake of its own, both in one driver
    process (`cli_commands`): one application, so one driver JVM and one executor on each
    worker instead of two of each. The first job's driver starts the executors; the second's
    tasks run in the same executors, still in other processes than the driver. An executor
    is killed (SIGKILL) once it runs the ingest's first tasks, and another once the stream's
    micro-batch has begun (Spark wrote its offsets); the executors killed come second."""
    work = tmp_path_factory.mktemp("cluster-jobs")
    conf = work / "conf.yaml"
    conf.write_text(yaml.safe_dump({"spark": {"conf": {
        **SHORT_JOB_CONF, **SEVERAL_PARTITIONS,  # the kernel's tasks on both workers
        "spark.executor.extraJavaOptions": _jvm_options(),
        "spark.executor.extraClassPath": _class_path(),
        "spark.driver.extraClassPath": _class_path(),
    }}}))
    lakes = [work / f"{job[0]}-lake" for job in JOBS]
    stream_batch = (lakes[1] / KRAFTLAKE_DIR / "checkpoints" / CLUSTER_ID / "spark" / "offsets"
                    / "0")
    killer = ExecutorKiller(master[1], [_running_tasks, lambda _w: stream_batch.exists()])
    killer.start()
    try:
        runs = cli_commands([[job[0], str(EXAMPLE), *job[1:], "--lake", str(lake),
                              "--master", master[0]]
                             for job, lake in zip(JOBS, lakes, strict=True)],
                            work, cli_env(SPARK_LOCAL_IP="127.0.0.1", KRAFTLAKE_CONF=str(conf)))
    finally:
        killer.done.set()
    return list(zip(runs, lakes, strict=True)), killer.killed


def test_an_executor_was_killed_in_the_middle_of_each_job(cluster_lakes) -> None:
    """The lakes below are the work of jobs that each lost an executor: one killed as the
    ingest's first tasks ran, one after the stream's micro-batch began, each with tasks
    of its application under way or to come."""
    _runs, killed = cluster_lakes
    assert len(killed) == 2, killed
    assert all(_running_tasks(w) for w in killed[:1]), killed


@pytest.mark.parametrize("job", JOBS)
def test_a_cluster_lake_equals_a_local_one(cluster_lakes, job, local_lake) -> None:
    res, lake = cluster_lakes[0][JOBS.index(job)]
    assert res.returncode == 0, res.stderr[-3000:]
    for name in TABLES:
        assert table_rows(Lake(lake), name) == table_rows(Lake(local_lake), name), name


def test_every_worker_ran_tasks_in_an_executor_of_its_own(master, cluster_lakes) -> None:
    """The jobs' tasks ran in executor processes the workers started (each logs its tasks to
    `<work dir>/<app id>/<executor id>/stderr`), on both workers, not in the driver."""
    _, work = master
    for i in range(2):
        logs = list((work / f"worker-{i}").glob("app-*/*/stderr"))
        assert logs, f"worker {i} started no executor"
        assert any("Running task" in log.read_text() for log in logs), \
            f"worker {i}'s executor ran no task: {logs}"
