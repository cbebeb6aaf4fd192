"""What to read next: log offsets -> byte ranges, snapshots as reset or check points.

Shared by the batch reader and the streaming reader so both agree on semantics:

* a fresh read of a log that no longer starts at offset 0 starts from the oldest snapshot
  at or above the log start (a *reset*: full state at its end offset - 1;
  `kraft.snapshots.reset_snapshot`, the rule the sequential replay follows too);
* a reader that fell behind retention records a *gap* [from, to) and resumes from such a
  snapshot; with none, the gap runs to the log start and the state before it is unknown;
* every other snapshot whose end offset falls in the range read is a *check*: the fold's
  state at end offset - 1 is reconciled against it.

A plan is a pure function of (start offset dict, end offset dict, files on disk), so a
micro-batch re-run after a crash reads the same records.
"""

from __future__ import annotations

from dataclasses import asdict

from .. import uris
from ..codec.batch import Batch, scan_batches
from ..codec.logfiles import records_of_batch
from ..kraft.records import NO_OP_RECORD
from ..kraft.snapshots import reset_snapshot
from .files import LogDirIndex, ReadRange, plan_log_ranges

# the most bytes of a log's tail `noops_only` reads: a tail of NoOps is a few dozen bytes a
# batch, and a longer one holds other records (it is read at once, not held)
NOOP_TAIL_BYTES = 64 * 1024

FRESH = -1


def offset_dict(offset: int, snap: int = -1, reset: int = -1, crc: int = -1,
                diverged_at: int = -1) -> dict:
    return {"offset": int(offset), "snap": int(snap), "reset": int(reset), "crc": int(crc),
            "diverged_at": int(diverged_at)}


def latest(index: LogDirIndex, start: dict, max_offsets: int | None = None,
           target: int | None = None) -> dict:
    """End offset dict for a read that starts at `start`: everything available, or at most
    `max_offsets` log offsets (records are filtered by offset, so any cut is valid), and
    never past `target` (the end an AvailableNow run fixed when it started)."""
    index.refresh()
    log_start = index.log_start
    log_end = index.log_end
    nxt = start["offset"]
    diverged_at = -1
    if nxt > 0 and start.get("crc", -1) >= 0:
        # the batch holding nxt - 1 must be the one read last time (same CRC); a read may
        # have ended inside it (max offsets), so it can hold offsets from nxt on as well
        e = index.batch_before_on_disk(nxt)
        if e is not None and e.crc != start["crc"]:
            diverged_at = nxt  # bytes before `nxt` changed since we read them
        elif e is None and log_start is not None and log_start < nxt \
                and index.log_end < nxt:
            diverged_at = nxt  # the log was truncated below what we already read
    # with no segment, the offsets a read has reached are its snapshots' (none is read twice)
    reached = max(nxt, 0) if log_start is not None else max(nxt, start.get("snap", -1), 0)
    found = reset_snapshot((s.offset for s in index.snapshots), log_start, reached)
    reset = -1 if found is None else found
    lo = reset if reset >= 0 else max(nxt, 0 if log_start is None else
                                      (log_start if nxt == FRESH else nxt))
    end = max(lo, log_end)
    if max_offsets:
        end = min(end, lo + max_offsets)
    if target is not None:
        end = max(lo, min(end, target))
    snaps = [s.offset for s in index.snapshots if s.offset <= end]
    snap = max([start.get("snap", -1), reset, *snaps])
    e = index.batch_before(end)
    crc = e.crc if e is not None else -1  # -1: not checkable (reported once, not each trigger)
    if (end == nxt and reset < 0 and snap == start.get("snap", -1) and diverged_at < 0):
        return start
    return offset_dict(end, snap, reset, crc, diverged_at)


def noops_only(index: LogDirIndex, start: dict, end: dict) -> bool:
    """Whether the log between two offset dicts holds nothing but NoOpRecords: the records an
    idle active controller writes every `metadata.max.idle.interval.ms` (500 ms) so that
    its followers see it alive. Only the log's tail (a reader catching up is never held), no
    snapshot, no reset, no divergence between them, and at most `NOOP_TAIL_BYTES` of
    complete batches."""
    if (end.get("snap", -1) != start.get("snap", -1) or end.get("reset", -1) >= 0
            or end.get("diverged_at", -1) >= 0 or end["offset"] <= start["offset"]
            or end["offset"] < index.log_end):
        return False
    lo, hi = max(start["offset"], 0), end["offset"]
    read = 0
    for seg in index.ordered():
        entries = [e for e in seg.entries if e.last_offset >= lo and e.base_offset < hi]
        if not entries:
            continue
        first, last = entries[0].position, entries[-1].position + entries[-1].size
        read += last - first
        if read > NOOP_TAIL_BYTES:
            return False
        for b in scan_batches(uris.read_bytes(seg.path, first, last)):
            if not isinstance(b, Batch) or b.is_control or any(
                    r.type != NO_OP_RECORD for r in records_of_batch(b)):
                return False
    return read > 0


def plan(cluster_id: str, index: LogDirIndex, start: dict, end: dict,
         split_bytes: int) -> list[ReadRange]:
    """The ranges of a read between two offset dicts (see the module docstring)."""
    ranges: list[ReadRange] = []
    nxt = start["offset"]
    reset = end.get("reset", -1)
    snaps = {s.offset: s for s in index.snapshots}
    if end.get("diverged_at", -1) >= 0:
        at = end["diverged_at"]
        ranges.append(ReadRange(cluster_id, "", "diverged", lo=at, hi=at, note=(
            f"the bytes before offset {at} changed after they were ingested (diverged or "
            f"truncated tail); offsets below {at} are not ingested again")))
    log_start = index.log_start
    if reset >= 0:
        if nxt >= 0 and nxt < reset:
            ranges.append(ReadRange(cluster_id, "", "gap", lo=nxt, hi=reset, note=(
                f"log offsets [{nxt}, {reset}) were deleted by retention before they were "
                f"read; resumed from snapshot {reset}")))
        s = snaps.get(reset)
        if s is not None:
            ranges.append(ReadRange(cluster_id, index.location(s), "snapshot", snapshot_end=reset,
                                    snapshot_role="reset"))
        lo = reset
    else:
        lo = max(nxt, 0)
        if nxt == FRESH and log_start:
            ranges.append(ReadRange(cluster_id, "", "gap", lo=0, hi=log_start, note=(
                f"the log starts at offset {log_start} and no snapshot covers it; "
                f"state before {log_start} is unknown")))
            lo = log_start
        elif log_start is not None and nxt > 0 and nxt < log_start:
            ranges.append(ReadRange(cluster_id, "", "gap", lo=nxt, hi=log_start, note=(
                f"log offsets [{nxt}, {log_start}) were deleted and no snapshot covers them")))
            lo = log_start
    ranges += plan_log_ranges(cluster_id, index, lo, end["offset"], split_bytes)
    for off in sorted(snaps):
        if start.get("snap", -1) < off <= end.get("snap", -1) and off not in (reset, 0):
            ranges.append(ReadRange(cluster_id, index.location(snaps[off]), "snapshot",
                                    snapshot_end=off, snapshot_role="check"))
    return ranges


def as_value(r: ReadRange) -> dict:
    return asdict(r)
