"""Writes a real `__cluster_metadata-0` directory, byte for byte as a KRaft controller would.

Segments are `<20-digit base offset>.log` files of RecordBatch v2 (CRC-32C, offsets
contiguous, one Raft epoch per batch, create-time timestamps, no compression), rolled when
the next batch would push a segment over `segment_bytes`. Snapshots are
`<endOffset>-<epoch>.checkpoint` files laid out like `RecordsSnapshotWriter` (header control
batch, data batches from offset 1, footer control batch). Beside the directory go
`meta.properties` and `bootstrap.checkpoint` (the formatter's files); inside it
`leader-epoch-checkpoint` and `quorum-state` so the directory looks like a broker's.

Only the bytes are produced here; which records to write is the controller model's job.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from kraftlake.codec.batch import build_batch, encode_batch
from kraftlake.codec.logfiles import METADATA_LOG_DIR
from kraftlake.codec.records import (
    Record,
    control_key,
    encode_control_value,
    encode_metadata_value,
    schema_named,
)
from kraftlake.kraft.records import LEADER_CHANGE, NO_OP_RECORD, SNAPSHOT_FOOTER, SNAPSHOT_HEADER

MAX_BATCH_BYTES = 8 * 1024 * 1024  # KafkaRaftClient.MAX_BATCH_SIZE_BYTES
_NOOP_VALUE = encode_metadata_value(NO_OP_RECORD, 0, {})


class LogWriter:
    """Appends batches to segment files and writes snapshots; offsets and epochs are its own."""

    def __init__(self, root: Path, *, segment_bytes: int = 8 * 1024 * 1024,
                 max_records_per_batch: int = 10_000) -> None:
        self.root = Path(root)
        self.dir = self.root / METADATA_LOG_DIR
        self.dir.mkdir(parents=True, exist_ok=True)
        self.segment_bytes = segment_bytes
        self.max_records = max_records_per_batch
        self.next = 0  # next offset
        self.epoch = 0  # Raft epoch of the batches being written
        self.last_ts = 0
        self.epoch_starts: list[tuple[int, int]] = []  # (epoch, start offset)
        self._seg_base = 0
        self._seg = bytearray()
        self._segments: list[int] = []
        self.bytes_written = 0
        self.batches = 0
        self.records = 0
        self._api_keys: dict[str, int] = {}

    # ------------------------------------------------------------ the clock

    def stamp(self, ts: int) -> int:
        """Batch timestamps strictly increase (the controller's append time)."""
        ts = max(ts, self.last_ts + 1)
        self.last_ts = ts
        return ts

    # ------------------------------------------------------------ segments

    def _put(self, raw: bytes) -> None:
        if self._seg and len(self._seg) + len(raw) > self.segment_bytes:
            self._flush_segment()
            self._seg_base = self.next
        self._seg += raw
        self.bytes_written += len(raw)
        self.batches += 1

    def _flush_segment(self) -> None:
        path = self.dir / f"{self._seg_base:020d}.log"
        path.write_bytes(bytes(self._seg))
        if self._seg_base not in self._segments:
            self._segments.append(self._seg_base)
        self._seg = bytearray()

    def _api_key(self, type_name: str) -> int:
        k = self._api_keys.get(type_name)
        if k is None:
            k = self._api_keys[type_name] = schema_named(type_name).api_key or -1
        return k

    def append(self, records: list[tuple[str, int, dict[str, Any]]], ts: int, *,
               atomic: bool = True) -> list[Record]:
        """Append data records as one batch (atomic) or as many as the limits need."""
        out: list[Record] = []
        values = [encode_metadata_value(t, v, d) for t, v, d in records]
        i = 0
        n = len(values)
        while i < n:
            j = i
            size = 0
            while j < n and j - i < self.max_records and (
                    j == i or size + len(values[j]) + 16 < MAX_BATCH_BYTES):
                size += len(values[j]) + 16
                j += 1
            if atomic and j < n:
                raise ValueError(f"atomic write of {n} records does not fit one batch")
            stamp = self.stamp(ts)
            batch = build_batch(self.next, self.epoch, stamp, values[i:j])
            self._put(encode_batch(batch))
            for k in range(i, j):
                t, v, d = records[k]
                out.append(Record(self.next + k - i, stamp, self.epoch, False, t,
                                  self._api_key(t), v, d, values[k]))
            self.next += j - i
            self.records += j - i
            i = j
        return out

    def append_noop(self, ts: int) -> None:
        """One NoOpRecord batch: the quorum's heartbeat."""
        self._put(encode_batch(build_batch(self.next, self.epoch, self.stamp(ts), [_NOOP_VALUE])))
        self.next += 1
        self.records += 1

    def append_control(self, type_name: str, data: dict[str, Any], ts: int) -> None:
        stamp = self.stamp(ts)
        batch = build_batch(self.next, self.epoch, stamp, [encode_control_value(type_name, data)],
                            control_keys=[control_key(type_name)])
        self._put(encode_batch(batch))
        self.next += 1
        self.records += 1

    def new_epoch(self, leader_id: int, voters: list[int], ts: int) -> None:
        """A Raft leader change: the new epoch starts with a LeaderChangeMessage batch."""
        self.epoch += 1
        self.epoch_starts.append((self.epoch, self.next))
        granting = voters[: len(voters) // 2 + 1]
        if leader_id not in granting:
            granting = [leader_id, *granting[:-1]]
        self.append_control(LEADER_CHANGE, {
            "version": 0, "leader_id": leader_id,
            "voters": [{"voter_id": v} for v in voters],
            "granting_voters": [{"voter_id": v} for v in sorted(granting)]}, ts)

    # ------------------------------------------------------------ snapshots

    def write_snapshot(self, records: list[tuple[str, int, dict[str, Any]] | bytes], *,
                       end_offset: int,
                       epoch: int, last_contained_ts: int, ts: int) -> Path:
        """`RecordsSnapshotWriter` layout: header, data batches (offsets from 1), footer."""
        out = bytearray()
        out += encode_batch(build_batch(0, epoch, ts, [encode_control_value(
            SNAPSHOT_HEADER, {"version": 0, "last_contained_log_timestamp":
                                     last_contained_ts})],
            control_keys=[control_key(SNAPSHOT_HEADER)]))
        off = 1
        values = [r if isinstance(r, bytes) else encode_metadata_value(*r) for r in records]
        i = 0
        while i < len(values):
            j, size = i, 0
            while j < len(values) and (j == i or size + len(values[j]) + 16 < MAX_BATCH_BYTES):
                size += len(values[j]) + 16
                j += 1
            out += encode_batch(build_batch(off, epoch, ts, values[i:j]))
            off += j - i
            i = j
        out += encode_batch(build_batch(off, epoch, ts, [encode_control_value(
            SNAPSHOT_FOOTER, {"version": 0})],
            control_keys=[control_key(SNAPSHOT_FOOTER)]))
        path = self.dir / f"{end_offset:020d}-{epoch:010d}.checkpoint"
        path.write_bytes(bytes(out))
        return path

    # ------------------------------------------------------------ finishing

    def close(self) -> None:
        if self._seg or not self._segments:
            self._flush_segment()

    def apply_retention(self) -> int:
        """Delete segments wholly below the newest snapshot, and snapshots older than the
        new log start (Kafka keeps the log from a snapshot on). Returns segments deleted."""
        snaps = sorted(int(p.name[:20]) for p in self.dir.glob("*.checkpoint"))
        if not snaps:
            return 0
        newest = snaps[-1]
        bases = sorted(self._segments)
        deleted = 0
        for k, base in enumerate(bases[:-1]):
            if bases[k + 1] <= newest:
                (self.dir / f"{base:020d}.log").unlink()
                self._segments.remove(base)
                deleted += 1
            else:
                break
        start = min(self._segments)
        for p in self.dir.glob("*.checkpoint"):
            if int(p.name[:20]) < start:
                p.unlink()
        return deleted

    def write_companions(self, *, cluster_id: str, node_id: int, directory_id: str,
                         bootstrap: list[tuple[str, int, dict[str, Any]]], leader_id: int,
                         voters: list[int], ts: int, formatted: str) -> None:
        """meta.properties, bootstrap.checkpoint beside the log; epoch files inside it."""
        (self.root / "meta.properties").write_text(
            f"#\n#{formatted}\ncluster.id={cluster_id}\ndirectory.id={directory_id}\n"
            f"node.id={node_id}\nversion=1\n")
        out = bytearray()
        out += encode_batch(build_batch(0, 0, ts, [encode_control_value(
            SNAPSHOT_HEADER, {"version": 0, "last_contained_log_timestamp": 0})],
            control_keys=[control_key(SNAPSHOT_HEADER)]))
        values = [encode_metadata_value(t, v, d) for t, v, d in bootstrap]
        if values:
            out += encode_batch(build_batch(1, 0, ts, values))
        out += encode_batch(build_batch(1 + len(values), 0, ts, [encode_control_value(
            SNAPSHOT_FOOTER, {"version": 0})],
            control_keys=[control_key(SNAPSHOT_FOOTER)]))
        (self.root / "bootstrap.checkpoint").write_bytes(bytes(out))
        lines = ["0", str(len(self.epoch_starts))]
        lines += [f"{e} {o}" for e, o in self.epoch_starts]
        (self.dir / "leader-epoch-checkpoint").write_text("\n".join(lines) + "\n")
        (self.dir / "quorum-state").write_text(json.dumps({
            "leaderId": leader_id, "leaderEpoch": self.epoch, "votedId": -1,
            "appliedOffset": 0, "currentVoters": [{"voterId": v} for v in voters],
            "data_version": 0}, separators=(",", ":")))
