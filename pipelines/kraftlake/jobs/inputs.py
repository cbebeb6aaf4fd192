"""What an ingest or a stream reads, checked before Spark is loaded.

A source that is no metadata log (`/etc/hosts`, another topic's partition, an empty
directory) is refused here, in the time it takes Python to look at it: this module imports
neither pyspark nor anything that does, so `kraftlake ingest` of such a source answers
without loading Spark (`jobs.batch` ingests the accepted inputs).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from ..codec.dumplog import looks_like_dump_log
from ..codec.errors import KraftCodecError
from ..config import Config
from ..sources.files import (
    find_log_dirs,
    log_dir_bytes,
    no_cluster_id,
    read_cluster_id,
    require_metadata_log,
)
from ..uris import file_size, is_local, to_uri


@dataclass(frozen=True)
class Input:
    """One input of an ingest, checked before anything is read or written: a metadata-log
    directory or a dump-log text, with its cluster id, or why it is refused."""

    source: str  # as the user named it
    location: str  # the log directory's URI, or the text's path
    kind: str  # "dir" or "text"
    cluster_id: str | None
    refused: str | None = None


def find_inputs(sources: list[str | Path], cluster_id: str | None,
                cfg: Config) -> list[Input]:
    """Every metadata-log directory and dump-log text named by `sources`, in order.

    A source that is no metadata log (missing, unreadable, empty, another topic's partition
    directory) or whose cluster id is unknown becomes an `Input` with `refused` set; the
    others are ingested all the same. Nothing is written here.
    """
    found: list[Input] = []
    for src in map(str, sources):
        try:
            if is_local(to_uri(src)) and Path(src).is_file() and looks_like_dump_log(Path(src)):
                cid = cluster_id or cfg.cluster_id
                if not cid:
                    raise ValueError(f"{src}: a dump-log text carries no cluster id; pass "
                                     f"--cluster-id")
                found.append(Input(src, src, "text", cid))
                continue
            for d in find_log_dirs(src):
                require_metadata_log(d)
                cid = cluster_id or cfg.cluster_id or read_cluster_id(d)
                if not cid:
                    raise ValueError(no_cluster_id(d, "pass --cluster-id"))
                found.append(Input(src, d, "dir", cid))
        except (ValueError, OSError, KraftCodecError) as exc:
            found.append(Input(src, src, "", None, refused=_one_line(exc)))
    return found


def input_bytes(inputs: list[Input]) -> int:
    """Bytes the accepted inputs hold (log directories, dump texts): sizes the driver."""
    total = 0
    for i in inputs:
        if i.refused is None:
            total += log_dir_bytes(i.location) if i.kind == "dir" else \
                (file_size(to_uri(i.location)) or 0)
    return total


def _one_line(exc: BaseException) -> str:
    text = str(exc) or type(exc).__name__
    return " ".join(text.split())
