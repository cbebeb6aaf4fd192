"""Servers the cluster tests start themselves on 127.0.0.1: an S3-compatible object store
(moto's server mode), a proxy in front of it that refuses a chosen request (`FaultyStore`)
or holds two writers' PUTs of one Delta commit file until both are there (`CommitRace`),
and a Spark standalone cluster (master + workers, each its own JVM and
work directory, from pyspark's own classes). Each is stopped when its test module ends; a
server that does not come up fails the test with its own log."""

from __future__ import annotations

import http.client
import os
import re
import socket
import subprocess
import sys
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import urlsplit

import pyarrow.fs as pafs
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


def store_fs(env: dict[str, str]) -> pafs.S3FileSystem:
    """pyarrow's client of the store `s3_server` yielded `env` for, signing with its
    credentials (an unsigned client's uploads were read back empty)."""
    return pafs.S3FileSystem(endpoint_override=env["AWS_ENDPOINT_URL"][len("http://"):],
                             scheme="http", region=env["AWS_REGION"],
                             access_key=env["AWS_ACCESS_KEY_ID"],
                             secret_key=env["AWS_SECRET_ACCESS_KEY"],
                             allow_bucket_creation=True)


def _spark_class(cls: str, *args: str, log: Path, env: dict[str, str]) -> subprocess.Popen:
    home = Path(pyspark.__file__).parent
    with open(log, "w") as out:
        return subprocess.Popen([str(home / "bin" / "spark-class"), cls, *args],
                                stdout=out, stderr=subprocess.STDOUT,
                                env={**os.environ, "SPARK_HOME": str(home), **env})


@contextmanager
def spark_standalone(work: Path, workers: int = 2, java_options: str = "",
                     class_path: str = "") -> Iterator[str]:
    """A master and `workers` workers (1 core, 1 GiB each); yields the master URL.
    `java_options` / `class_path`: the daemons' own JVM options and the class path before
    Spark's jars (SPARK_DAEMON_JAVA_OPTS, SPARK_DAEMON_CLASSPATH), not the executors' (a
    job's `spark.executor.extraJavaOptions` / `extraClassPath`)."""
    port = free_port()
    env = {"SPARK_LOCAL_IP": "127.0.0.1", "PYSPARK_PYTHON": sys.executable,
           "SPARK_LOG_DIR": str(work), "SPARK_DAEMON_JAVA_OPTS": java_options,
           "SPARK_DAEMON_CLASSPATH": class_path}
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


class FaultyStore:
    """An HTTP proxy in front of an S3 server that answers the first request `fails` picks
    with `status` and an S3 error document of `code`, as a store revoking a write would,
    and passes every other request through unchanged. `failed`: the requests it refused;
    `seen`: every request, as (method, path)."""

    def __init__(self, target: str, fails: Callable[[str, str], bool], status: int = 403,
                 code: str = "AccessDenied") -> None:
        self.target = urlsplit(target)
        self.fails, self.status, self.code = fails, status, code
        self.failed: list[tuple[str, str]] = []
        self.seen: list[tuple[str, str]] = []
        self.lock = threading.Lock()
        self.server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"

    def _refuse(self, method: str, path: str) -> bool:
        with self.lock:
            self.seen.append((method, path))
            if self.failed or not self.fails(method, path):
                return False
            self.failed.append((method, path))
            return True

    def _hold(self, method: str, path: str) -> None:
        """Called with each request before it is answered or passed on; keeps none."""

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        store = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args) -> None:  # quiet
                pass

            def _body(self) -> bytes:
                if self.headers.get("Transfer-Encoding", "").lower() == "chunked":
                    out = bytearray()
                    while (size := int(self.rfile.readline().split(b";")[0], 16)):
                        out += self.rfile.read(size)
                        self.rfile.readline()
                    self.rfile.readline()
                    return bytes(out)
                return self.rfile.read(int(self.headers.get("Content-Length") or 0))

            def _any(self) -> None:
                body = self._body()
                store._hold(self.command, self.path)
                if store._refuse(self.command, self.path):
                    doc = (f'<?xml version="1.0" encoding="UTF-8"?><Error><Code>{store.code}'
                           f"</Code><Message>refused by the test's faulty store</Message>"
                           f"<RequestId>fault</RequestId></Error>").encode()
                    self.send_response(store.status)
                    self.send_header("Content-Type", "application/xml")
                    self.send_header("Content-Length", str(len(doc)))
                    self.end_headers()
                    self.wfile.write(doc)
                    return
                headers = {k: v for k, v in self.headers.items()
                           if k.lower() not in ("transfer-encoding", "content-length", "host")}
                headers["Content-Length"] = str(len(body))
                conn = http.client.HTTPConnection(store.target.hostname, store.target.port,
                                                  timeout=120)
                try:
                    conn.request(self.command, self.path, body=body, headers=headers)
                    resp = conn.getresponse()
                    data = resp.read()
                finally:
                    conn.close()
                self.send_response(resp.status, resp.reason)
                for k, v in resp.getheaders():
                    if k.lower() not in ("transfer-encoding", "content-length", "connection",
                                         "date", "server"):
                        self.send_header(k, v)
                # a HEAD's length is the object's, not that of the (empty) body
                self.send_header("Content-Length", resp.getheader("Content-Length", "0")
                                 if self.command == "HEAD" else str(len(data)))
                self.end_headers()
                if self.command != "HEAD":
                    self.wfile.write(data)

            do_GET = do_PUT = do_POST = do_DELETE = do_HEAD = _any

        return Handler

    def __enter__(self) -> FaultyStore:
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        return self

    def __exit__(self, *exc) -> None:
        self.server.shutdown()
        self.server.server_close()


class CommitRace(FaultyStore):
    """A proxy in front of an S3 server that makes two writers race for one Delta commit:
    a PUT of a commit file (`_delta_log/NNN.json`) of table `table` is held until a PUT of
    the same file arrives from another connection, or `wait` seconds pass, and then both go
    on to the store at once, as two writer processes that each found version N free would
    send them. At most `races` times; every other request passes through unchanged.
    `raced`: the commit files so raced, `alone`: those whose wait ran out."""

    def __init__(self, target: str, table: str, wait: float = 30, races: int = 2) -> None:
        super().__init__(target, lambda _method, _path: False)
        self.commit = re.compile(rf"/{re.escape(table)}/_delta_log/\d{{20}}\.json$")
        self.wait, self.races = wait, races
        self.waiting: dict[str, threading.Event] = {}
        self.raced: list[str] = []
        self.alone: list[str] = []

    def _hold(self, method: str, path: str) -> None:
        key = urlsplit(path).path
        if method != "PUT" or not self.commit.search(key):
            return
        with self.lock:
            if len(self.raced) >= self.races:
                return
            partner = self.waiting.pop(key, None)
            if partner is not None:  # the second writer: release the first, go on with it
                self.raced.append(key)
                partner.set()
                return
            arrived = self.waiting[key] = threading.Event()
        if not arrived.wait(self.wait):
            with self.lock:
                if self.waiting.get(key) is arrived:
                    del self.waiting[key]
                    self.alone.append(key)
