"""A resident SQL endpoint over a lake: one long-lived SparkSession serving Spark Connect.

Every `kraftlake sql` starts a JVM, which costs seconds before the first row; `kraftlake
serve` pays that once. Spark Connect (the `spark-connect_2.13` jar pyspark ships) is Spark's
own client protocol, so any Connect client (pyspark's `SparkSession.builder.remote`, a
notebook, Spark's JDBC driver for Connect) queries the lake with no kraftlake installed.

Each Connect client gets a session of its own (Spark's session manager clones the server's
session), so temporary views of the server's session are invisible to clients; what all
sessions share is the session catalog. The lake's tables are therefore catalog tables over
their Delta locations, and a table nothing was written to yet is a catalog view of its empty
schema (`Lake.register_views` does both).

The client side (`connect`, and `lake.served.ServedLake` to read through it) imports only
pyspark's Connect client: a `--remote` command starts no JVM.

A serving process records its endpoint under the lake (`_kraftlake/serve.json`: URL, host,
process id) and removes the record when it stops, so `kraftlake sql`, `timeline` and
`report` on that lake answer through it without `--remote` (`resident_endpoint`). A record
whose endpoint no longer answers (a server killed with -9, a copied lake) is stale and
ignored: the command starts its own Spark.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import threading
from collections.abc import Callable
from typing import TYPE_CHECKING

from .lake.jvmclass import java_class
from .uris import filesystem, join, read_text

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

# Spark Connect's own default port (`spark.connect.grpc.binding.port`), so a client's plain
# `sc://host` reaches kraftlake's endpoint
DEFAULT_PORT = 15002
DEFAULT_HOST = "127.0.0.1"
CONNECT_TIMEOUT_S = 10


# the record of a serving process, under the lake's `_kraftlake/`
RECORD = ("_kraftlake", "serve.json")
# how long a command waits for a recorded endpoint to accept a connection before it takes the
# record for stale
RESIDENT_TIMEOUT_S = 1.0
# set (to anything) to ignore a recorded endpoint: every reading command starts its own Spark
NO_RESIDENT_ENV = "KRAFTLAKE_NO_RESIDENT"


class RemoteError(RuntimeError):
    """The Spark Connect endpoint could not be reached (or is not one)."""


def connect_conf(host: str, port: int) -> dict[str, str]:
    """Settings of the serving session: where the Connect service listens (read by the
    service when it starts, from the SparkContext's configuration)."""
    return {"spark.connect.grpc.binding.address": host,
            "spark.connect.grpc.binding.port": str(port)}


def check_bindable(host: str, port: int) -> None:
    """Refuse an address Spark Connect could not listen on (a port taken, an address not
    of this host) before Spark starts, not after a minute of JVM start; `RemoteError`."""
    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
        with socket.socket(infos[0][0], socket.SOCK_STREAM) as probe:
            probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as gRPC's server
            probe.bind(infos[0][4])
    except OSError as exc:
        raise RemoteError(f"cannot listen on {host}:{port}: {exc.strerror or exc}") from None


def warm_up(spark: SparkSession, names: list[str]) -> None:
    """Read one row of every table before clients come: a JVM's first query pays for class
    loading, JIT compilation and each table's Delta snapshot (19.6 s of a cold one-row
    `kraftlake sql` on a loaded machine, where the second took 0.8 s), and that cost belongs
    to the server's start, not to a client's first question."""
    for name in names:
        spark.sql(f"SELECT * FROM {name} LIMIT 1").collect()


def start_service(spark: SparkSession) -> int:
    """Start Spark Connect's gRPC service on `spark`'s SparkContext; returns the port it
    listens on (the one asked for, or the one the system chose for port 0).

    Started after the tables are registered (not by `spark.plugins` at SparkContext start),
    so a client that connects finds every table."""
    svc = _service(spark)
    svc.start(spark._jsc.sc())
    return int(svc.localPort())


def stop_service(spark: SparkSession) -> None:
    none = java_class(spark, "scala.Option").empty()
    _service(spark).stop(none, none)


def _service(spark: SparkSession):
    """The `SparkConnectService` Scala object (not every method has a static forwarder)."""
    return getattr(java_class(spark, "org.apache.spark.sql.connect.service.SparkConnectService$"),
                   "MODULE$")


def wait_for_signal(finished: Callable[[], bool] | None = None) -> int | None:
    """Block until SIGINT or SIGTERM (returns its number) or until `finished()` is true
    (returns None); `finished` is asked about once a second and may itself block that long.

    The handlers only record the signal: the code they interrupt goes on to the end of its
    step (a py4j call in progress, such as pyspark's own SIGINT handler would abort with a
    KeyboardInterrupt and dozens of lines of py4j errors), and the caller stops its work
    in order. The previous handlers are back when this returns."""
    got: list[int] = []
    done = threading.Event()

    def handler(signum: int, _frame: object) -> None:
        got.append(signum)
        done.set()

    previous = {s: signal.signal(s, handler) for s in (signal.SIGINT, signal.SIGTERM)}
    try:
        while not got:
            if finished is not None:
                if finished():
                    return None
            else:
                done.wait(1.0)  # a timeout, so the main thread runs the handlers
    finally:
        for s, h in previous.items():
            signal.signal(s, h)
    return got[0]


def _address(url: str) -> tuple[str, int]:
    """Host and port of a Spark Connect URL (`sc://host[:port][/;params]`)."""
    if not url.startswith("sc://"):
        raise RemoteError(f"{url}: not a Spark Connect URL (sc://host:port)")
    netloc = url[len("sc://"):].split("/", 1)[0].split(";", 1)[0]
    host, _, port = netloc.rpartition(":") if ":" in netloc else (netloc, "", "")
    if not host or (port and not port.isdigit()):
        raise RemoteError(f"{url}: not a Spark Connect URL (sc://host:port)")
    return host.strip("[]"), int(port or DEFAULT_PORT)


def connect(url: str) -> SparkSession:
    """A Spark Connect client session on the endpoint at `url` (`sc://host:port`), checked
    with one round trip so an endpoint that is not there is one error, not a traceback
    at the first query. Nothing listening is found out by a plain TCP connection first:
    the Connect client itself retries a refused connection for minutes."""
    from pyspark.errors import PySparkException
    from pyspark.sql import SparkSession

    hint = "start one with `kraftlake serve --lake LAKE`"
    try:
        socket.create_connection(_address(url), timeout=CONNECT_TIMEOUT_S).close()
    except OSError as exc:
        raise RemoteError(f"{url}: no Spark Connect endpoint answers ({exc.strerror or exc}); "
                          f"{hint}") from None
    try:
        spark = SparkSession.builder.remote(url).getOrCreate()
        spark.version  # noqa: B018 (a round trip to the server)
    except (PySparkException, ValueError) as exc:
        first = next((ln for ln in str(exc).splitlines() if ln.strip()), type(exc).__name__)
        raise RemoteError(f"{url}: no Spark Connect endpoint answers ({first.strip()}); "
                          f"{hint}") from None
    return spark



def record_endpoint(lake_root: str, url: str) -> None:
    """Record under the lake that this process serves it at `url` (`resident_endpoint`)."""
    fs, path = filesystem(join(lake_root, *RECORD))
    fs.create_dir(path.rsplit("/", 1)[0], recursive=True)
    with fs.open_output_stream(path) as out:
        out.write(json.dumps({"url": url, "host": socket.gethostname(),
                              "pid": os.getpid()}).encode())


def forget_endpoint(lake_root: str, url: str) -> None:
    """Remove the lake's record, if it is still this endpoint's (another server may have
    recorded itself since)."""
    uri = join(lake_root, *RECORD)
    if _record(uri).get("url") == url:
        fs, path = filesystem(uri)
        fs.delete_file(path)


def _record(uri: str) -> dict:
    """The record at `uri` (empty: none, or not a record)."""
    try:
        record = json.loads(read_text(uri) or "{}")
    except ValueError:
        return {}
    return record if isinstance(record, dict) else {}


def resident_endpoint(lake_root: str) -> str | None:
    """The URL a `kraftlake serve` process recorded for the lake, if its endpoint accepts a
    connection now (None: no record, a stale one, or $KRAFTLAKE_NO_RESIDENT set). A record of
    this host whose process is gone is stale even if something else took the port."""
    if os.environ.get(NO_RESIDENT_ENV):
        return None
    record = _record(join(lake_root, *RECORD))
    url = record.get("url")
    if not isinstance(url, str):
        return None
    if record.get("host") == socket.gethostname() and isinstance(record.get("pid"), int):
        try:
            os.kill(record["pid"], 0)
        except ProcessLookupError:
            return None
        except PermissionError:  # alive, another user's
            pass
    try:
        socket.create_connection(_address(url), timeout=RESIDENT_TIMEOUT_S).close()
    except (OSError, RemoteError):
        return None
    return url
