"""Scenarios: timelines of cluster incidents driven through the controller model.

Each scenario schedules events on a `Simulation`: brokers booting, topics being created,
clean restarts (controlled shutdown), crashes (session timeout, unclean re-registration),
slow followers (AlterPartition ISR shrinks), unclean incidents, ELR incidents,
reassignments, topic churn, config changes, controller failovers and aborted metadata
transactions. Background processes run throughout, as in a real cluster: followers catch
up (the leader's AlterPartition expands the ISR, which also completes reassignments and
recoveries), the controller balances leaders every 5 minutes (PREFERRED elections) and
sweeps leaderless partitions of unclean-enabled topics every 5 minutes.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from typing import Any

from kraftlake.kraft.builder import Election
from kraftlake.kraft.configs import MIN_ISR, UNCLEAN
from kraftlake.reference.replay import Step

from .cluster import SimConfig, Simulation
from .controller import TP

SEC = 1000
MIN = 60 * SEC
HOUR = 60 * MIN
SESSION_TIMEOUT = 9 * SEC  # broker.session.timeout.ms
BALANCE_INTERVAL = 5 * MIN  # leader.imbalance.check.interval.seconds
UNCLEAN_INTERVAL = 5 * MIN  # unclean.leader.election.interval.ms
CATCHUP_TICK = 5 * SEC


@dataclass(slots=True)
class Params:
    brokers: int = 6
    topics: int = 20
    partitions: int = 12
    replication_factor: int = 3
    hours: float = 24.0


class Ops:
    """Cluster behaviours on top of a Simulation (background processes + incidents)."""

    def __init__(self, sim: Simulation, params: Params) -> None:
        self.sim = sim
        self.c = sim.controller
        self.rng = sim.rng
        self.p = params
        self.end = sim.cfg.start_time + int(params.hours * HOUR)
        self.out_of_sync: dict[TP, dict[int, int]] = {}  # tp -> replica -> ready time
        self.lagging: dict[int, int] = {}  # broker -> lagging until
        self.down: set[int] = set()
        self._next_ready = 0  # no catch-up work before this time
        inner = sim._on_steps

        def hook(steps: list[Step]) -> None:
            inner(steps)
            self._track(steps)

        sim.controller.on_steps = hook

    # ------------------------------------------------------------ background processes

    def _track(self, steps: list[Step]) -> None:
        """Remember replicas out of the ISR so the catch-up process can bring them back."""
        now = self.sim.now
        if steps:
            self._next_ready = min(self._next_ready, now + CATCHUP_TICK)
        for st in steps:
            tp = (st.topic_id, st.partition_id)
            if st.deleted:
                self.out_of_sync.pop(tp, None)
                continue
            a = st.after
            missing = [r for r in a.replicas if r not in a.isr]
            if not missing:
                self.out_of_sync.pop(tp, None)
                continue
            cur = self.out_of_sync.setdefault(tp, {})
            for r in list(cur):
                if r not in missing:
                    del cur[r]
            for r in missing:
                if r not in cur:
                    cur[r] = ready = now + self.rng.randint(3 * SEC, 40 * SEC)
                    self._next_ready = min(self._next_ready, ready)

    def catch_up(self) -> None:
        """Leaders add caught-up followers back to the ISR (one request per leader)."""
        now = self.sim.now
        if now < self._next_ready:
            return
        nxt = self.end + HOUR
        by_leader: dict[int, list[tuple[TP, list[int]]]] = {}
        active = self.c.is_active
        for tp in self.c._sorted(list(self.out_of_sync)):
            pend = self.out_of_sync[tp]
            part = self.c.partition(tp)
            ready = []
            for r in part.replicas:
                due = pend.get(r)
                if due is None:
                    continue
                due = max(due, self.lagging.get(r, 0))
                if due > now:
                    nxt = min(nxt, due)
                elif active(r) and part.leader >= 0 and active(part.leader):
                    ready.append(r)
                # else: waits for a broker to come back or a leader to be elected; both
                # write records, which re-arm the catch-up (see _track / _unfence)
            if ready:
                by_leader.setdefault(part.leader, []).append((tp, list(part.isr) + ready))
                nxt = min(nxt, now + CATCHUP_TICK)  # re-check what this request changed
        self._next_ready = nxt
        for leader in sorted(by_leader):
            self.c.alter_partitions(by_leader[leader])

    def every(self, interval: int, fn: Callable[[], Any], start: int | None = None) -> None:
        t = (start if start is not None else self.sim.now) + interval
        while t <= self.end:
            self.sim.at(t, fn)
            t += interval

    def background(self) -> None:
        self.every(CATCHUP_TICK, self.catch_up)
        self.every(BALANCE_INTERVAL, self.c.balance_leaders)
        self.every(UNCLEAN_INTERVAL, self.c.unclean_sweep)

    # ------------------------------------------------------------ setup

    def boot(self) -> None:
        self.sim.start()
        for b in range(1, self.p.brokers + 1):
            self.sim.now += self.rng.randint(20, 300)
            self.c.register_broker(b)
        for b in range(1, self.p.brokers + 1):
            self.sim.now += self.rng.randint(50, 500)
            self.c.unfence(b)

    def create_topics(self, n: int, prefix: str = "topic") -> list[str]:
        """`n` topics `prefix-0000`, ... created at setup, 0.1 to 2 s apart, with the params'
        partitions and replication factor and a random mix of configs (about 15% unclean election
        enabled, 20% min.insync.replicas 2, 30% compacted); returns the names created."""
        names = []
        for i in range(n):
            self.sim.now += self.rng.randint(100, 2000)
            cfg: dict[str, str] = {}
            roll = self.rng.random()
            if roll < 0.15:
                cfg[UNCLEAN] = "true"
            elif roll < 0.35:
                cfg[MIN_ISR] = str(min(2, self.p.replication_factor))
            if self.rng.random() < 0.3:
                cfg["cleanup.policy"] = "compact"
            name = f"{prefix}-{i:04d}"
            if self.c.create_topic(name, self.p.partitions, self.p.replication_factor, cfg):
                names.append(name)
        return names

    # ------------------------------------------------------------ incidents

    def restart(self, b: int, t: int, downtime: int, *, clean: bool = True) -> int:
        """Clean: controlled shutdown, SHUTDOWN_NOW, come back. Unclean: crash, session
        timeout fences it, a new incarnation registers uncleanly. Returns the end time."""
        if clean:
            self.sim.at(t, lambda: self._if_up(b, self.c.controlled_shutdown))
            self.sim.at(t + 2 * SEC, lambda: self._if_up(b, self._down))
        else:
            self.sim.at(t + SESSION_TIMEOUT, lambda: self._if_up(b, self._down))
        back = t + max(downtime, SESSION_TIMEOUT + SEC)
        self.sim.at(back, lambda: self._up(b, clean))
        self.sim.at(back + self.rng.randint(500, 3000), lambda: self._unfence(b))
        return back + 5 * SEC

    def _if_up(self, b: int, fn: Callable[[int], Any]) -> None:
        if b not in self.down and b in self.c.image.brokers:
            fn(b)

    def _down(self, b: int) -> None:
        if not self.c.image.brokers[b].fenced:
            self.c.fence(b)
        self.down.add(b)

    def _up(self, b: int, clean: bool) -> None:
        if b in self.down:
            self.c.register_broker(b, clean=clean)

    def _unfence(self, b: int) -> None:
        if b in self.down:
            self.down.discard(b)
            self.c.unfence(b)
            self._next_ready = min(self._next_ready, self.sim.now + CATCHUP_TICK)

    def rolling_restart(self, t: int, brokers: list[int] | None = None) -> int:
        for b in brokers or sorted(self.c.image.brokers):
            t = self.restart(b, t, self.rng.randint(20 * SEC, 90 * SEC)) + 60 * SEC
        return t

    def slow_broker(self, b: int, t: int, duration: int, *, only: list[TP] | None = None
                    ) -> None:
        """Follower `b` falls behind: its leaders shrink it out of their ISRs."""
        def shrink() -> None:
            """Unless `b` is down: it lags for `duration`, and each of its leaders shrinks it out of
            their ISRs (one AlterPartition per leader; only `only`'s partitions when given)."""
            if b in self.down:
                return
            self.lagging[b] = self.sim.now + duration
            self._next_ready = min(self._next_ready, self.sim.now + duration)
            by_leader: dict[int, list[tuple[TP, list[int]]]] = {}
            tps = only if only is not None else self.c._sorted(self.c.isr_index.get(b, ()))
            for tp in tps:
                if tp[0] not in self.c.image.partitions:
                    continue
                part = self.c.partition(tp)
                if b in part.isr and part.leader >= 0 and part.leader != b:
                    by_leader.setdefault(part.leader, []).append(
                        (tp, [r for r in part.isr if r != b]))
            for leader in sorted(by_leader):
                self.c.alter_partitions(by_leader[leader])
        self.sim.at(t, shrink)

    def reassign(self, t: int, tps: list[TP], *, cancel: bool = False) -> None:
        """At `t`, reassign each of `tps` (still existing and not moving already) to a random list
        of as many brokers. With `cancel` the new replicas never catch up and the reassignments are
        cancelled 30 s to 5 min later."""
        def start() -> None:
            """Start each reassignment (partitions deleted or already moving are left); with
            `cancel`, its new replicas are kept out of sync past the scenario's end."""
            brokers = sorted(self.c.image.brokers)
            for tp in tps:
                if tp[0] not in self.c.image.partitions:
                    continue
                part = self.c.partition(tp)
                if part.reassigning:
                    continue
                rf = len(part.replicas)
                target = self.rng.sample(brokers, rf)
                if set(target) == set(part.replicas):
                    target = target[1:] + target[:1]
                self.c.reassign(tp, target)
                if cancel:  # the new replicas never catch up before the cancel
                    pend = self.out_of_sync.get(tp, {})
                    for r in self.c.partition(tp).adding_replicas:
                        pend[r] = self.end + HOUR
        self.sim.at(t, start)
        if cancel:
            def stop() -> None:
                for tp in tps:
                    if tp[0] in self.c.image.partitions:
                        self.c.cancel_reassignment(tp)
            self.sim.at(t + self.rng.randint(30 * SEC, 5 * MIN), stop)

    def elect(self, t: int, tps: list[TP], election: Election) -> None:
        def run() -> None:
            for tp in tps:
                if tp[0] in self.c.image.partitions:
                    self.c.elect(tp, election)
        self.sim.at(t, run)

    def set_config(self, t: int, key: str, value: str | None, topic: str | None = None) -> None:
        self.sim.at(t, lambda: self.c.set_config(key, value, topic))

    def topic_churn(self, t: int, n: int) -> None:
        """`n` topics `churn-000`, ... created 7 minutes apart from `t`, each deleted 2 to 40
        minutes later; every other one is created again under its name 50 minutes after its first
        creation (a new topic id)."""
        for i in range(n):
            name = f"churn-{i:03d}"
            ti = t + i * 7 * MIN
            create = partial(self.c.create_topic, name, self.p.partitions,
                             self.p.replication_factor)
            self.sim.at(ti, create)
            self.sim.at(ti + self.rng.randint(2 * MIN, 40 * MIN),
                        partial(self.c.delete_topic, name))
            if i % 2 == 0:  # recreated under the same name: a new topic id
                self.sim.at(ti + 50 * MIN, create)

    def failover(self, t: int) -> None:
        self.sim.at(t, self.sim.failover)

    def aborted_transaction(self, t: int, partitions: int) -> None:
        """A topic creation too large for one batch is cut short by a controller failover:
        the open transaction is aborted, then the client retries and it commits."""
        name = f"bulk-{t // 1000 % 100000}"
        self.sim.at(t, lambda: self.c.create_topic(name, partitions, self.p.replication_factor,
                                                   commit=False))
        self.sim.at(t + 300, self.sim.failover)
        self.sim.at(t + 30 * SEC, lambda: self.c.create_topic(
            name, partitions, self.p.replication_factor))

    # ------------------------------------------------------------ picking victims

    def topic_tps(self, name: str) -> list[TP]:
        tid = self.c.image.topic_ids.get(name)
        if tid is None:
            return []
        return [(tid, p) for p in sorted(self.c.image.partitions[tid])]


# ---------------------------------------------------------------- incidents as scripts


def _unclean_incident(ops: Ops, t: int, topic: str, *, admin: bool) -> int:
    """A partition whose ISR shrank to its leader loses the leader.

    With the topic's `unclean.leader.election.enable=true` the fence itself elects a
    follower uncleanly; otherwise (`admin`) the partition stays offline until an operator
    runs ElectLeaders UNCLEAN. The new leader's first ISR expansion completes recovery.
    """
    c = ops.c
    tps = ops.topic_tps(topic)
    if not tps:
        return t
    tp = tps[ops.rng.randrange(len(tps))]
    part = c.partition(tp)
    if part.leader < 0:
        return t
    leader = part.leader
    followers = [r for r in part.replicas if r != leader]
    for f in followers:  # every follower falls behind on this partition
        ops.slow_broker(f, t, 4 * MIN, only=[tp])
    ops.restart(leader, t + 20 * SEC, 3 * MIN, clean=False)
    if admin:
        ops.elect(t + 90 * SEC, [tp], Election.UNCLEAN)
    return t + 10 * MIN


def _elr_incident(ops: Ops, t: int, topic: str, *, last_leader_comes_back_unclean: bool) -> int:
    """Replicas of a min-ISR-2 partition fail one after the other (ELR grows, the ISR empties,
    LastKnownElr keeps the last leader), one ELR member comes back after an unclean
    shutdown (stripped from ELR), then the last leader comes back: clean -> ELR election;
    unclean -> stripped from ELR too, and elected as last known leader (RECOVERING)."""
    tps = ops.topic_tps(topic)
    if not tps:
        return t
    tp = tps[ops.rng.randrange(len(tps))]
    part = ops.c.partition(tp)
    if part.leader < 0 or len(part.replicas) < 3:
        return t
    leader = part.leader
    f1, f2 = [r for r in part.replicas if r != leader][:2]
    ops.restart(f1, t, 6 * MIN, clean=False)
    ops.restart(f2, t + 30 * SEC, 2 * MIN, clean=False)
    ops.restart(leader, t + 60 * SEC, 4 * MIN, clean=not last_leader_comes_back_unclean)
    return t + 12 * MIN


def _spread(ops: Ops, start: int, end: int, n: int) -> list[int]:
    if n <= 0:
        return []
    span = max(1, (end - start) // n)
    return [start + i * span + ops.rng.randint(0, max(1, span // 2)) for i in range(n)]


# ---------------------------------------------------------------- scenarios


def _base(cfg: SimConfig, params: Params) -> tuple[Simulation, Ops, list[str]]:
    sim = Simulation(cfg)
    ops = Ops(sim, params)
    ops.boot()
    names = ops.create_topics(params.topics)
    ops.background()
    return sim, ops, names


def _pick(ops: Ops, names: list[str], config: str | None = None) -> str:
    pool = names
    if config is not None:
        pool = [n for n in names
                if ops.c.image.topic_config(n, config) not in (None, "1", "false")] or names
    return pool[ops.rng.randrange(len(pool))]


def _run_quiet(sim: Simulation, ops: Ops, names: list[str]) -> None:
    sim.run_until(ops.end)


def _run_rolling_restart(sim: Simulation, ops: Ops, names: list[str]) -> None:
    ops.rolling_restart(sim.now + 10 * MIN)
    sim.run_until(ops.end)


def _run_broker_crash(sim: Simulation, ops: Ops, names: list[str]) -> None:
    for t in _spread(ops, sim.now + 5 * MIN, ops.end - 20 * MIN, 3):
        b = ops.rng.randint(1, ops.p.brokers)
        ops.restart(b, t, ops.rng.randint(30 * SEC, 10 * MIN), clean=False)
    sim.run_until(ops.end)


def _run_unclean(sim: Simulation, ops: Ops, names: list[str]) -> None:
    times = _spread(ops, sim.now + 5 * MIN, ops.end - 20 * MIN, 4)
    for k, t in enumerate(times):
        if k % 2 == 0:
            _unclean_incident(ops, t, _pick(ops, names, UNCLEAN), admin=False)
        else:
            topic = [n for n in names if ops.c.image.topic_config(n, UNCLEAN) != "true"]
            _unclean_incident(ops, t, _pick(ops, topic or names), admin=True)
    sim.run_until(ops.end)


def _run_elr(sim: Simulation, ops: Ops, names: list[str]) -> None:
    times = _spread(ops, sim.now + 5 * MIN, ops.end - 30 * MIN, 4)
    for k, t in enumerate(times):
        _elr_incident(ops, t, _pick(ops, names), last_leader_comes_back_unclean=k % 2 == 1)
    for t in _spread(ops, sim.now + 10 * MIN, ops.end - 10 * MIN, 2):
        b = ops.rng.randint(1, ops.p.brokers)
        ops.slow_broker(b, t, ops.rng.randint(1 * MIN, 10 * MIN))
    topic = _pick(ops, names)
    ops.set_config(ops.end - 15 * MIN, MIN_ISR, "1", topic)
    ops.set_config(ops.end - 5 * MIN, MIN_ISR, str(sim.cfg.min_isr))
    sim.run_until(ops.end)


def _run_reassignment(sim: Simulation, ops: Ops, names: list[str]) -> None:
    for k, t in enumerate(_spread(ops, sim.now + 5 * MIN, ops.end - 20 * MIN, 5)):
        tps = ops.topic_tps(_pick(ops, names))
        chosen = ops.rng.sample(tps, min(len(tps), ops.rng.randint(1, 4)))
        ops.reassign(t, chosen, cancel=k % 3 == 2)
    sim.run_until(ops.end)


def _run_topic_churn(sim: Simulation, ops: Ops, names: list[str]) -> None:
    ops.topic_churn(sim.now + 5 * MIN, 6)
    for t in _spread(ops, sim.now + 20 * MIN, ops.end - 10 * MIN, 2):
        ops.sim.at(t, lambda: ops.c.delete_topic(_pick(ops, names)))
    sim.run_until(ops.end)


def _run_mixed(sim: Simulation, ops: Ops, names: list[str]) -> None:
    end = ops.end
    span = end - sim.now
    t0 = sim.now
    ops.rolling_restart(t0 + span // 10)
    for t in _spread(ops, t0 + span // 3, end - 30 * MIN, 3):
        ops.restart(ops.rng.randint(1, ops.p.brokers), t, ops.rng.randint(30 * SEC, 8 * MIN),
                    clean=False)
    for t in _spread(ops, t0 + 5 * MIN, end - 20 * MIN, 4):
        ops.slow_broker(ops.rng.randint(1, ops.p.brokers), t, ops.rng.randint(MIN, 15 * MIN))
    for k, t in enumerate(_spread(ops, t0 + span // 5, end - 40 * MIN, 3)):
        if k == 1:
            topic = [n for n in names if ops.c.image.topic_config(n, UNCLEAN) != "true"]
            _unclean_incident(ops, t, _pick(ops, topic or names), admin=True)
        else:
            _unclean_incident(ops, t, _pick(ops, names, UNCLEAN), admin=False)
    if sim.cfg.elr:
        for k, t in enumerate(_spread(ops, t0 + span // 4, end - 40 * MIN, 3)):
            _elr_incident(ops, t, _pick(ops, names), last_leader_comes_back_unclean=k % 2 == 1)
    for k, t in enumerate(_spread(ops, t0 + 15 * MIN, end - 20 * MIN, 4)):
        tps = ops.topic_tps(_pick(ops, names))
        ops.reassign(t, ops.rng.sample(tps, min(len(tps), 3)), cancel=k == 2)
    ops.topic_churn(t0 + span // 2, 4)
    for t in _spread(ops, t0 + 30 * MIN, end - 30 * MIN, 2):
        ops.elect(t, ops.topic_tps(_pick(ops, names)), Election.PREFERRED)
    ops.set_config(t0 + span * 2 // 3, MIN_ISR, "1", _pick(ops, names, MIN_ISR))
    ops.set_config(t0 + span * 3 // 4, UNCLEAN, "true", _pick(ops, names))
    for t in _spread(ops, t0 + HOUR // 2, end - HOUR // 2, 2):
        ops.failover(t)
    if sim.cfg.metadata_version >= 13:
        ops.aborted_transaction(t0 + span * 3 // 5, sim.cfg.txn_threshold + 5)
    sim.run_until(end)


def _run_large(sim: Simulation, ops: Ops, names: list[str]) -> None:
    """A big cluster over days: a rolling restart every 12 hours, plus crashes, slow
    brokers, reassignments and an unclean incident in each half day."""
    end = ops.end
    half = 12 * HOUR
    t = sim.now + 10 * MIN
    while t < end - HOUR:
        stop = min(t + half, end)
        rr_end = ops.rolling_restart(t)
        for ts in _spread(ops, rr_end, stop - HOUR, 1):
            ops.restart(ops.rng.randint(1, ops.p.brokers), ts, 2 * MIN, clean=False)
        for ts in _spread(ops, t, stop - HOUR, 2):
            ops.slow_broker(ops.rng.randint(1, ops.p.brokers), ts, 5 * MIN)
        for ts in _spread(ops, t, stop - HOUR, 2):
            tps = ops.topic_tps(_pick(ops, names))
            ops.reassign(ts, ops.rng.sample(tps, min(len(tps), 20)))
        _unclean_incident(ops, min(rr_end + 30 * MIN, stop - 20 * MIN),
                         _pick(ops, names, UNCLEAN), admin=False)
        t = max(stop, rr_end)
    sim.run_until(end)


SCENARIOS: dict[str, Callable[[Simulation, Ops, list[str]], None]] = {
    "quiet": _run_quiet,
    "rolling-restart": _run_rolling_restart,
    "broker-crash": _run_broker_crash,
    "unclean-election": _run_unclean,
    "elr": _run_elr,
    "reassignment": _run_reassignment,
    "topic-churn": _run_topic_churn,
    "mixed": _run_mixed,
    "large": _run_large,
}

# Defaults per scenario (CLI options override them)
DEFAULTS: dict[str, dict[str, Any]] = {
    "quiet": {"hours": 6.0},
    "rolling-restart": {"hours": 3.0},
    "broker-crash": {"hours": 3.0},
    "unclean-election": {"hours": 3.0},
    "elr": {"hours": 3.0, "elr": True},
    "reassignment": {"hours": 3.0},
    "topic-churn": {"hours": 3.0},
    "mixed": {"hours": 24.0, "txn_threshold": 500},
    "large": {"brokers": 48, "topics": 400, "partitions": 250, "replication_factor": 3,
              "hours": 24.0 * 7, "segment_bytes": 64 * 1024 * 1024,
              "snapshot_interval_ms": 12 * HOUR, "snapshot_bytes": 256 * 1024 * 1024},
}


def simulate(name: str, cfg: SimConfig, params: Params,
             progress: Callable[[int, int], None] | None = None) -> dict[str, Any]:
    """Run scenario `name` into `cfg.out`; returns the summary written to simulation.json."""
    if name not in SCENARIOS:
        raise ValueError(f"unknown scenario {name!r} (one of {', '.join(SCENARIOS)})")
    cfg.extra = {**cfg.extra, "scenario": name, "brokers": params.brokers,
                 "topics": params.topics, "partitions_per_topic": params.partitions,
                 "replication_factor": params.replication_factor, "hours": params.hours}
    sim, ops, names = _base(cfg, params)
    if progress is not None:
        _with_progress(sim, ops, progress)
    SCENARIOS[name](sim, ops, names)
    return sim.finish()


def _with_progress(sim: Simulation, ops: Ops, progress: Callable[[int, int], None]) -> None:
    start, end = sim.now, ops.end
    step = max(1, (end - start) // 200)
    t = start + step
    while t <= end:
        sim.at(t, lambda: progress(sim.now - start, end - start))
        t += step
