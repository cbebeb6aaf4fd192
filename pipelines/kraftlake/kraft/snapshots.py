"""Which snapshot a reader of the metadata log resets from, when the log no longer holds the
offset it needs next: the one rule of the pipeline's plans (`sources.plan`) and of the
sequential replay (`reference.replay`).

Kafka keeps no snapshot below its log's start offset: at startup
`KafkaMetadataLog.recoverSnapshots` deletes every snapshot whose end offset is below the log
start, and refuses to start ("Inconsistent snapshot state") when the log start is above 0 and
no snapshot is at or above it. A listener that starts fresh, or whose next offset is below
the log start, is then handed the latest snapshot (`KafkaRaftClient.updateListenersProgress`)
and reads the log after it. A snapshot below the log start is therefore never a state Kafka
resumes from: the records between its end offset and the log start are gone, and applying
the log to it would fold a state that never existed.

kraftlake differs from Kafka in one choice, and keeps the rule: it resets only when it must
(a log that still starts at the next offset is read from there), and from the *oldest*
snapshot at or above the log start, not the latest, so that every record the log still holds
is folded one by one (history kept; each later snapshot is checked against the fold). When
no snapshot is at or above the log start there is no reset: the state before the log start is
unknown, and the pipeline records the offsets it lost as a gap (docs/decisions.md, "The
snapshot a read resets from").
"""

from __future__ import annotations

from collections.abc import Iterable


def reset_snapshot(snapshot_ends: Iterable[int], log_start: int | None,
                   next_offset: int = 0) -> int | None:
    """The end offset of the snapshot a read that needs `next_offset` next (0: a read from
    the beginning) resets from; None when the log still holds `next_offset`, or when no
    snapshot is at or above the log start. A log with no segment (`log_start` None: a
    directory of snapshots alone) resets from its latest snapshot, as Kafka starts from it,
    unless the read is past it already."""
    if log_start is None:
        latest = max(snapshot_ends, default=None)
        return latest if latest is not None and next_offset < latest else None
    if next_offset >= log_start:
        return None
    return min((end for end in snapshot_ends if end >= log_start), default=None)
