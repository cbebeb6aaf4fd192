"""The `kraftlake` command: one click group, one module per family of subcommands."""

from __future__ import annotations

import importlib
import importlib.util

import click


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="kraftlake")
def main() -> None:
    """kraftlake: history, incidents and data quality from Kafka's KRaft metadata log."""


# Each module registers its commands on `main` when imported.
for _name in ("decode", "simulate", "ingest", "stream", "query", "demo", "quality",
              "maintain", "report"):
    if importlib.util.find_spec(f"{__name__}.{_name}") is not None:
        importlib.import_module(f"{__name__}.{_name}")
