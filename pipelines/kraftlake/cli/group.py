"""The `kraftlake` command group and what its subcommands share: the refusal `BadInput`, the
`--lake` option, Spark's options and the check of a lake before Spark starts.

Each module of this package registers its subcommands on `main`; `kraftlake.cli` imports
them all."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

if TYPE_CHECKING:
    from kraftlake.config import Config


class BadInput(click.ClickException):
    """Input the command refuses before doing anything (a path that is no metadata log, a
    `--lake` without a lake, a configuration it cannot use): `Error: ...`, exit status 2,
    as click's own usage errors. Exit status 1 is left for what fails while running."""

    exit_code = 2


class _Main(click.Group):
    """The command group; a configuration kraftlake cannot use, or a `--lake` that holds no
    kraftlake lake, ends any command with one line naming it (exit status 2), not a
    traceback (nor an empty answer). A failure inside Spark names the file its JVM logged
    to (the console gets none of that log unless `--verbose`)."""

    def invoke(self, ctx: click.Context) -> object:
        """click's `Group.invoke`: run the command. What a command raises ends as one line instead
        of a traceback: a configuration or `--lake` kraftlake cannot use as `BadInput` (exit status
        2), a slice another job moved as a ClickException (1), an exception of Spark, py4j or Delta
        as its first line with its root cause and Spark's log file (1); any other passes."""
        from kraftlake.config import ConfigError
        from kraftlake.lake.conflicts import SliceMovedError
        from kraftlake.lake.location import NotALakeError

        try:
            return super().invoke(ctx)
        except (ConfigError, NotALakeError) as e:
            raise BadInput(str(e)) from None
        except SliceMovedError as e:
            raise click.ClickException(str(e)) from None
        except Exception as e:
            if type(e).__module__.split(".")[0] not in ("pyspark", "py4j", "delta"):
                raise
            from kraftlake.spark import spark_log

            lines = [ln for ln in str(e).splitlines() if ln.strip()] or [type(e).__name__]
            first = lines[0]
            if first.startswith("An error occurred while calling") and len(lines) > 1:
                first = lines[1].lstrip(": ")  # py4j's: the Java exception is the next line
            where = spark_log()
            died = "JAVA_GATEWAY_EXITED" in first  # the JVM ended before Spark was up
            cause = _cause_in_log(where) if where and died else _root_cause(e)
            first = " ".join(first.split())
            if cause and cause in first:
                cause = None
            raise click.ClickException(first + (f": {cause}" if cause else "")
                                       + (f" (Spark's log: {where})" if where else "")) from None


def _root_cause(e: Exception) -> str | None:
    """The innermost cause of a Spark or py4j error's Java exception, when it has one:
    `[TASK_WRITE_FAILED] Task failed while writing rows to ...` names no reason, its cause's
    cause does (`java.io.IOException: No space left on device`, a store's error code)."""
    from py4j.protocol import Py4JError

    java = getattr(e, "_origin", None) or getattr(e, "java_exception", None)
    if java is None:
        return None
    try:
        depth, code = 0, _store_error_code(java)
        while depth < 50 and java.getCause() is not None:  # a cycle cannot hold us
            java, depth = java.getCause(), depth + 1
            code = code or _store_error_code(java)
        if not depth and not code:
            return None
        text = " ".join(str(java.toString()).split()) if depth else ""
        return f"{text} (store error code {code})".strip() if code and code not in text \
            else text
    except Py4JError:  # the JVM is gone: the first line is all there is
        return None


def _store_error_code(java) -> str | None:
    """An object store's own error code (`AccessDenied`, `SlowDown`, ...) when `java` is the
    AWS SDK's service exception: its message gives the HTTP status, not the code."""
    from py4j.protocol import Py4JError

    try:
        details = java.awsErrorDetails()
        return None if details is None else details.errorCode()
    except Py4JError:  # not an AWS service exception
        return None


def _cause_in_log(log: Path) -> str | None:
    """The exception a JVM that died at start wrote to its log (`Exception in thread "main"
    org...SparkException: Master must ...`): its message, the part the user can act on."""
    try:
        text = log.read_text(errors="replace")
    except OSError:
        return None
    for line in text.splitlines():
        if line.startswith("Exception in thread"):
            return line.split(": ", 1)[-1].strip()
    return None


@click.group(cls=_Main, context_settings={"help_option_names": ["-h", "--help"]},
             epilog="""\b
Examples:
  kraftlake demo
  kraftlake ingest /var/lib/kafka/data/__cluster_metadata-0 --lake lake
  kraftlake sql 'SELECT * FROM incidents' --lake lake
  kraftlake tables

\b
Exit status: 0 done; 1 a failure while running (a partly refused ingest, failed
error-level checks, a table not maintained, Spark); 2 input refused before anything
was done (usage, a path that is no metadata log, a --lake without a lake, an
unusable --conf, SQL Spark refuses). Errors are one line starting with "Error: ".""")
@click.version_option(package_name="kraftlake")
def main() -> None:
    """kraftlake: history, incidents and data quality from Kafka's KRaft metadata log."""


def _set_verbose(_ctx: click.Context, _param: click.Parameter, value: bool) -> None:
    if value:
        from kraftlake.spark import VERBOSE_ENV

        os.environ[VERBOSE_ENV] = "1"


def lake_config(conf_file: str | None, lake: str | None) -> Config:
    """The configuration of a command that reads a lake, once its `--lake` is known to hold
    one: checked before Spark (or anything that imports it) is loaded, so a wrong `--lake`
    is answered at once (`lake.location`)."""
    from kraftlake.config import load_config
    from kraftlake.lake.location import require_lake

    cfg = load_config(conf_file, lake=lake)
    require_lake(cfg.lake)
    return cfg


def lake_option(f: Callable[..., Any]) -> Callable[..., Any]:
    """`--lake`, the same in every command that reads or writes a lake: a location (path,
    file:// or s3a:// URI, not checked by click: an s3a lake is no local directory), default
    the configuration's `lake` (`./lake` unless --conf says otherwise)."""
    return click.option("--lake", default=None, metavar="URI",
                        help="The lake: a path, file:// or s3a:// URI (default: the "
                             "configuration's `lake`, ./lake).")(f)


def spark_options(f: Callable[..., Any]) -> Callable[..., Any]:
    """The options every command that starts Spark takes: the master URL and the YAML
    settings file (`kraftlake.config`), passed on as `master` and `conf_file`, and
    `--verbose` (Spark's own log on the console; read by `kraftlake.spark`)."""
    f = click.option("--master", default=None, help="Spark master URL (default: configured)")(f)
    f = click.option("--conf", "conf_file", default=None, type=click.Path(dir_okay=False),
                     help="YAML settings merged over the defaults (else $KRAFTLAKE_CONF)")(f)
    f = click.option("--verbose", "-v", is_flag=True, expose_value=False, is_eager=True,
                     callback=_set_verbose,
                     help="Spark's and the JVM's log on the console (also "
                          "KRAFTLAKE_VERBOSE=1); else it goes to a file under "
                          "~/.local/state/kraftlake/logs named on errors")(f)
    return f

