"""Servers the cluster tests start themselves on 127.0.0.1: an S3-compatible object store
(moto's server mode) and a Spark standalone cluster (master + workers, each its own JVM and
work directory, from pyspark's own classes). Each is stopped when its test module ends; a
server that does not come up fails the test with its own log."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pyspark

from tests.polling import wait_until
from tests.ports import free_port

BIN = Path(sys.executable).parent


def _wait_port(port: int, proc: subprocess.Popen, log: Path, what: str,
               timeout: float = 120) -> None:
    def listening() -> bool:
        with socket.socket() as s:
            return s.connect_ex(("127.0.0.1", port)) == 0

    wait_until(f"{what} listens on {port}", listening, timeout, interval=0.3,
               failed=lambda: None if proc.poll() is None else f"exited ({proc.returncode})",
               detail=lambda: log.read_text()[-3000:])


def _stop(proc: subprocess.Popen) -> None:
    proc.terminate()
    try:
        proc.wait(30)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


@contextmanager
def s3_server(work: Path) -> Iterator[dict[str, str]]:
    """moto's S3 server; yields the AWS environment that points kraftlake at it."""
    port = free_port()
    log = work / "moto.log"
    with open(log, "w") as out:
        proc = subprocess.Popen([str(BIN / "moto_server"), "-H", "127.0.0.1", "-p", str(port)],
                                stdout=out, stderr=subprocess.STDOUT)
    try:
        _wait_port(port, proc, log, "moto_server")
        yield {"AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing",
               "AWS_REGION": "us-east-1", "AWS_ENDPOINT_URL": f"http://127.0.0.1:{port}"}
    finally:
        _stop(proc)


def _spark_class(cls: str, *args: str, log: Path, env: dict[str, str]) -> subprocess.Popen:
    home = Path(pyspark.__file__).parent
    with open(log, "w") as out:
        return subprocess.Popen([str(home / "bin" / "spark-class"), cls, *args],
                                stdout=out, stderr=subprocess.STDOUT,
                                env={**os.environ, "SPARK_HOME": str(home), **env})


@contextmanager
def spark_standalone(work: Path, workers: int = 2, java_options: str = "") -> Iterator[str]:
    """A master and `workers` workers (1 core, 1 GiB each); yields the master URL.
    `java_options`: the daemons' own JVM options (SPARK_DAEMON_JAVA_OPTS), not the
    executors' (a job's `spark.executor.extraJavaOptions`)."""
    port = free_port()
    env = {"SPARK_LOCAL_IP": "127.0.0.1", "PYSPARK_PYTHON": sys.executable,
           "SPARK_LOG_DIR": str(work), "SPARK_DAEMON_JAVA_OPTS": java_options}
    procs = [_spark_class("org.apache.spark.deploy.master.Master", "--host", "127.0.0.1",
                          "--port", str(port), "--webui-port", str(free_port()),
                          log=work / "master.log", env=env)]
    try:
        _wait_port(port, procs[0], work / "master.log", "Spark master")
        url = f"spark://127.0.0.1:{port}"
        for i in range(workers):
            wdir = work / f"worker-{i}"
            wdir.mkdir()
            log = work / f"worker-{i}.log"
            procs.append(_spark_class(
                "org.apache.spark.deploy.worker.Worker", url, "--host", "127.0.0.1",
                "--cores", "1", "--memory", "1g", "--work-dir", str(wdir),
                "--webui-port", str(free_port()), log=log, env=env))
        wait_until(f"{workers} Spark workers registered with the master",
                   lambda: sum("Successfully registered with master" in (
                       work / f"worker-{i}.log").read_text() for i in range(workers)) >= workers,
                   120, interval=0.5,
                   failed=lambda: next((f"a process exited ({p.returncode})" for p in procs
                                        if p.poll() is not None), None),
                   detail=lambda: "\n".join((work / f"worker-{i}.log").read_text()[-1500:]
                                            for i in range(workers)))
        yield url
    finally:
        for p in reversed(procs):
            _stop(p)
