"""`kraftlake serve`: the lake as a resident Spark Connect endpoint (`kraftlake.endpoint`)."""

from __future__ import annotations

import re
import socket
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import click

from ..endpoint import DEFAULT_HOST, DEFAULT_PORT
from .group import lake_config, lake_option, main, spark_options
from .statement import spark_error

if TYPE_CHECKING:
    from .catalog import LakeCatalog

# How often a `kraftlake serve` endpoint's views move on to the increments completed since
REFRESH_SECONDS = 2.0


@main.command(epilog="""\b
Examples:
  kraftlake serve --lake lake &
  kraftlake sql --remote sc://127.0.0.1:15002 'SELECT count(*) FROM partition_events'""")
@lake_option
@click.option("--port", type=click.IntRange(0, 65535), default=DEFAULT_PORT, show_default=True,
              help="port to listen on (Spark Connect's default; 0: any free port)")
@click.option("--host", default=DEFAULT_HOST, show_default=True,
              help="address to listen on (0.0.0.0: every interface; no authentication)")
@spark_options
def serve(lake: str | None, port: int, host: str, master: str | None,
          conf_file: str | None) -> None:
    """Serve the lake to Spark Connect clients until Ctrl-C or SIGTERM.

    One Spark with every lake table registered under its own name, as of each cluster's
    last complete increment (moved on every 2 s); `kraftlake sql`, `timeline` and `report`
    use it (they find it recorded under the lake, or take `--remote sc://HOST:PORT`), and
    so does any Spark Connect client
    (`SparkSession.builder.remote("sc://localhost:15002")`). Time travel names a table by
    its location: delta.`LAKE/records` VERSION AS OF 0. Prints `serving LAKE at
    sc://HOST:PORT` once it listens."""
    from ..endpoint import (
        RemoteError,
        check_bindable,
        connect_conf,
        forget_endpoint,
        record_endpoint,
        start_service,
        stop_service,
        wait_for_signal,
        warm_up,
    )
    from ..lake.delta import Lake
    from ..lake.schema import table_names
    from ..spark import get_spark
    from .catalog import LakeCatalog

    try:
        check_bindable(host, port)
    except RemoteError as exc:
        raise click.ClickException(str(exc)) from None
    cfg = lake_config(conf_file, lake)  # before a JVM starts
    spark = get_spark(cfg, master=master, extra_conf=connect_conf(host, port))
    lk = Lake(cfg.lake, spark).require()
    catalog = LakeCatalog(spark, lk)
    catalog.prepare(None)  # every table, as of each cluster's last complete increment
    warm_up(spark, table_names())
    try:
        bound = start_service(spark)
    except Exception as exc:  # py4j's error: the port was taken since the check above
        found = re.search(r"java\.net\.\w+: [^!]*?(?=: Service|$)", str(exc), re.MULTILINE)
        why = found.group(0) if found else type(exc).__name__
        raise click.ClickException(f"cannot listen on {host}:{port}: {why}") from None
    click.echo(f"serving {lk.root} at sc://{host}:{bound} (Ctrl-C to stop)")
    # recorded under the lake, so its readers find it (an endpoint on every interface is
    # recorded under this host's name)
    url = f"sc://{socket.gethostname() if host in ('0.0.0.0', '::') else host}:{bound}"
    record_endpoint(lk.root, url)
    try:
        wait_for_signal(lambda: _refresh(catalog))
    finally:
        forget_endpoint(lk.root, url)
    stop_service(spark)
    spark.stop()


def _refresh(catalog: LakeCatalog) -> bool:
    """Every `REFRESH_SECONDS`, the served views moved on to the increments completed since
    (`LakeCatalog.prepare`: only the tables whose cut changed); never finished. A refresh
    that fails (a store that does not answer for a moment) is one line, and the views stay
    as they were until the next."""
    time.sleep(REFRESH_SECONDS)
    try:
        catalog.prepare(None)
    except Exception as exc:  # the server outlives a failed refresh
        click.echo(f"serve: views not refreshed: {spark_error(exc)}", err=True)
    return False


def remote_option(f: Callable[..., Any]) -> Callable[..., Any]:
    """`--remote sc://HOST:PORT` of the commands that read the lake, passed on as `remote`."""
    return click.option(
        "--remote", default=None, metavar="sc://HOST:PORT",
        help="read through a `kraftlake serve` endpoint (no local Spark: --lake, --master "
             "and --conf are the server's)")(f)


def remote_session(url: str, lake: str | None, master: str | None = None,
                   conf_file: str | None = None) -> tuple[Any, Any]:
    """The client session of the endpoint at `url` and its lake (`kraftlake.endpoint`); an
    endpoint that does not answer is one line and exit status 1. `lake`, `master`,
    `conf_file`: the command's `--lake`, `--master` and `--conf`, which are the server's
    (given with `--remote`, a usage error rather than silently ignored)."""
    given = [opt for opt, value in (("--lake", lake), ("--master", master),
                                    ("--conf", conf_file)) if value is not None]
    if given:
        raise click.UsageError(
            f"{' and '.join(given)} {'is' if len(given) == 1 else 'are'} the server's "
            f"(kraftlake serve {' '.join(given)}): give --remote or {', '.join(given)}, "
            f"not both")
    from ..endpoint import RemoteError, connect
    from ..lake.served import ServedLake

    try:
        return connect(url), ServedLake(url)
    except RemoteError as exc:
        raise click.ClickException(str(exc)) from None


def resident_session(lake_root: str, master: str | None, conf_file: str | None
                     ) -> tuple[Any, Any] | None:
    """The client session of the `kraftlake serve` recorded as serving the lake
    (`serve.resident_endpoint`) and its lake, when the command names no Spark of its own
    (`--master`, `--conf`); one line on stderr says so. None: the command starts its own."""
    if master is not None or conf_file is not None:
        return None
    from ..endpoint import RemoteError, connect, resident_endpoint
    from ..lake.served import ServedLake

    url = resident_endpoint(lake_root)
    if url is None:
        return None
    try:
        session = connect(url)
    except RemoteError:  # gone since it answered
        return None
    click.echo(f"answering through `kraftlake serve` at {url} (recorded under the lake; "
               f"give --master or --conf to start Spark here)", err=True)
    return session, ServedLake(url)
