"""The expected partition_intervals and incidents of a metadata-log directory, computed
without Spark: the reference replay (`reference/replay.py`) walks the log record by record,
the interval kinds are judged on its states (`tests/replay_intervals.py`), broker outages on
its broker registry, events are the rules of `kraft.events` on the replay's steps
(`tests/replay_events.py`), and the grouping rule of the README is applied by a plain sweep
over sorted troubles.

Nothing here is imported from `kraftlake.incidents`: the definitions are restated from the
README (that is the point of an independent answer).
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path

from kraftlake.reference.replay import (
    SNAPSHOT,
    Replay,
    iter_log_records,
    plan_log_dir,
    read_records,
)
from tests.replay_events import events_of
from tests.replay_intervals import IntervalSweep

SAME_WRITE_MS = 1000
# replica.lag.time.max.ms and broker.session.timeout.ms: Kafka 4.1's defaults
# (ReplicationConfigs, KRaftConfigs) and the ConfigRecords that may set them
TIMING_DEFAULTS = {"replica.lag.time.max.ms": 30000, "broker.session.timeout.ms": 9000}
# the worst first: the README's order among troubles that start at one offset
TROUBLES = ("offline", "under_min_isr", "recovering", "reassigning", "under_replicated")


@dataclass
class Expected:
    # (topic_id, partition_id, kind, start_offset) -> end_offset (None = open)
    intervals: dict[tuple, int | None] = field(default_factory=dict)
    # broker outages: [broker, cause, start, start_ts, end, attribution window ms]
    outages: list[list] = field(default_factory=list)
    # offset -> timestamp of every partition step (an interval's start time)
    ts: dict[int, int | None] = field(default_factory=dict)
    # (offset, ts, topic_id, topic_name, partition_id, event types, dropped brokers)
    events: list[tuple] = field(default_factory=list)
    incidents: list[dict] = field(default_factory=list)


def _in_service(b) -> bool:
    return b is not None and not b.fenced and not b.in_controlled_shutdown


def _window_ms(rp: Replay) -> int:
    """The README's bound: the largest replica.lag.time.max.ms plus the largest
    broker.session.timeout.ms in force at any BROKER level, Kafka's default standing for
    brokers without their own when no cluster default is set."""
    total = 0
    for key, default in TIMING_DEFAULTS.items():
        levels = {name: v for (rtype, name), cfg in rp.configs.items() if rtype == 4
                  for k, v in cfg.items() if k == key and v is not None}
        nums = [int(v) for v in levels.values() if v.lstrip("+").isdigit()]
        if "" not in levels or not levels[""].lstrip("+").isdigit():
            nums.append(default)
        total += max(nums)
    return total


def expected(log_dir: Path) -> Expected:
    """Replay `log_dir` (a `__cluster_metadata-0` directory) into the expected tables."""
    rp, ex, sweep = Replay(), Expected(), IntervalSweep()
    served: set[int] = set()
    out: dict[int, list] = {}  # broker -> its open outage

    def step_(st) -> None:
        ex.ts.setdefault(st.offset, st.timestamp)
        sweep.step(st)
        if st.kind != SNAPSHOT and st.record is not None:
            evs = events_of(st)
            if evs:
                b, a = st.before, st.after
                dropped = set(b.isr) - set(a.isr) if b else set()
                if b and b.leader >= 0 and b.leader != a.leader:
                    dropped.add(b.leader)
                ex.events.append((st.offset, st.timestamp, st.topic_id, st.topic_name,
                                  st.partition_id, evs, dropped))

    def brokers_after(rec, before: dict) -> None:
        for bid in set(before) | set(rp.brokers):
            was, now = before.get(bid), rp.brokers.get(bid)
            restarted = (rec.type == "RegisterBrokerRecord" and was is not None
                         and now is not None and now.epoch != was.epoch)
            if _in_service(now):
                served.add(bid)
                if bid in out:
                    out.pop(bid)[4] = rec.offset
            elif bid in served and bid not in out and (_in_service(was) or restarted):
                cause = ("broker_unregistered" if now is None else
                         "broker_restarted" if restarted else
                         "broker_controlled_shutdown" if now.in_controlled_shutdown else
                         "broker_fenced")
                out[bid] = [bid, cause, rec.offset, rec.timestamp, None, _window_ms(rp)]
                ex.outages.append(out[bid])

    plan = plan_log_dir(log_dir)
    after = -1
    if plan.start_snapshot is not None:
        for st in rp.load_snapshot(read_records(plan.start_snapshot),
                                   plan.start_snapshot.offset):
            step_(st)
        served.update(b for b, s in rp.brokers.items() if _in_service(s))
        after = plan.start_snapshot.offset - 1
    for rec in iter_log_records(plan, after):
        before = {k: _copy(v) for k, v in rp.brokers.items()}
        for st in rp.apply(rec):
            step_(st)
        brokers_after(rec, before)
    ex.intervals = sweep.close()
    _pull_back(ex)
    ex.incidents = _group(ex)
    return ex


def _copy(b):
    from copy import copy
    return copy(b)


def _pull_back(ex: Expected) -> None:
    """Start each outage at the first event dropping its broker within SAME_WRITE_MS before."""
    for o in ex.outages:
        bid, _, start, ts, _, _ = o
        hits = [(e[0], e[1]) for e in ex.events
                if e[0] < start and e[1] >= ts - SAME_WRITE_MS and bid in e[6]]
        if hits:
            o[2], o[3] = min(hits)


def _group(ex: Expected) -> list[dict]:
    inf = float("inf")
    # (start, prio, end, broker, cause, start ts, window ms)
    troubles = [(s, 1 + TROUBLES.index(kind), e if e is not None else inf, None, kind,
                 ex.ts.get(s), None)
                for (_, _, kind, s), e in ex.intervals.items() if kind in TROUBLES]
    troubles += [(o[2], 0, o[4] if o[4] is not None else inf, o[0], o[1], o[3], o[5])
                 for o in ex.outages]
    troubles.sort(key=lambda t: (t[0], t[1]))
    groups: list[list] = []
    reach = None
    for t in troubles:
        if reach is None or t[0] > reach:
            groups.append([])
            reach = t[2]
        else:
            reach = max(reach, t[2])
        groups[-1].append(t)
    out = []
    for g in groups:
        start, end = g[0][0], max(t[2] for t in g)
        brk = [t for t in g if t[3] is not None]
        t0 = g[0][5]
        soon = [t for t in brk if t0 is None or t[5] is None or t[5] - t[6] <= t0]
        cause = soon[0] if soon else g[0]
        evs = [e for e in ex.events if start <= e[0] <= end]
        per_type: dict[str, set] = defaultdict(set)
        for e in evs:
            for t in e[5]:
                per_type[t].add((e[2], e[4]))
        out.append({
            "start_offset": start, "end_offset": None if end == inf else end,
            "cause": cause[4], "cause_broker": cause[3],
            "brokers": sorted({t[3] for t in brk}),
            "partitions_affected": len({(e[2], e[4]) for e in evs}),
            "event_types": sorted(per_type),
            "event_partitions": [len(per_type[t]) for t in sorted(per_type)],
            "unclean_elections": sum("unclean_election" in e[5] for e in evs),
            "data_loss_partitions": sorted({f"{e[3]}:{e[4]}" for e in evs
                                            if "unclean_election" in e[5]}),
        })
    return out
