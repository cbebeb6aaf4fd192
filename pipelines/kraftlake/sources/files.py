"""Where the input is: log directories, their cluster id, and an offset index of segments.

The index is built from batch headers only (seek + 61 bytes per batch), so mapping log
offsets to byte ranges costs a few microseconds per batch and never decodes records. It is
what lets the driver hand Spark one task per byte range and the streaming reader turn
metadata-log offsets into file positions.

Locations are URIs (`kraftlake.uris`): a local directory, `file://` or `s3a://`; every file
is reached through pyarrow's filesystems, here on the driver and in the executors that read
the ranges, so a log shipped to an object store is read like a local one.
"""

from __future__ import annotations

import re
import struct
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath

import pyarrow.fs as pafs

from .. import uris
from ..codec.batch import (
    HEADER,
    HEADER_SIZE,
    LOG_OVERHEAD,
    MAX_BATCH_LENGTH,
    MIN_BATCH_LENGTH,
    Batch,
    plausible_batch_start,
    scan_batches,
)
from ..codec.errors import NotAKafkaLogError, NotTheMetadataLogError
from ..codec.logfiles import (
    METADATA_LOG_DIR,
    LogFile,
    classify,
    log_files,
    records_of_batch,
)

_LEN = struct.Struct(">qi")


def _meta_properties(log_dir: str | Path) -> list[tuple[str, str]]:
    """(URI, text) of each meta.properties beside (or inside) a `__cluster_metadata-0`."""
    d = uris.to_uri(log_dir)
    found = []
    for props in (uris.join(uris.parent(d), "meta.properties"), uris.join(d, "meta.properties")):
        text = uris.read_text(props)
        if text is not None:
            found.append((props, text))
    return found


def read_cluster_id(log_dir: str | Path) -> str | None:
    """`cluster.id` from the meta.properties beside (or inside) a `__cluster_metadata-0`.

    Args:
        log_dir: the `__cluster_metadata-0` directory (a path or URI).

    Returns:
        The cluster id, or None when no meta.properties names one.

    Example:
        >>> import tempfile
        >>> from pathlib import Path
        >>> from kraftlake import simulate_cluster
        >>> sim = Path(tempfile.mkdtemp()) / "sim"
        >>> summary = simulate_cluster(sim, scenario="broker-crash", seed=1, hours=0.1)
        >>> from kraftlake import read_cluster_id
        >>> read_cluster_id(sim / "__cluster_metadata-0") == summary["cluster_id"]
        True
    """
    for _, text in _meta_properties(log_dir):
        for line in text.splitlines():
            key, sep, value = line.partition("=")
            if sep and key.strip() == "cluster.id":
                return value.strip()
    return None


def no_cluster_id(log_dir: str | Path, remedy: str) -> str:
    """The error line for a log directory whose cluster id `read_cluster_id` did not find:
    there is no meta.properties, or the one there names no `cluster.id`; then `remedy`."""
    found = _meta_properties(log_dir)
    if found:
        return f"{log_dir}: {found[0][0]} holds no cluster.id; {remedy}"
    return f"{log_dir}: no meta.properties beside it; {remedy}"


def find_log_dirs(path: str | Path) -> list[str]:
    """A `__cluster_metadata-0` directory itself, or every one below `path` (as URIs)."""
    uri = uris.to_uri(path)
    fs, root = uris.filesystem(uri)
    kind = fs.get_file_info(root).type
    if kind == pafs.FileType.NotFound:
        raise NotAKafkaLogError(f"{path}: no such file or directory")
    if kind == pafs.FileType.Directory:
        if any(_log_file(i.path) for i in uris.listing(uri)):
            return [uri]
        found = sorted({uris.parent(i.path) for i in uris.listing(uri, recursive=True)
                        if _log_file(i.path) and
                        uris.basename(uris.parent(i.path)) == METADATA_LOG_DIR})
        if found:
            return [uris.to_location(uri, p) for p in found]
    raise NotAKafkaLogError(f"{path}: not a metadata-log directory and none below it")


def _log_file(path: str) -> bool:
    """A segment or a snapshot of a metadata log (a directory of snapshots alone is one: Kafka
    starts from its latest); `bootstrap.checkpoint` beside the log directory is neither."""
    found = classify(PurePosixPath(path))
    return path.endswith(".log") or (found is not None and found.kind == "snapshot")


# Kafka names a partition's directory `<topic>-<partition>`, with a `.<id>-delete`,
# `-future` or `-stray` suffix while it is deleted, moved between log dirs or orphaned
# (storage/.../internals/log/LocalLog.java: DeleteDirSuffix, FutureDirSuffix, StrayDirSuffix).
_PARTITION_DIR = re.compile(
    r"^(?P<topic>.+)-(?P<partition>\d+)(?:\.[0-9a-f]+-(?:delete|future|stray))?$")
# How much of a log's start is read to tell metadata records from user data: the first
# batches of a segment hold the controller's bootstrap records (or a user's messages).
_SNIFF_BYTES = 1 << 20
_SNIFF_RECORDS = 64


def require_metadata_log(uri: str) -> None:
    """Refuse a directory that holds some other topic's partition, before anything reads it
    further: a user topic's segments carry user payloads, which must never reach the lake
    (not even as undecodable bytes in `quarantine`).

    Two tests, each enough to refuse: the directory is named as Kafka names the partition
    directory of another topic (`orders-0`), or the first records of its log are not KRaft
    metadata records (a copy renamed to anything, `__cluster_metadata-0` included). A log
    with no data record yet (empty segments, snapshots only) is accepted: nothing of it can
    leak.
    """
    _refuse_partition_dir(uri)
    segments, _ = log_files_at(uri)
    _refuse_user_records(uri, [uris.to_location(uri, str(seg.path)) for seg in segments])


def require_metadata_segment(uri: str) -> None:
    """The same refusal for one segment file named on its own (`kraftlake decode
    telemetry-0/00000000000000000000.log`): its directory's name, then its first records."""
    _refuse_partition_dir(uris.parent(uri))
    _refuse_user_records(uri, [uri])


def _refuse_partition_dir(uri: str) -> None:
    name = uris.basename(uri.rstrip("/"))
    m = _PARTITION_DIR.match(name)
    if m and name != METADATA_LOG_DIR:
        raise NotTheMetadataLogError(
            f"{uri}: the directory of partition {m['partition']} of topic '{m['topic']}', "
            f"not the KRaft metadata log ({METADATA_LOG_DIR}); refusing to read user data")


def _refuse_user_records(what: str, segments: list[str]) -> None:
    """Refuse when the first records of `segments` (in log order) are not metadata records."""
    seen = 0
    for location in segments:
        head = uris.read_bytes(location, 0, _SNIFF_BYTES)
        batches = 0
        for item in scan_batches(head, uris.basename(location)):
            if not isinstance(item, Batch):
                continue
            batches += 1
            if item.is_control:
                continue
            for rec in records_of_batch(item):
                if rec.error is None:
                    return  # a metadata record: this is a metadata log
                seen += 1
            if seen >= _SNIFF_RECORDS:
                break
        if not batches and head.strip(b"\0") and not plausible_batch_start(head):
            raise NotAKafkaLogError(f"{location}: not a Kafka log (no record batch at its "
                                    f"start)")
        if seen >= _SNIFF_RECORDS:
            break
    if seen:
        raise NotTheMetadataLogError(
            f"{what}: its first {seen} records are not KRaft metadata records: not the KRaft "
            f"metadata log ({METADATA_LOG_DIR}); refusing to read user data")


def log_dir_bytes(uri: str) -> int:
    """Bytes of a metadata-log directory's files (segments, snapshots, the rest beside
    them): what a first ingest of it reads."""
    return sum(i.size for i in uris.listing(uri) if i.type == pafs.FileType.File)


def log_files_at(uri: str) -> tuple[list[LogFile], list[LogFile]]:
    """(segments by base offset, snapshots by end offset) of a metadata-log directory at a
    URI (`codec.logfiles.log_files` of its listing).

    `LogFile.path` is the file's path within its filesystem (`uris.filesystem`);
    `LogDirIndex.location` gives its URI.
    """
    entries = uris.listing(uri)
    if not entries and uris.file_size(uri) is None:
        raise NotAKafkaLogError(f"{uri}: not a directory")
    return log_files(PurePosixPath(i.path) for i in entries if i.type == pafs.FileType.File)


@dataclass(slots=True)
class BatchEntry:
    base_offset: int
    last_offset: int
    position: int
    size: int
    crc: int
    epoch: int  # the partition leader epoch, outside what the CRC covers


@dataclass
class SegmentIndex:
    """Batches of one segment found by walking headers; `end` = bytes of complete batches."""

    path: str  # the segment's location (uris)
    base_offset: int
    entries: list[BatchEntry] = field(default_factory=list)
    end: int = 0
    size: int = 0
    status: str = "ok"  # ok | partial (last batch still being written) | damaged

    @property
    def next_offset(self) -> int:
        return self.entries[-1].last_offset + 1 if self.entries else self.base_offset

    def refresh(self) -> SegmentIndex:
        """Extend the index with batches appended since the last call."""
        size = uris.file_size(self.path) or 0
        if size < self.end:  # truncated (a Raft leader change rewrote the tail): start over
            self.entries.clear()
            self.end = 0
            self.status = "ok"
        self.size = size
        if self.status == "damaged":
            return self
        pos = self.end
        status = "ok"
        if size == pos:  # nothing new (and no file opened: cheap on an object store)
            self.status = status
            return self
        fs, where = uris.filesystem(self.path)
        with fs.open_input_file(where) as fh:
            while pos + LOG_OVERHEAD <= size:
                fh.seek(pos)
                head = fh.read(HEADER_SIZE)
                base, length = _LEN.unpack_from(head, 0)
                if base == 0 and length == 0:
                    break  # preallocated zeros: nothing more yet
                if length < MIN_BATCH_LENGTH or length > MAX_BATCH_LENGTH:
                    status = "damaged"
                    break
                if pos + LOG_OVERHEAD + length > size:
                    status = "partial"
                    break
                if len(head) < HEADER_SIZE or head[16] != 2:
                    status = "damaged"
                    break
                fields = HEADER.unpack_from(head, 0)
                self.entries.append(BatchEntry(base, base + fields[6], pos,
                                               LOG_OVERHEAD + length, fields[4], fields[2]))
                pos += LOG_OVERHEAD + length
            else:
                if pos < size:
                    status = "partial"
        self.status = status
        self.end = pos
        return self

    def entry_before(self, offset: int) -> BatchEntry | None:
        """The batch holding `offset - 1` (the last one ingested when resuming at offset)."""
        for e in reversed(self.entries):
            if e.base_offset <= offset - 1 <= e.last_offset:
                return e
            if e.last_offset < offset - 1:
                return None
        return None


@dataclass
class LogDirIndex:
    """Segments and snapshots of one `__cluster_metadata-0`, refreshed on demand."""

    path: str  # the directory's location (uris)
    segments: dict[str, SegmentIndex] = field(default_factory=dict)
    snapshots: list[LogFile] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.path = uris.to_uri(self.path)

    def refresh(self) -> LogDirIndex:
        """List the directory again: segments deleted by retention dropped, new ones indexed, each
        one's index extended by the batches appended since (`SegmentIndex.refresh`), the snapshots
        listed afresh. Returns itself (`index.refresh().log_end`)."""
        segs, snaps = log_files_at(self.path)
        live = {s.name for s in segs}
        for name in list(self.segments):
            if name not in live:
                del self.segments[name]  # deleted by retention
        for s in segs:
            idx = self.segments.get(s.name)
            if idx is None:
                idx = self.segments[s.name] = SegmentIndex(self.location(s), s.offset)
            idx.refresh()
        self.snapshots = snaps
        return self

    def location(self, f: LogFile) -> str:
        """The URI of a file of this directory."""
        return uris.to_location(self.path, str(f.path))

    def ordered(self) -> list[SegmentIndex]:
        return sorted(self.segments.values(), key=lambda s: s.base_offset)

    @property
    def log_start(self) -> int | None:
        segs = self.ordered()
        if not segs:
            return None
        first = segs[0]
        return first.entries[0].base_offset if first.entries else first.base_offset

    @property
    def log_end(self) -> int:
        """Offset after the last complete batch (a partly written batch is not counted)."""
        end = 0
        for s in self.ordered():
            end = max(end, s.next_offset if s.entries else s.base_offset)
        return end

    def waiting(self) -> tuple[int, int] | None:
        """(offset, bytes) of a batch the last segment holds only the start of (being
        written, or a copy cut inside it): not read until it is complete; None when the
        last segment ends with a whole batch."""
        segs = self.ordered()
        if not segs or segs[-1].status != "partial":
            return None
        last = segs[-1]
        return last.next_offset, last.size - last.end

    def batch_before(self, offset: int) -> BatchEntry | None:
        for s in reversed(self.ordered()):
            if s.base_offset <= offset - 1:
                return s.entry_before(offset)
        return None

    def batch_before_on_disk(self, offset: int) -> BatchEntry | None:
        """`batch_before`, re-checked against the file: the index caches headers, and a tail
        truncated and rewritten to the same length (new Raft leader) would otherwise keep
        the old CRC and epoch. If the header on disk differs, the whole index is walked
        again."""
        for s in reversed(self.ordered()):
            if s.base_offset <= offset - 1:
                e = s.entry_before(offset)
                if e is None:
                    return None
                head = uris.read_bytes(s.path, e.position, e.position + HEADER_SIZE)
                fields = HEADER.unpack_from(head, 0) if len(head) == HEADER_SIZE else None
                if fields is not None and (fields[0], fields[4], fields[2]) == (
                        e.base_offset, e.crc, e.epoch):
                    return e
                self.segments.clear()
                self.refresh()
                return self.batch_before(offset)
        return None


@dataclass(frozen=True, slots=True)
class ReadRange:
    """One Spark task's input: bytes [start, end) of a file; keep records in [lo, hi)."""

    cluster_id: str
    path: str
    kind: str  # segment | snapshot | gap | diverged
    start: int = 0
    end: int = -1  # -1 = to the end of the file
    lo: int = 0
    hi: int = 2**63 - 1
    snapshot_end: int = -1
    snapshot_role: str = ""
    note: str = ""


def plan_log_ranges(cluster_id: str, index: LogDirIndex, lo: int, hi: int,
                    split_bytes: int) -> list[ReadRange]:
    """Byte ranges covering log offsets [lo, hi), at most `split_bytes` each (batch aligned).

    A rolled segment that ends in damage has its unreadable tail read too, so the
    damaged region reaches the quarantine instead of vanishing. Offsets no segment holds
    between two segments (a segment missing from the copy, one that ends before the next
    one starts) are a `gap` range (`hole`): Kafka's log has no holes, so they are offsets
    the input lost.
    """
    out: list[ReadRange] = []
    segs = index.ordered()
    seg_lo = lo
    for i, seg in enumerate(segs):
        nxt = segs[i + 1].base_offset if i + 1 < len(segs) else None
        if i and segs[i - 1].status == "ok":  # a damaged or cut tail is its own problem row
            missing = hole(cluster_id, segs[i - 1], seg, seg_lo, hi)
            if missing is not None:
                out.append(missing)
        lo = seg_lo  # overlapping segments: an offset is taken from the first file holding it
        if seg.entries:
            seg_lo = max(seg_lo, seg.next_offset)
        if nxt is not None and nxt <= lo and (not seg.entries or seg.next_offset <= lo):
            continue
        if seg.base_offset >= hi:
            break
        path = str(seg.path)
        if seg.status == "damaged":
            start = 0
            for e in seg.entries:
                if e.last_offset < lo:
                    start = e.position + e.size
            out.append(ReadRange(cluster_id, path, "segment", start, -1, lo, hi,
                                 note="rolled" if nxt is not None else ""))
            continue
        chosen = [e for e in seg.entries if e.last_offset >= lo and e.base_offset < hi]
        cur: list[BatchEntry] = []
        for e in chosen:
            if cur and (e.position + e.size - cur[0].position) > split_bytes:
                out.append(ReadRange(cluster_id, path, "segment", cur[0].position,
                                     cur[-1].position + cur[-1].size, lo, hi))
                cur = []
            cur.append(e)
        if cur:
            end = cur[-1].position + cur[-1].size
            rolled = nxt is not None and seg.status == "partial" and cur[-1] is seg.entries[-1]
            out.append(ReadRange(cluster_id, path, "segment", cur[0].position,
                                 -1 if rolled else end, lo, hi, note="rolled" if rolled else ""))
    return out


def hole(cluster_id: str, before: SegmentIndex, after: SegmentIndex, lo: int,
         hi: int) -> ReadRange | None:
    """The `gap` range of the offsets in [lo, hi) between segment `before`'s last batch
    and segment `after`'s base offset (None: the two segments meet or overlap there)."""
    start, end = max(before.next_offset, lo), min(after.base_offset, hi)
    if start >= end:
        return None
    return ReadRange(cluster_id, "", "gap", lo=start, hi=end, note=(
        f"log offsets [{start}, {end}) are missing from the input: "
        f"{uris.basename(before.path)} ends at offset {before.next_offset} and "
        f"{uris.basename(after.path)} starts at {after.base_offset}; the state they "
        f"changed is unknown"))
