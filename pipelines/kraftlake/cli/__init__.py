"""The `kraftlake` command: one click group (`group.main`), one module per family of
subcommands, each registering its commands on the group when imported. Every module is
imported here, by name: one that is missing is an ImportError at start, not a subcommand
quietly gone."""

from __future__ import annotations

from . import (  # noqa: F401 (imported for the commands they register)
    decode,
    demo,
    ingest,
    maintain,
    quality,
    query,
    report,
    serve,
    simulate,
    stream,
    tables,
    upgrade,
)
from .group import main

__all__ = ["main"]
