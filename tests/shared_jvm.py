"""One Spark driver JVM for both test workers: the xdist controller starts it, each worker's
`spark` fixture attaches to it with a session of its own.

Why: a session JVM spends much of its CPU compiling Spark's, Delta's and kraftlake's hot code
(its C1 and C2 compiler threads took 106 of a worker session's first 282 CPU s, 2026-12-03),
and two workers running the same library code in two JVMs compile it twice. One JVM compiles
it once and starts once.

How: the controller (`start`, from `pytest_configure`) builds the session with
`kraftlake.spark.get_spark` in a thread while the workers start, opens a py4j gateway per
worker (pyspark's own `Py4JServer`) and writes their ports and secrets to a file named by
`$KRAFTLAKE_TEST_GATEWAY` (the workers inherit the variable). A gateway of its own matters:
py4j calls Python back (a stream's `foreachBatch`) through the one Python callback server
its gateway was last given, so two workers on one gateway would receive each other's calls.
A worker (`attach`) connects to its gateway as pyspark connects to one `spark-submit`
started, wraps the running SparkContext, and takes `newSession()` of it: its own SQL
settings, temporary views, registered data sources and streaming queries, the SparkContext,
catalog and cache shared. `kraftlake.spark.get_spark` in the worker then returns that
session, as it returns an existing one. The lake's tables are registered in the shared
catalog under their own names (`Lake.register_views`), so each worker's session works in a
database of its own (`gw0`, `gw1`): otherwise one worker's `kraftlake sql` re-registers
`partition_events` over its lake while the other's test counts its own. The JVM runs
`local[4]`: the two task threads each worker's own JVM had. The workers never stop the
context; the controller stops it when the run ends, and the JVM ends with the controller.

A thread of the JVM that no Python call gave an active session (a new py4j connection,
i.e. a new Python thread) falls back to the JVM's default session, which the controller
keeps as its own: it has the workers' base settings, not one worker's current ones. The
code that commits from threads gives them the lake's session (`Lake.own_session`).

`$KRAFTLAKE_TEST_SHARED_JVM=0` gives each worker its own JVM again (the fixture's earlier
behaviour); a run without xdist, or with one worker, always does.
"""

from __future__ import annotations

import os
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import pytest

GATEWAY_ENV = "KRAFTLAKE_TEST_GATEWAY"
SWITCH_ENV = "KRAFTLAKE_TEST_SHARED_JVM"
WAIT_SECONDS = 300  # a cold JVM on a loaded machine, Delta's jars resolved from the cache

_controller: dict[str, Any] = {}


def wanted(config: pytest.Config) -> bool:
    """Whether this process is an xdist controller running two or more workers."""
    n = getattr(config.option, "numprocesses", None)
    return (os.environ.get(SWITCH_ENV, "1") != "0" and not hasattr(config, "workerinput")
            and config.pluginmanager.hasplugin("xdist") and isinstance(n, int) and n >= 2
            and not config.option.collectonly)


def start(session_conf: dict[str, str], workers: int) -> None:
    """In the controller: build the shared session and a py4j gateway for each of the
    `workers` in a thread; the workers wait for the gateway file."""
    fd, name = tempfile.mkstemp(prefix="kraftlake-gateway-")
    os.close(fd)
    path = Path(name)
    path.unlink()  # it appears, whole, when the gateway is up (or with the error)
    os.environ[GATEWAY_ENV] = str(path)

    def build() -> None:
        try:
            from kraftlake.config import load_config
            from kraftlake.spark import get_spark

            s = get_spark(load_config(), master="local[4]", extra_conf=session_conf)
            _controller["spark"] = s
            jvm = s.sparkContext._jvm
            servers = [jvm.org.apache.spark.api.python.Py4JServer(s.sparkContext._jsc.sc().conf())
                       for _ in range(workers)]
            for server in servers:
                server.start()
            _controller["servers"] = servers
            text = "".join(f"{v.getListeningPort()} {v.secret()}\n" for v in servers)
        except BaseException as e:  # the workers report it, one line each
            text = f"error {type(e).__name__}: {e}"
        tmp = path.with_suffix(".tmp")
        tmp.write_text(text)
        os.chmod(tmp, 0o600)
        tmp.replace(path)

    thread = threading.Thread(target=build, name="kraftlake-shared-jvm", daemon=True)
    thread.start()
    _controller.update(thread=thread, path=path)


def stop() -> None:
    """In the controller, at the run's end: stop the shared context."""
    thread = _controller.get("thread")
    if thread is None:
        return
    thread.join()
    for server in _controller.get("servers", []):
        server.shutdown()
    if "spark" in _controller:
        _controller["spark"].stop()
    _controller["path"].unlink(missing_ok=True)


def attach(session_conf: dict[str, str]):
    """In a worker: a new session of the controller's SparkContext (see the module
    docstring), through `get_spark` like any session of the suite; None for a worker the
    controller made no gateway for, which then starts its own JVM."""
    from pyspark import SparkContext
    from pyspark.java_gateway import launch_gateway
    from pyspark.sql import SparkSession

    from kraftlake.config import load_config
    from kraftlake.spark import get_spark

    path = Path(os.environ[GATEWAY_ENV])
    deadline = time.monotonic() + WAIT_SECONDS
    while not path.exists():
        if time.monotonic() > deadline:
            raise RuntimeError(f"the controller's Spark JVM did not start in {WAIT_SECONDS} s")
        time.sleep(0.2)
    text = path.read_text()
    if text.startswith("error "):
        raise RuntimeError(f"the controller's Spark JVM did not start: {text[6:]}")
    lines = text.splitlines()
    worker = int(os.environ["PYTEST_XDIST_WORKER"].removeprefix("gw"))
    if worker >= len(lines):  # xdist's replacement for a crashed worker
        return None
    port, secret = lines[worker].split(" ", 1)
    # pyspark connects to a running gateway when these are set (as under spark-submit); they
    # are removed at once, so the jobs a test starts as processes launch their own JVMs
    os.environ.update(PYSPARK_GATEWAY_PORT=port, PYSPARK_GATEWAY_SECRET=secret)
    try:
        gateway = launch_gateway()
    finally:
        del os.environ["PYSPARK_GATEWAY_PORT"], os.environ["PYSPARK_GATEWAY_SECRET"]
    jvm = gateway.jvm
    sc = SparkContext(gateway=gateway, jsc=jvm.org.apache.spark.api.java.JavaSparkContext
                      .fromSparkContext(jvm.org.apache.spark.SparkContext.getOrCreate()))
    classic = getattr(jvm, "org.apache.spark.sql.classic.SparkSession")
    root = classic.getDefaultSession().get()
    SparkSession(sc, jsparkSession=root.newSession())
    classic.setDefaultSession(root)  # the controller's, as the module docstring says
    session = get_spark(load_config(), extra_conf=session_conf)
    database = os.environ["PYTEST_XDIST_WORKER"]
    session.sql(f"CREATE DATABASE IF NOT EXISTS {database}")
    session.catalog.setCurrentDatabase(database)
    return session
