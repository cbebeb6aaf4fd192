"""The invariants of docs/semantics.md section 5, as reusable checks.

Three layers, so that each caller can use what it has:

* `check_step(step, replay=None)` - one partition step (a `replay.Step`, or the same facts
  rebuilt from a Spark row): invariants 5-26 and 31 that concern a single change. With the
  live `Replay` it also checks what needs broker state (9: new ISR = active replicas,
  31: leader moved to a fenced broker).
* `check_problems(problems)` - what the replay refused (unknown topic, wrong broker epoch,
  transaction framing...) mapped to the invariant it breaks (5, 27, 28, 26, 1).
* `check_log_dir(path)` - everything over a `__cluster_metadata-0` directory: bytes and
  framing (1-4), snapshot structure (30), snapshot = log-derived state (29), plus the two
  layers above over a full replay.

Levels: E = the controller guarantees it (a violation means corrupt or foreign input, or a
bug of ours); W = expected but version-dependent or not enforced.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from kraftlake.codec.logfiles import LogFile, iter_file
from kraftlake.kraft.configs import controller_min_isr
from kraftlake.kraft.partition import (
    LRS_CHANGE_VALUES,
    LRS_NO_CHANGE,
    MIGRATING_DIR,
    NO_LEADER,
    NO_LEADER_CHANGE,
    RECOVERED,
    RECOVERING,
    PartitionRegistration,
)
from kraftlake.kraft.records import LEADER_CHANGE
from kraftlake.kraft.versions import (
    ELR_FEATURE,
    MV_3_2_IV0,
    MV_3_3_IV0,
    MV_3_6_IV0,
    MV_3_7_IV2,
    MV_4_0_IV1,
    MV_FEATURE,
    MV_FIRST_ELR,
)
from kraftlake.reference.replay import (
    CHANGED,
    CREATED,
    ELR_CLEARED,
    RESET,
    Problem,
    Replay,
    Step,
    plan_log_dir,
    read_records,
)

E, W = "E", "W"


@dataclass(frozen=True, slots=True)
class Violation:
    invariant: int
    level: str  # E | W
    offset: int | None
    partition: str | None  # "topic:partition" (topic name when known, else id)
    message: str

    def __str__(self) -> str:
        where = f" {self.partition}" if self.partition else ""
        at = f" @{self.offset}" if self.offset is not None else ""
        return f"[{self.level}{self.invariant}]{at}{where}: {self.message}"


def _pname(step: Step) -> str:
    return f"{step.topic_name or step.topic_id}:{step.partition_id}"


def _lost(old: tuple[int, ...], new: tuple[int, ...]) -> bool:
    return not set(old) <= set(new)


def _is_subsequence(sub: tuple[int, ...], seq: tuple[int, ...]) -> bool:
    it = iter(seq)
    return all(x in it for x in sub)


def check_state(step: Step) -> list[Violation]:
    """Invariants that hold for the state after any record (10-13, 16-19, 26)."""
    s: PartitionRegistration = step.after
    out: list[Violation] = []

    def v(n: int, level: str, msg: str) -> None:
        out.append(Violation(n, level, step.offset, _pname(step), msg))

    if s.leader != NO_LEADER and s.leader not in s.isr:
        v(10, E, f"leader {s.leader} not in ISR {list(s.isr)}")
    if not set(s.isr) <= set(s.replicas) or len(set(s.isr)) != len(s.isr) \
            or any(b < 0 for b in s.isr):
        v(11, E, f"ISR {list(s.isr)} not a duplicate-free subset of replicas "
                 f"{list(s.replicas)}")
    if len(set(s.replicas)) != len(s.replicas):
        v(11, E, f"duplicate replicas {list(s.replicas)}")
    rec = step.record
    if not s.isr and rec is not None and rec.version < 2:
        v(12, E, "ISR empty although the record cannot carry ELR (version < 2)")
    if set(s.eligible_leader_replicas) & set(s.isr):
        v(13, E, f"ELR {list(s.eligible_leader_replicas)} intersects ISR {list(s.isr)}")
    if not set(s.eligible_leader_replicas) <= set(s.replicas):
        v(16, W, f"ELR {list(s.eligible_leader_replicas)} not within replicas "
                 f"{list(s.replicas)}")
    if len(s.last_known_elr) > 1:
        v(17, W, f"LastKnownElr holds {len(s.last_known_elr)} ids")
    elif s.last_known_elr and s.leader != NO_LEADER:
        v(17, W, f"LastKnownElr {list(s.last_known_elr)} while leader is {s.leader}")
    if s.leader_recovery_state not in (RECOVERED, RECOVERING):
        v(18, E, f"LeaderRecoveryState {s.leader_recovery_state}")
    if s.leader_recovery_state == RECOVERING and (
            len(s.isr) > 1 or (s.leader != NO_LEADER and s.isr != (s.leader,))):
        v(19, W, f"RECOVERING with ISR {list(s.isr)} and leader {s.leader}")
    if len(s.directories) != len(s.replicas) and not all(
            d == MIGRATING_DIR for d in s.directories):
        v(26, E, f"{len(s.directories)} directories for {len(s.replicas)} replicas")
    return out


def check_step(step: Step, replay: Replay | None = None) -> list[Violation]:
    """All single-step invariants for one partition step (see module docstring)."""
    out = check_state(step) if step.kind != "deleted" else []

    def v(n: int, level: str, msg: str) -> None:
        out.append(Violation(n, level, step.offset, _pname(step), msg))

    b, a, rec, ctx = step.before, step.after, step.record, step.context
    mv = ctx.metadata_version
    data = rec.data if rec is not None else None

    if step.kind in (CREATED, RESET) and rec is not None:
        _check_record_version(step, v)
        if step.kind == CREATED and not ctx.zk_migration:
            if not a.isr or a.leader != a.isr[0]:
                v(9, E, f"new partition: leader {a.leader} is not the first of ISR "
                        f"{list(a.isr)}")
            if not _is_subsequence(a.isr, a.replicas):
                v(9, E, f"new partition: ISR {list(a.isr)} not in replica order "
                        f"{list(a.replicas)}")
            if a.leader_epoch != 0 or a.partition_epoch != 0:
                v(9, E, f"new partition: epochs {a.leader_epoch}/{a.partition_epoch}, not 0/0")
            if a.leader_recovery_state != RECOVERED or a.eligible_leader_replicas \
                    or a.last_known_elr or a.adding_replicas or a.removing_replicas:
                v(9, E, "new partition is not RECOVERED with empty ELR/LKE/adding/removing")
            if replay is not None:
                active = tuple(r for r in a.replicas if replay.is_active(r))
                if a.isr != active:
                    v(9, E, f"new partition: ISR {list(a.isr)} but active replicas are "
                            f"{list(active)}")
        if b is not None and a.leader_epoch < b.leader_epoch:
            v(7, E, f"PartitionRecord moves leader epoch back {b.leader_epoch} -> "
                    f"{a.leader_epoch}")
    if step.kind == ELR_CLEARED and b is not None:
        if a.partition_epoch != b.partition_epoch + 1:
            v(6, E, f"ClearElr: partition epoch {b.partition_epoch} -> {a.partition_epoch}")
        if a.eligible_leader_replicas or a.last_known_elr:
            v(6, E, "ClearElr left ELR or LastKnownElr non-empty")
    if step.kind != CHANGED or b is None or data is None:
        return out

    _check_record_version(step, v)
    leader_field = data.get("leader", NO_LEADER_CHANGE)
    lrs_field = data.get("leader_recovery_state", LRS_NO_CHANGE)
    # 6, 7, 8: epochs
    if a.partition_epoch != b.partition_epoch + 1:
        v(6, E, f"partition epoch {b.partition_epoch} -> {a.partition_epoch}")
    want_le = b.leader_epoch + (leader_field != NO_LEADER_CHANGE)
    if a.leader_epoch != want_le:
        v(7, E, f"leader epoch {b.leader_epoch} -> {a.leader_epoch} with Leader field "
                f"{leader_field}")
    if a.partition_epoch - a.leader_epoch < b.partition_epoch - b.leader_epoch:
        v(8, E, "partitionEpoch - leaderEpoch decreased")
    # 14: ELR content needs an ELR-capable record
    if rec is not None and rec.version < 2 and (a.eligible_leader_replicas or a.last_known_elr):
        v(14, E, "ELR/LastKnownElr non-empty after a record version < 2")
    # 15: ISR at or above min ISR leaves no ELR (change built with ELR enabled)
    if rec is not None and rec.version >= 2 and ctx.elr_feature != 0:
        p0 = replay.partition(step.topic_id, 0) if replay is not None else None
        m = controller_min_isr(ctx.min_isr, len((p0 or a).replicas))
        if m is not None and len(a.isr) >= m and a.eligible_leader_replicas:
            v(15, W, f"ISR size {len(a.isr)} >= min ISR {m} but ELR "
                     f"{list(a.eligible_leader_replicas)}")
    # 18: the change field
    if lrs_field not in LRS_CHANGE_VALUES:
        v(18, E, f"LeaderRecoveryState field {lrs_field}")
    # 20: RECOVERED -> RECOVERING only together with an election of a single-member ISR
    if b.leader_recovery_state == RECOVERED and a.leader_recovery_state == RECOVERING and (
            leader_field < 0 or data.get("isr") is None or list(data["isr"]) != [leader_field]):
        v(20, E, f"RECOVERING set without Leader >= 0 and ISR = [Leader] in the record "
                 f"(Leader {leader_field}, ISR {data.get('isr')})")
    # 21: no RECOVERING before 3.2-IV0
    if lrs_field == RECOVERING and mv is not None and mv < MV_3_2_IV0:
        v(21, E, f"LeaderRecoveryState=1 at metadata.version level {mv}")
    # 23: completing a reassignment makes ISR and replicas the same set
    if b.reassigning and not a.reassigning and data.get("replicas") is not None and \
            a.replicas == tuple(r for r in b.replicas if r not in b.removing_replicas) \
            and b.removing_replicas and set(a.isr) != set(a.replicas):
        v(23, E, f"reassignment completed with ISR {list(a.isr)} != replicas "
                 f"{list(a.replicas)}")
    if a.reassigning and not (set(a.adding_replicas) | set(a.removing_replicas)) \
            <= set(a.replicas):
        v(23, E, "adding/removing replicas not within replicas")
    # 24: dropping a replica bumps the leader epoch
    if _lost(b.replicas, a.replicas) and leader_field == NO_LEADER_CHANGE:
        v(24, E, f"replicas {list(b.replicas)} -> {list(a.replicas)} without a leader "
                 f"epoch bump")
    # 25: ISR shrink and leader epoch, by metadata.version
    if mv is not None and not _lost(b.replicas, a.replicas):
        shrink = _lost(b.isr, a.isr)
        if mv >= MV_3_6_IV0 and not ctx.zk_migration and leader_field == b.leader \
                and leader_field != NO_LEADER_CHANGE:
            v(25, E, f"leader epoch bumped without a leader change at level {mv} "
                     f"(ISR {list(b.isr)} -> {list(a.isr)})")
        if MV_3_3_IV0 <= mv < MV_3_6_IV0 and shrink and leader_field == NO_LEADER_CHANGE:
            v(25, E, f"ISR shrink {list(b.isr)} -> {list(a.isr)} without leader epoch bump "
                     f"at level {mv}")
    # 31: leader moved to a broker that is fenced right now
    if replay is not None and leader_field >= 0 and leader_field != b.leader:
        br = replay.brokers.get(leader_field)
        if br is None or br.fenced:
            v(31, W, f"leader moved to {'unregistered' if br is None else 'fenced'} broker "
                     f"{leader_field}")
    return out


def _check_record_version(step: Step, v) -> None:
    """22: PartitionRecord / PartitionChangeRecord version fits the metadata.version."""
    rec, mv = step.record, step.context.metadata_version
    if rec is None or mv is None or step.context.zk_migration:
        return
    ver = rec.version
    if ver == 0 and mv >= MV_3_7_IV2:
        v(22, E, f"{rec.type} v0 at level {mv} (>= 3.7-IV2 writes v1+)")
    elif ver >= 1 and mv < MV_3_7_IV2:
        v(22, E, f"{rec.type} v{ver} at level {mv} (< 3.7-IV2 writes v0)")
    elif ver == 2 and mv < MV_FIRST_ELR:
        v(22, E, f"{rec.type} v2 at level {mv}, below every ELR-capable level")
    elif ver == 1 and mv >= MV_4_0_IV1:
        v(22, E, f"{rec.type} v1 at level {mv} (>= 4.0-IV1 writes v2)")


_PROBLEM_INVARIANT = {
    "unknown_topic": (5, E), "unknown_partition": (5, E), "topic": (5, E),
    "broker_epoch": (27, E), "broker": (27, E), "transaction": (28, E),
    "directories": (26, E), "merge": (26, E), "offset": (1, W), "invalid_record": (18, E),
}


def check_problems(problems: Iterable[Problem]) -> list[Violation]:
    out = []
    for p in problems:
        n, level = _PROBLEM_INVARIANT.get(p.kind, (0, E))
        part = f"{p.topic_id}:{p.partition_id}" if p.topic_id is not None else None
        out.append(Violation(n, level, p.offset, part, p.message))
    return out


# ---------------------------------------------------------------- files and directories


def check_segments(segments: list[LogFile]) -> list[Violation]:
    """1-4 over the segment files, in base-offset order."""
    out: list[Violation] = []
    expected: int | None = None
    epoch = -1
    for seg in segments:
        if expected is not None and seg.offset != expected:
            # Overlap or gap between files: not something one Kafka log produces (only the
            # head is deleted, and truncation rewrites the file itself). Seen when files of
            # different histories were copied together; reported, then checked per file.
            out.append(Violation(1, W, seg.offset, None,
                                 f"{seg.name} starts at {seg.offset}, previous segment ended "
                                 f"at {expected - 1}: files from different log histories"))
            epoch = -1
        expected = seg.offset
        for batch, recs in iter_file(seg, redact=False):
            if batch.base_offset != expected:
                out.append(Violation(1, E, batch.base_offset, None,
                                     f"batch at {batch.base_offset}, expected {expected}"))
            if batch.partition_leader_epoch < epoch:
                out.append(Violation(2, E, batch.base_offset, None,
                                     f"Raft epoch {batch.partition_leader_epoch} after {epoch}"))
            elif batch.partition_leader_epoch > epoch:
                if epoch >= 0 and not (batch.is_control and recs and
                                       recs[0].type == LEADER_CHANGE):
                    out.append(Violation(2, E, batch.base_offset, None,
                                         f"Raft epoch {batch.partition_leader_epoch} does not "
                                         f"start with a LeaderChangeMessage"))
                epoch = batch.partition_leader_epoch
            expected = batch.next_offset
            _check_batch_records(batch, recs, out)
    return out


def _check_batch_records(batch, recs, out: list[Violation]) -> None:
    for raw, rec in zip(batch.records, recs, strict=True):
        if rec.error:
            out.append(Violation(3, E, rec.offset, None, f"undecodable: {rec.error}"))
        if raw.timestamp_delta != 0 or raw.headers or (not batch.is_control and
                                                       raw.key is not None):
            out.append(Violation(4, E, rec.offset, None,
                                 "record framing: timestampDelta != 0, a key or headers"))


def check_snapshot_file(lf: LogFile) -> list[Violation]:
    """30: header control batch first, footer last, metadata.version first (and 1-4)."""
    out: list[Violation] = []
    batches = list(iter_file(lf, redact=False))
    where = lf.name
    if not batches:
        return [Violation(30, E, lf.offset, None, f"{where}: no readable batch")]
    first_b, first_r = batches[0]
    if not (first_b.is_control and first_r and first_r[0].type == "SnapshotHeaderRecord"):
        out.append(Violation(30, E, lf.offset, None, f"{where}: does not begin with a "
                                                     f"control batch holding SnapshotHeader"))
    last_b, last_r = batches[-1]
    if not (last_b.is_control and last_r and last_r[-1].type == "SnapshotFooterRecord"):
        out.append(Violation(30, E, lf.offset, None, f"{where}: does not end with "
                                                     f"SnapshotFooter"))
    data = [r for b, rs in batches if not b.is_control for r in rs]
    mv_first = data and data[0].type == "FeatureLevelRecord" and \
        data[0].data is not None and data[0].data.get("name") == MV_FEATURE
    has_mv = any(r.type == "FeatureLevelRecord" and r.data and
                 r.data.get("name") == MV_FEATURE for r in data)
    if has_mv and not mv_first:
        out.append(Violation(30, E, lf.offset, None,
                             f"{where}: first data record is not metadata.version"))
    expected = 0
    for b, recs in batches:
        if b.base_offset != expected:
            out.append(Violation(1, E, b.base_offset, None,
                                 f"{where}: batch at {b.base_offset}, expected {expected}"))
        if b.partition_leader_epoch != lf.epoch:
            out.append(Violation(30, E, b.base_offset, None, f"{where}: batch epoch "
                                 f"{b.partition_leader_epoch} != snapshot epoch {lf.epoch}"))
        expected = b.next_offset
        _check_batch_records(b, recs, out)
    return out


def compare_with_snapshot(live: Replay, lf: LogFile) -> list[Violation]:
    """29: the snapshot equals the log-derived state at endOffset - 1 (partitions, topics)."""
    snap = Replay()
    snap.load_snapshot(read_records(lf), lf.offset)
    out: list[Violation] = []
    off = lf.offset - 1
    elr_ok = snap.features.get(ELR_FEATURE, 1) != 0
    if snap.topics != live.topics:
        only_s = set(snap.topics) - set(live.topics)
        only_l = set(live.topics) - set(snap.topics)
        out.append(Violation(29, E, off, None, f"{lf.name}: topics differ (only in snapshot "
                             f"{sorted(only_s)[:5]}, only in log {sorted(only_l)[:5]})"))
    for tid, parts in live.partitions.items():
        for pid, st in parts.items():
            other = snap.partition(tid, pid)
            if other is None:
                if tid in snap.topics:
                    out.append(Violation(29, E, off, f"{tid}:{pid}",
                                         f"{lf.name}: partition missing from snapshot"))
                continue
            a, b = st.as_dict(directories=True), other.as_dict(directories=True)
            if not elr_ok:
                for k in ("eligible_leader_replicas", "last_known_elr"):
                    a.pop(k)
                    b.pop(k)
            diff = sorted(k for k in a if a[k] != b[k])
            if diff:
                out.append(Violation(29, E, off, f"{live.topics.get(tid, tid)}:{pid}",
                                     f"{lf.name}: snapshot differs from the log in {diff}"))
    return out


def check_log_dir(directory: Path) -> list[Violation]:
    """Every invariant over a metadata-log directory (see module docstring)."""
    directory = Path(directory)
    plan = plan_log_dir(directory)
    out = check_segments(plan.segments)
    for lf in plan.snapshots:
        out.extend(check_snapshot_file(lf))
    rp = Replay()
    start = -1
    if plan.start_snapshot is not None:
        for step in rp.load_snapshot(read_records(plan.start_snapshot),
                                     plan.start_snapshot.offset):
            out.extend(check_state(step))
        start = plan.start_snapshot.offset - 1
    # snapshots whose end lies inside the replayed log are compared with it
    log_end = _log_end(plan.segments)
    pending = sorted((s for s in plan.snapshots if start < s.offset - 1 < log_end),
                     key=lambda s: s.offset)
    seen_offsets = -1
    for seg in plan.segments:
        for _batch, recs in iter_file(seg):
            for rec in recs:
                if rec.offset <= max(start, seen_offsets):
                    continue  # overlap between files: reported once by check_segments
                while pending and pending[0].offset - 1 < rec.offset:
                    snap = pending.pop(0)
                    if seen_offsets == snap.offset - 1:
                        out.extend(compare_with_snapshot(rp, snap))
                seen_offsets = rec.offset
                for step in rp.apply(rec):
                    out.extend(check_step(step, rp))
    for snap in pending:
        if seen_offsets == snap.offset - 1:
            out.extend(compare_with_snapshot(rp, snap))
    out.extend(check_problems(rp.problems))
    return out


def _log_end(segments: list[LogFile]) -> int:
    """Last offset held by the segments (-1 if none)."""
    last = -1
    for seg in segments[-1:]:
        for batch, _recs in iter_file(seg, redact=False):
            last = max(last, batch.last_offset)
    return last


def errors(violations: Iterable[Violation]) -> list[Violation]:
    return [v for v in violations if v.level == E]
