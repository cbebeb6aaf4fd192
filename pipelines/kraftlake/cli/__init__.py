"""The `kraftlake` command: one click group, one module per family of subcommands."""

from __future__ import annotations

import importlib
import importlib.util
from collections.abc import Callable
from typing import Any

import click


class _Main(click.Group):
    """The command group; a configuration kraftlake cannot use, or a `--lake` that holds no
    kraftlake lake, ends any command with one line naming it (exit status 1), not a
    traceback (nor an empty answer)."""

    def invoke(self, ctx: click.Context) -> object:
        from kraftlake.config import ConfigError
        from kraftlake.lake.delta import NotALakeError

        try:
            return super().invoke(ctx)
        except (ConfigError, NotALakeError) as e:
            raise click.ClickException(str(e)) from None


@click.group(cls=_Main, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="kraftlake")
def main() -> None:
    """kraftlake: history, incidents and data quality from Kafka's KRaft metadata log."""


def spark_options(f: Callable[..., Any]) -> Callable[..., Any]:
    """The options every command that starts Spark takes: the master URL and the YAML
    settings file (`kraftlake.config`), passed on as `master` and `conf_file`."""
    f = click.option("--master", default=None, help="Spark master URL (default: configured)")(f)
    f = click.option("--conf", "conf_file", default=None, type=click.Path(dir_okay=False),
                     help="YAML settings merged over the defaults (else $KRAFTLAKE_CONF)")(f)
    return f


# Each module registers its commands on `main` when imported.
for _name in ("decode", "simulate", "ingest", "stream", "query", "demo", "quality",
              "maintain", "report", "serve"):
    if importlib.util.find_spec(f"{__name__}.{_name}") is not None:
        importlib.import_module(f"{__name__}.{_name}")
