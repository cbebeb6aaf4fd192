"""Files of a `__cluster_metadata-0` directory, and records read from them.

Segments are `<20-digit base offset>.log`; snapshots `<20-digit end offset>-<10-digit
epoch>.checkpoint` (end offset exclusive, batch offsets inside start at 0); the formatter's
`bootstrap.checkpoint` sits beside the directory and is not part of the Raft log.
`.checkpoint.part` / `.checkpoint.deleted` files are in-flight or dying and are ignored.
"""

from __future__ import annotations

import re
import struct
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path, PurePath

from . import dumplog
from .batch import Batch, Problem, plausible_batch_start, scan_batches
from .errors import NotAKafkaLogError, RecordDecodeError
from .records import (
    Decoded,
    Record,
    decode_control_value,
    decode_metadata_value,
    encode_metadata_value,
    frame_decoders,
)
from .redact import redact_in_place
from .redact import secret_types as _secret_types

# The directory of the metadata log: topic `__cluster_metadata`, its only partition
# (Kafka's `Topic.CLUSTER_METADATA_TOPIC_NAME` / `CLUSTER_METADATA_TOPIC_PARTITION`).
METADATA_LOG_DIR = "__cluster_metadata-0"
SEGMENT_RE = re.compile(r"^(\d{20})\.log$")
SNAPSHOT_RE = re.compile(r"^(\d{20})-(\d{10})\.checkpoint$")


@dataclass(frozen=True, slots=True)
class LogFile:
    path: PurePath  # a local file here; remote sources keep the path within their filesystem
    kind: str  # segment | snapshot | bootstrap
    offset: int  # segment: base offset; snapshot: end offset (exclusive); bootstrap: 0
    epoch: int = 0  # snapshot epoch

    @property
    def name(self) -> str:
        return self.path.name


def classify(path: PurePath) -> LogFile | None:
    """What a file in a metadata-log directory is, or None if it is not ours to read."""
    name = path.name
    if m := SEGMENT_RE.match(name):
        return LogFile(path, "segment", int(m.group(1)))
    if m := SNAPSHOT_RE.match(name):
        return LogFile(path, "snapshot", int(m.group(1)), int(m.group(2)))
    if name == "bootstrap.checkpoint":
        return LogFile(path, "bootstrap", 0)
    return None


def log_files(paths: Iterable[PurePath]) -> tuple[list[LogFile], list[LogFile]]:
    """(segments by base offset, snapshots by end offset) among the files of a metadata-log
    directory: how a listing is read, the local one (`list_log_dir`) and any filesystem's
    (`sources.files.log_files_at`)."""
    files = [f for p in paths if (f := classify(p)) is not None]
    segments = sorted((f for f in files if f.kind == "segment"), key=lambda f: f.offset)
    snapshots = sorted((f for f in files if f.kind == "snapshot"), key=lambda f: f.offset)
    return segments, snapshots


def list_log_dir(directory: Path) -> tuple[list[LogFile], list[LogFile]]:
    """(segments by base offset, snapshots by end offset) of a local metadata-log directory."""
    if not directory.is_dir():
        raise NotAKafkaLogError(f"{directory}: not a directory")
    return log_files(directory.iterdir())


def records_of_batch(batch: Batch, *, redact: bool = True) -> list[Record]:
    """Decode every record of a batch (undecodable values are kept with their reason)."""
    control = batch.is_control
    ts = batch.max_timestamp
    epoch = batch.partition_leader_epoch
    base = batch.base_offset
    secret_types = _secret_types() if redact else frozenset()
    fast = frame_decoders()
    out: list[Record] = []
    for raw in batch.records:
        value = raw.value
        if (not control and value is not None and len(value) > _SMALL and value[0] == 1
                and value[1] < 0x80 and value[2] < 0x80):
            entry = fast.get(value[1] << 8 | value[2])
            if entry is not None and entry[0] not in secret_types:
                try:  # the common case: straight to the body decoder
                    data, end = entry[1](value, 3)
                    if end == len(value):
                        out.append(Record(base + raw.offset_delta, ts, epoch, False, entry[0],
                                          value[1], value[2], data, value))
                        continue
                except (IndexError, struct.error, RecordDecodeError):
                    pass  # the full path below says precisely what is wrong
        d = decode_control_value(raw.key, value) if control else _decode_cached(value)
        data = d.data
        if d.type in secret_types and data is not None and redact_in_place(d.type, data):
            value = encode_metadata_value(d.type, d.version, data)
        out.append(Record(base + raw.offset_delta, ts, epoch, control, d.type, d.api_key,
                          d.version, data, value, d.error))
    return out


# Values of a few bytes (NoOpRecord above all) repeat by the thousand; decoding each
# distinct one once keeps a quiet log (98% NoOps) cheap. The cached data is copied on the
# way out so callers may mutate it.
_SMALL = 8
_small_cache: dict[bytes, Decoded] = {}


def _decode_cached(value: bytes | None) -> Decoded:
    if value is None or len(value) > _SMALL:
        return decode_metadata_value(value)
    hit = _small_cache.get(value)
    if hit is None:
        hit = _small_cache[value] = decode_metadata_value(value)
    if hit.data is None:
        return hit
    return Decoded(hit.type, hit.api_key, hit.version, dict(hit.data), hit.error)


@dataclass(slots=True)
class FileReport:
    """What reading one file found besides its records."""

    path: str
    kind: str
    batches: int = 0
    records: int = 0
    bytes: int = 0
    problems: list[Problem] = field(default_factory=list)
    undecodable: int = 0
    complete_until: int = 0  # byte position where the last complete batch ends


def iter_file(lf: LogFile, report: FileReport | None = None, *,
              redact: bool = True) -> Iterator[tuple[Batch, list[Record]]]:
    """Yield (batch, its records) for each good batch of a file; problems go to `report`."""
    buf = Path(lf.path).read_bytes()
    if report is not None:
        report.bytes = len(buf)
    for item in scan_batches(buf, str(lf.path)):
        if isinstance(item, Problem):
            if report is not None:
                report.problems.append(item)
            continue
        recs = records_of_batch(item, redact=redact)
        if report is not None:
            report.batches += 1
            report.records += len(recs)
            if any(r.error for r in recs):
                report.undecodable += sum(1 for r in recs if r.error)
            report.complete_until = item.position + item.size
        yield item, recs


def _resolve_log_dir(path: Path) -> Path | None:
    """The metadata-log directory a path names: itself, or its `__cluster_metadata-0` child."""
    if path.is_dir():
        child = path / METADATA_LOG_DIR
        if child.is_dir():
            return child
        if any(classify(p) is not None for p in path.iterdir()):
            return path
    return None


def _files_of(path: Path) -> list[LogFile]:
    """The binary files a CLI path stands for, in log order.

    A directory means its segments in base-offset order (the log itself; snapshots are read
    only when named, since they restate state the segments already hold). A single file is
    read whatever its name, so a renamed copy of a segment still decodes.
    """
    if not path.exists():
        raise NotAKafkaLogError(f"{path}: no such file or directory")
    if path.is_dir():
        log_dir = _resolve_log_dir(path)
        if log_dir is None:
            raise NotAKafkaLogError(f"{path}: not a KRaft metadata-log directory (no *.log, "
                                    "*.checkpoint or __cluster_metadata-0 inside)")
        segments, _ = list_log_dir(log_dir)
        return segments
    return [classify(path) or LogFile(path, "segment", 0)]


def iter_path(path: Path, problems: list[Problem | str]) -> Iterator[Record]:
    """Records of a path `kraftlake decode` accepts: a segment, a snapshot, a log directory
    or a kafka-dump-log text. What cannot be read is appended to `problems`; a file that
    holds no record batch at all raises NotAKafkaLogError.

    Args:
        path: a segment (`.log`), a snapshot (`.checkpoint`), a `__cluster_metadata-0`
            directory or a kafka-dump-log text.
        problems: a list the problems found are appended to.

    Returns:
        An iterator of `Record`s in offset order.

    Example:
        >>> import tempfile
        >>> from pathlib import Path
        >>> from kraftlake import simulate_cluster
        >>> sim = Path(tempfile.mkdtemp()) / "sim"
        >>> summary = simulate_cluster(sim, scenario="broker-crash", seed=1, hours=0.1)
        >>> from kraftlake import iter_path
        >>> problems = []
        >>> records = list(iter_path(sim / "__cluster_metadata-0", problems))
        >>> len(records) == summary["records"], problems
        (True, [])
    """
    if path.is_file() and dumplog.looks_like_dump_log(path):
        with path.open(encoding="utf-8", errors="replace") as lines:
            for item in dumplog.parse_dump_log(lines, str(path)):
                if isinstance(item, Record):
                    yield item
                else:
                    problems.append(str(item))
        return
    for lf in _files_of(path):
        report = FileReport(str(lf.path), lf.kind)
        for _batch, records in iter_file(lf, report):
            yield from records
        if report.batches == 0 and report.problems:
            with Path(lf.path).open("rb") as f:
                head = f.read(64)
            if not plausible_batch_start(head):
                raise NotAKafkaLogError(f"{lf.path}: not a Kafka metadata log "
                                        "(no record batch at its start)")
        problems.extend(report.problems)
