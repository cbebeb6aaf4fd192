"""Whether a location holds a kraftlake lake, answered without Spark.

A reader (`sql`, `timeline`, `quality`, `maintain`, `report`) on a wrong `--lake` is told so
in well under a second, before a JVM starts, through the same filesystem layer the batch
sources use (`kraftlake.uris`: local paths and s3a URIs alike). The mark of a lake is the
one `Lake.is_lake` reads through Delta once Spark is up: an `ingest_progress` table, which
every increment ends with.
"""

from __future__ import annotations

from pathlib import Path

from ..uris import is_local, join, listing, to_uri

PROGRESS_TABLE = "ingest_progress"


class NotALakeError(ValueError):
    """The location holds no kraftlake lake (no `ingest_progress` table)."""


def not_a_lake(root: str) -> NotALakeError:
    return NotALakeError(f"{root}: no kraftlake lake here (no {PROGRESS_TABLE} table); run "
                         f"`kraftlake ingest ... --lake {root}` first")


def require_lake_location(root: str) -> str:
    """The URI of a location a job may create or continue a lake at: anything but a local
    path to a file (a `--lake` naming a log segment or a configuration by mistake), which is
    refused here, before Spark starts, rather than by Hadoop once it tries to write there."""
    uri = to_uri(root)
    if is_local(uri) and Path(uri).exists() and not Path(uri).is_dir():
        raise NotALakeError(f"{uri}: is a file, not a directory a lake is (or can be) kept in")
    return uri


def require_lake(root: str) -> str:
    """The lake's URI, or `NotALakeError` when `root` has no `ingest_progress` Delta log
    (a local file is said to be one: `ingest` would refuse it as a lake too)."""
    uri = require_lake_location(root)
    try:
        found = bool(listing(join(uri, PROGRESS_TABLE, "_delta_log")))
    except OSError as exc:  # an unreachable store or a refused credential: say which
        raise NotALakeError(f"{uri}: cannot be read ({' '.join(str(exc).split())})") from None
    if not found:
        raise not_a_lake(uri)
    return uri
