"""What an increment reports, and where the lake stands for a cluster, from its progress rows.

Without pyspark: `kraftlake ingest` decides from these whether its logs hold anything new
before Spark is loaded (`jobs.nothing_new`), with the rules the increments follow.
"""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass
class IncrementResult:
    cluster_id: str
    app_id: str
    version: int
    start_offset: int | None = None
    end_offset: int | None = None
    records: int = 0
    quarantined: int = 0
    changes: int = 0
    timeline: int = 0
    events: int = 0
    orphans: int = 0
    mismatches: int = 0
    pending_txn_from: int | None = None
    newest_us: int | None = None  # the newest log record read, microseconds since the epoch
    # the header of the log batch holding end_offset - 1, as read (`jobs.batch._check_tail`)
    end_batch_crc: int | None = None
    end_batch_epoch: int | None = None
    # offsets a damaged batch that may have held changes took with it, or the input lacks
    # (a gap): [lo, hi) and the batch's time (None for a gap); every state carried across
    # them is marked uncertain (`jobs.increment.unknown_ranges`)
    unknown: list[tuple[int, int, int | None]] = field(default_factory=list)
    refused: str | None = None  # why the input was not ingested (not a metadata log, diverged)
    source: str = ""  # the input as the user named it
    maintenance_errors: list[str] = field(default_factory=list)  # a stream's compaction
    skipped: list[str] = field(default_factory=list)
    event_counts: dict[str, int] = field(default_factory=dict)
    stage_seconds: dict[str, float] = field(default_factory=dict)  # wall time per stage
    commit_seconds: dict[str, float] = field(default_factory=dict)  # Delta commit per table
    # table -> the version of this increment's commit of it (`ingest_progress.table_versions`)
    table_versions: dict[str, int] = field(default_factory=dict)
    seconds: float = 0.0  # a stream's micro-batch, from its start to its last commit

    @property
    def unknown_offsets(self) -> int:
        return sum(hi - lo for lo, hi, _ts in self.unknown)

    def loss_note(self) -> str | None:
        """The line a user reads when damage, a gap or a record-level check took offsets
        that may have held changes."""
        if not self.unknown:
            return None
        where = ", ".join(f"[{lo}, {hi})" for lo, hi, _ts in self.unknown[:5])
        more = f" and {len(self.unknown) - 5} more" if len(self.unknown) > 5 else ""
        return (f"{self.cluster_id}: {self.unknown_offsets} offset(s) unknown: offsets "
                f"{where}{more} (damaged, missing from the input, or failing a record-level "
                f"check) may have held partition changes; every partition state carried "
                f"across them is marked uncertain (uncertain_since) until a PartitionRecord "
                f"or a snapshot re-anchors it; see table `quarantine`")


def last_of(rows: list[dict], app_id: str) -> dict | None:
    """The newest progress row of one app id (its last committed increment)."""
    own = [r for r in rows if r["app_id"] == app_id]
    return max(own, key=lambda r: r["version"]) if own else None


def furthest(rows: list[dict]) -> dict | None:
    """How far the lake holds the cluster, whichever job (ingest, stream) got it there: the
    progress row with the highest end offset (the newest of equals)."""
    return max(rows, key=lambda r: (r["end_offset"] or 0, r["version"])) if rows else None
