"""A simulated KRaft cluster over time: controller model + log writer + clock + ground truth.

`Simulation` owns the simulated wall clock and an event queue. Between events the active
controller writes a NoOpRecord whenever nothing was written for
`metadata.max.idle.interval.ms` (500 ms), takes a snapshot every
`metadata.log.max.snapshot.interval.ms` (1 h) or every `snapshot_bytes` of log, and a Raft
failover starts a new epoch with a LeaderChangeMessage (aborting any open metadata
transaction, as `ActivationRecordsGenerator` does). Every partition step the controller
writes is labelled with what the controller decided for it (`labels.step_labels`);
`finish()` writes labels.jsonl, final_state.json and the companion files.
"""

from __future__ import annotations

import datetime as dt
import heapq
import json
import random
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kraftlake.codec.records import Record, encode_metadata_value
from kraftlake.codec.wire import uuid_to_str
from kraftlake.kraft.configs import MIN_ISR
from kraftlake.kraft.records import (
    CONFIG_RECORD,
    FEATURE_LEVEL_RECORD,
    PARTITION_RECORD,
    REGISTER_BROKER_RECORD,
    REGISTER_CONTROLLER_RECORD,
    TOPIC_RECORD,
)
from kraftlake.kraft.versions import MV_3_3_IV0, MV_3_3_IV1, MV_3_7_IV0, MV_FEATURE, MV_LATEST
from kraftlake.reference.replay import Step

from .controller import Controller, ControllerConfig, Rec
from .labels import label_line, step_labels
from .writer import LogWriter

IDLE_MS = 500  # metadata.max.idle.interval.ms
SNAPSHOT_INTERVAL_MS = 3_600_000  # metadata.log.max.snapshot.interval.ms
START_TIME = 1_735_689_600_000  # 2025-01-01T00:00:00Z


@dataclass(slots=True)
class SimConfig:
    out: Path
    seed: int = 0
    brokers: int = 6
    metadata_version: int = MV_LATEST
    elr: bool = False
    min_isr: int = 2  # cluster default min.insync.replicas (written as a ConfigRecord)
    segment_bytes: int = 8 * 1024 * 1024
    snapshot_interval_ms: int = SNAPSHOT_INTERVAL_MS
    snapshot_bytes: int = 20 * 1024 * 1024  # metadata.log.max.record.bytes.between.snapshots
    retention: bool = False
    controllers: tuple[int, ...] = (3000, 3001, 3002)
    start_time: int = START_TIME
    max_records_per_batch: int = 10_000
    txn_threshold: int = 10_000
    extra: dict[str, Any] = field(default_factory=dict)


def _label_json(x: dict[str, Any]) -> str:
    """One labels.jsonl line (json.dumps output, written by hand: there can be millions)."""
    events = ",".join(f'"{e}"' for e in x["events"])
    return (f'{{"offset":{x["offset"]},"timestamp":{x["timestamp"]},"topic_name":'
            f'{json.dumps(x["topic_name"])},"topic_id":"{x["topic_id"]}","partition_id":'
            f'{x["partition_id"]},"events":[{events}]}}\n')


class Simulation:
    """Drive a `Controller` over simulated time and write everything it decides."""

    def __init__(self, cfg: SimConfig) -> None:
        self.cfg = cfg
        self.rng = random.Random(cfg.seed)
        self.now = cfg.start_time
        self.writer = LogWriter(Path(cfg.out), segment_bytes=cfg.segment_bytes,
                                max_records_per_batch=cfg.max_records_per_batch)
        self.controller = Controller(
            ControllerConfig(cfg.metadata_version, elr_enabled=cfg.elr,
                             default_min_isr=cfg.min_isr,
                             max_records_per_batch=cfg.max_records_per_batch,
                             txn_threshold=cfg.txn_threshold),
            self, rng=random.Random(self.rng.getrandbits(64)), on_steps=self._on_steps)
        # labels are streamed to labels.jsonl in offset order (a transaction's records are
        # labelled when its End commits them, still before any later record)
        self._labels_file = (Path(cfg.out) / "labels.jsonl").open("w")
        self.label_count = 0
        self.last_label_offset = -1
        self.steps = 0
        self.events: list[tuple[int, int, Callable[[], Any]]] = []
        self._seq = 0
        self.last_write = self.now
        self.last_snapshot_time = self.now
        self.last_snapshot_bytes = 0
        self.snapshots: list[int] = []
        self.active_controller = cfg.controllers[0]
        self.cluster_id = uuid_to_str(self.rng.getrandbits(128).to_bytes(16, "big"))
        self.controller_regs: dict[int, dict[str, Any]] = {}
        self.registrations: dict[int, tuple[int, dict[str, Any]]] = {}
        self.noops = 0
        # encoded PartitionRecord of each partition's last snapshotted state: most partitions
        # do not change between two snapshots, so their bytes are reused
        self._snap_cache: dict[tuple[str, int], tuple[Any, bytes]] = {}

    # ------------------------------------------------------------ RecordSink for the controller

    def next_offset(self) -> int:
        return self.writer.next

    def append(self, records: list[Rec], *, atomic: bool = True) -> list[Record]:
        """`RecordSink.append`: the controller's records written at the simulated now, as one batch
        when `atomic` (ValueError if they do not fit) or as many as the limits need, returned as
        `Record`s with their offsets. Each broker's and controller's last registration is kept for
        the snapshots, and the clock moves on to the last batch's timestamp."""
        for t, v, d in records:
            if t == REGISTER_BROKER_RECORD:
                self.registrations[d["broker_id"]] = (v, d)
            elif t == REGISTER_CONTROLLER_RECORD:
                self.controller_regs[d["controller_id"]] = d
        out = self.writer.append(records, self.now, atomic=atomic)
        self.last_write = self.now
        self.now = max(self.now, self.writer.last_ts)
        return out

    def _on_steps(self, steps: list[Step]) -> None:
        self.steps += len(steps)
        write = self._labels_file.write
        decided = self.controller.decided
        for st in steps:
            ev = step_labels(st, decided(st))
            if ev:
                if st.offset < self.last_label_offset:
                    raise AssertionError("labels out of offset order")
                self.last_label_offset = st.offset
                write(_label_json(label_line(st, ev)))
                self.label_count += 1

    # ------------------------------------------------------------ time

    def at(self, t: int, fn: Callable[[], Any]) -> None:
        """Schedule `fn` at simulated time `t` (ms)."""
        self._seq += 1
        heapq.heappush(self.events, (t, self._seq, fn))

    def after(self, delay_ms: int, fn: Callable[[], Any]) -> None:
        self.at(self.now + delay_ms, fn)

    def advance(self, t: int) -> None:
        """Move the clock to `t`, writing the NoOps and snapshots of the idle time."""
        noop = self.cfg.metadata_version >= MV_3_3_IV1
        while self.last_write + IDLE_MS <= t:
            self.now = self.last_write + IDLE_MS
            if noop:
                self.writer.append_noop(self.now)
                self.noops += 1
            self.last_write = self.now
            self.maybe_snapshot()
        self.now = max(self.now, t)

    def run_until(self, t_end: int) -> None:
        while self.events and self.events[0][0] <= t_end:
            t, _seq, fn = heapq.heappop(self.events)
            self.advance(t)
            fn()
            self.maybe_snapshot()
        self.advance(t_end)

    # ------------------------------------------------------------ raft and snapshots

    def start(self) -> None:
        """Format + first election: epoch 1, bootstrap records, controller registrations."""
        self.writer.new_epoch(self.active_controller, list(self.cfg.controllers), self.now)
        self.controller.bootstrap()
        if self.cfg.min_isr != 1 and not self.cfg.elr and \
                self.cfg.metadata_version >= MV_3_3_IV0:
            self.controller.set_config(MIN_ISR, str(self.cfg.min_isr))
        if self.cfg.metadata_version >= MV_3_7_IV0:
            for c in self.cfg.controllers:
                self.controller.register_controller(c, f"controller-{c}")
        self.last_write = self.now

    def failover(self) -> None:
        """The active controller changes: new Raft epoch; an open transaction is aborted."""
        others = [c for c in self.cfg.controllers if c != self.active_controller]
        self.active_controller = self.rng.choice(others)
        self.writer.new_epoch(self.active_controller, list(self.cfg.controllers), self.now)
        self.now = max(self.now, self.writer.last_ts)
        self.last_write = self.now
        self.controller.abort_transaction()

    def maybe_snapshot(self) -> None:
        if self.controller.image.in_transaction:
            return
        due_time = self.now - self.last_snapshot_time >= self.cfg.snapshot_interval_ms
        due_bytes = self.writer.bytes_written - self.last_snapshot_bytes >= \
            self.cfg.snapshot_bytes
        if due_time or due_bytes:
            self.snapshot()

    def snapshot(self) -> None:
        """Write a snapshot of the image at the log's end (`snapshot_records`), unless the log is
        empty or the last snapshot ends there already, and count time and bytes to the next one from
        here (`maybe_snapshot`, which also holds it back during a metadata transaction)."""
        end = self.writer.next
        if end == 0 or (self.snapshots and self.snapshots[-1] == end):
            return
        self.writer.write_snapshot(self.snapshot_records(), end_offset=end,
                                   epoch=self.writer.epoch,
                                   last_contained_ts=self.writer.last_ts,
                                   ts=self.writer.last_ts + 1)
        self.snapshots.append(end)
        self.last_snapshot_time = self.now
        self.last_snapshot_bytes = self.writer.bytes_written

    def snapshot_records(self) -> list[Rec | bytes]:
        """`MetadataImage.write`: features, brokers, controllers, topics, configs."""
        c = self.controller
        img = c.image
        recs: list[Rec | bytes] = []
        cache = self._snap_cache
        if MV_FEATURE in img.features:
            recs.append((FEATURE_LEVEL_RECORD, 0, {"name": MV_FEATURE,
                                                   "feature_level": img.features[MV_FEATURE]}))
        for name in sorted(img.features):
            if name != MV_FEATURE:
                recs.append((FEATURE_LEVEL_RECORD, 0, {"name": name,
                                                       "feature_level": img.features[name]}))
        for b in sorted(img.brokers):
            ver, data = self.registrations[b]
            d = dict(data)
            st = img.brokers[b]
            d["fenced"] = st.fenced
            if ver >= 1:
                d["in_controlled_shutdown"] = st.in_controlled_shutdown
            if ver >= 4:  # `BrokerRegistration.toRecord`: null until the broker reported them
                d["cordoned_log_dirs"] = c.cordoned_dirs.get(b)
            recs.append((REGISTER_BROKER_RECORD, ver, d))
        for cid in sorted(self.controller_regs):
            recs.append((REGISTER_CONTROLLER_RECORD, 0, self.controller_regs[cid]))
        for tid in c._sorted_topics():
            recs.append((TOPIC_RECORD, 0, {"name": img.topics[tid], "topic_id": tid}))
            for pid, part in sorted(img.partitions[tid].items()):
                hit = cache.get((tid, pid))
                if hit is None or hit[0] is not part:
                    raw = encode_metadata_value(PARTITION_RECORD, c.pr_version,
                                                c.partition_record(tid, pid, part))
                    hit = cache[(tid, pid)] = (part, raw)
                recs.append(hit[1])
        for (rtype, rname) in sorted(img.configs):
            for k, v in sorted(img.configs[(rtype, rname)].items()):
                recs.append((CONFIG_RECORD, 0, {"resource_type": rtype, "resource_name": rname,
                                                 "name": k, "value": v}))
        return recs

    # ------------------------------------------------------------ finishing

    def finish(self) -> dict[str, Any]:
        """Close the log, apply retention, write ground truth and companion files."""
        self.writer.close()
        deleted = self.writer.apply_retention() if self.cfg.retention else 0
        out = Path(self.cfg.out)
        self._labels_file.close()
        final = self.controller.image.final_state()
        (out / "final_state.json").write_text(json.dumps(final, indent=1, sort_keys=True) + "\n")
        boot = [r for r in self.controller.bootstrap_records()
                if r[0] == FEATURE_LEVEL_RECORD] if self.cfg.metadata_version >= MV_3_3_IV0 \
            else []
        stamp = dt.datetime.fromtimestamp(self.cfg.start_time / 1000, dt.UTC)
        self.writer.write_companions(
            cluster_id=self.cluster_id, node_id=self.cfg.controllers[0],
            directory_id=uuid_to_str(self.rng.getrandbits(128).to_bytes(16, "big")),
            bootstrap=boot, leader_id=self.active_controller,
            voters=list(self.cfg.controllers), ts=self.cfg.start_time,
            formatted=stamp.strftime("%a %b %d %H:%M:%S UTC %Y"))
        summary = {
            "cluster_id": self.cluster_id, "seed": self.cfg.seed,
            "metadata_version": self.cfg.metadata_version, "elr": self.cfg.elr,
            "records": self.writer.records, "batches": self.writer.batches,
            "bytes": self.writer.bytes_written, "noops": self.noops,
            "partition_steps": self.steps, "labels": self.label_count,
            "snapshots": len(self.snapshots), "segments_deleted": deleted,
            "end_offset": self.writer.next, "raft_epoch": self.writer.epoch,
            "partitions": len(final), "controller": self.controller.stats,
            **self.cfg.extra,
        }
        (out / "simulation.json").write_text(json.dumps(summary, indent=1, sort_keys=True) + "\n")
        return summary
