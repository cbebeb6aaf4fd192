"""What an ingest or a stream reads, checked before Spark is loaded.

A source that is no metadata log (`/etc/hosts`, another topic's partition, an empty
directory) is refused here, in the time it takes Python to look at it: this module imports
neither pyspark nor anything that does, so `kraftlake ingest` of such a source answers
without loading Spark (`jobs.batch` ingests the accepted inputs).
"""

from __future__ import annotations

import fnmatch
import glob
from collections.abc import Sequence
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
from ..uris import file_size, is_local, listing, parent, to_location, to_uri

_WILDCARDS = "*?["


@dataclass(frozen=True)
class Input:
    """One input of an ingest, checked before anything is read or written: a metadata-log
    directory or a dump-log text, with its cluster id, or why it is refused."""

    source: str  # as the user named it
    location: str  # the log directory's URI, or the text's path
    kind: str  # "dir" or "text"
    cluster_id: str | None
    refused: str | None = None


def find_inputs(sources: Sequence[str | Path], cluster_id: str | None,
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
            found.append(Input(src, src, "", None, refused=one_line(exc)))
    return found


def expand_sources(sources: list[str]) -> list[str]:
    """The sources a stream watches, each a directory, a log directory or a text: `@FILE`
    is the sources FILE lists (one a line; blank lines and `#` comments skipped), a pattern
    with `*`, `?` or `[` is the paths that match it now (local or `s3a://`; a wildcard
    stays within a path segment, as in a shell), in order; anything else is itself. Asked
    again later, the same sources may give more: that is how a stream finds a cluster that
    appeared."""
    out: list[str] = []
    for src in sources:
        if src.startswith("@"):
            listed = Path(src[1:]).read_text().splitlines()
            out += expand_sources([s.strip() for s in listed
                                   if s.strip() and not s.strip().startswith("#")])
        elif any(c in src for c in _WILDCARDS):
            out += _matches(src)
        else:
            out.append(src)
    return out


def watched(sources: list[str], found: list[Input]) -> bool:
    """Whether `sources` can name more log directories later than now: a list file, a
    pattern, or a directory that holds log directories rather than being one (told from
    `found`, `find_inputs`'s answer for them: nothing is listed again)."""
    if len(sources) != 1 or sources[0].startswith("@") or any(
            c in sources[0] for c in _WILDCARDS):
        return True
    return any(i.location != to_uri(sources[0]) for i in found if not i.refused)


def _matches(pattern: str) -> list[str]:
    """The paths matching a wildcard pattern (`expand_sources`), as a shell's glob: a
    wildcard stays within one path segment."""
    uri = to_uri(pattern)
    if is_local(uri):
        return sorted(glob.glob(pattern))
    head = uri[:min(uri.index(c) for c in _WILDCARDS if c in uri)]
    base = head if head.endswith("/") else parent(head)
    want = uri.split("/")
    found: set[str] = set()
    for info in listing(base, recursive=True):
        path = to_location(base, info.path)
        while len(path) > len(base):  # the entry and every directory above it
            found.add(path)
            path = parent(path)
    return sorted(p for p in found if len(p.split("/")) == len(want) and all(
        fnmatch.fnmatchcase(got, w) for got, w in zip(p.split("/"), want, strict=True)))


def input_bytes(inputs: list[Input]) -> int:
    """Bytes the accepted inputs hold (log directories, dump texts): sizes the driver."""
    total = 0
    for i in inputs:
        if i.refused is None:
            total += log_dir_bytes(i.location) if i.kind == "dir" else \
                (file_size(to_uri(i.location)) or 0)
    return total


def one_line(exc: BaseException) -> str:
    """An exception's message on one line (its type's name if it has none)."""
    text = str(exc) or type(exc).__name__
    return " ".join(text.split())
