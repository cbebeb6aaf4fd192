"""Locations as URIs: a plain path, `file://` or `s3a://`, the same code for each.

The lake is written by Spark through Hadoop's FileSystem (`lake/hadoopfs.py`); the logs are
read by Python in Spark's executors, through pyarrow's filesystems (here), so an executor on
another host reads a log shipped to an object store exactly as a local one.

Object-store settings come from the standard AWS environment variables, read by pyarrow in
the executors and passed to Hadoop's s3a by the session factory: `AWS_ACCESS_KEY_ID`,
`AWS_SECRET_ACCESS_KEY`, `AWS_REGION` and, for an S3-compatible store, `AWS_ENDPOINT_URL`.
On a cluster, give them to the executors too (`spark.executorEnv.AWS_...`).
"""

from __future__ import annotations

import os
from pathlib import Path
from urllib.parse import urlparse

import pyarrow.fs as pafs

S3_SCHEMES = ("s3a", "s3")


def to_uri(path: str | Path) -> str:
    """A location as Spark, Hadoop and pyarrow take it.

    Plain paths become absolute paths (not `file://` URIs: Spark reads a percent-encoded URI
    of a path holding `+` literally); `file:///x` becomes `/x`; other schemes stay as given.
    """
    s = str(path)
    if s.startswith("file://"):
        s = s[len("file://"):]
    elif s.startswith("file:"):
        s = s[len("file:"):]
    if "://" in s:
        return s.rstrip("/")
    return str(Path(s).expanduser().resolve())


def is_local(uri: str) -> bool:
    return "://" not in uri


def join(uri: str, *parts: str) -> str:
    return "/".join([uri.rstrip("/"), *parts])


def basename(uri: str) -> str:
    return uri.rstrip("/").rsplit("/", 1)[-1]


def parent(uri: str) -> str:
    return uri.rstrip("/").rsplit("/", 1)[0]


def s3_options() -> dict[str, str]:
    """Endpoint and region of the S3 store, from the environment (empty: AWS itself)."""
    out = {"region": os.environ.get("AWS_REGION") or os.environ.get("AWS_DEFAULT_REGION")
           or "us-east-1"}
    if os.environ.get("AWS_ENDPOINT_URL"):
        out["endpoint"] = os.environ["AWS_ENDPOINT_URL"]
    return out


def filesystem(uri: str) -> tuple[pafs.FileSystem, str]:
    """(pyarrow filesystem, path within it) for a location."""
    uri = to_uri(uri)
    if is_local(uri):
        return pafs.LocalFileSystem(), uri
    u = urlparse(uri)
    if u.scheme in S3_SCHEMES:
        opts = s3_options()
        kw: dict = {"region": opts["region"]}
        if "endpoint" in opts:
            e = urlparse(opts["endpoint"])
            kw.update(endpoint_override=e.netloc or e.path, scheme=e.scheme or "https",
                      force_virtual_addressing=False)
        return pafs.S3FileSystem(**kw), f"{u.netloc}{u.path}".rstrip("/")
    fs, path = pafs.FileSystem.from_uri(uri)
    return fs, path


def to_location(uri: str, path: str) -> str:
    """The URI of `path` inside the filesystem of `uri` (inverse of `filesystem`)."""
    if is_local(uri):
        return path
    return f"{urlparse(uri).scheme}://{path}"


def read_bytes(uri: str, start: int = 0, end: int = -1) -> bytes:
    """Bytes [start, end) of a file (`end` -1: to its end). FileNotFoundError if it is gone."""
    fs, path = filesystem(uri)
    with fs.open_input_file(path) as fh:
        size = fh.size()
        stop = size if end < 0 else min(end, size)
        return fh.read_at(max(0, stop - start), start) if stop > start else b""


def read_text(uri: str) -> str | None:
    """A small text file, or None if there is none."""
    try:
        return read_bytes(uri).decode(errors="replace")
    except (FileNotFoundError, OSError):
        return None


def file_size(uri: str) -> int | None:
    fs, path = filesystem(uri)
    info = fs.get_file_info(path)
    return None if info.type != pafs.FileType.File else info.size


def listing(uri: str, recursive: bool = False) -> list[pafs.FileInfo]:
    """Entries under a directory (an empty list if it is not one)."""
    fs, path = filesystem(uri)
    if fs.get_file_info(path).type != pafs.FileType.Directory:
        return []
    return fs.get_file_info(pafs.FileSelector(path, recursive=recursive))
