"""The simulator's controller against a real Kafka 4.3.1 controller, operation by operation.

`examples/real-incident/__cluster_metadata-0` is the metadata log a real controller wrote
while `tests/kafka/scenario.py` drove it (topic churn, an ISR shrink by SIGSTOP, an ELR
election after SIGTERM of 4, 3, 2, a min.insync.replicas change, unclean elections through
the topic config and through ElectLeaders UNCLEAN after kill -9, a reassignment, a preferred
election). The log is read with kraftlake's codec (proven equal to Kafka's DumpLogSegments
by tests/kafka/test_dump_parity.py).

What is taken from Kafka is only the *causes*: the log is cut into the operations the
controller handled (a broker registered, a heartbeat fenced / unfenced it or started its
controlled shutdown, a session expired, a topic was created with this assignment, a config
changed, a leader sent this AlterPartition ISR, an election or a reassignment was asked
for), and each is fed to the simulator's `Controller` through the `CALLS` table. What is
checked is everything the controller decided: for every operation the records it wrote
(types, versions, order, every field) must equal Kafka's, and after every operation every
partition's state (leader, epochs, ISR, ELR, LastKnownElr, replicas, adding / removing,
LeaderRecoveryState, directories) must equal the state Kafka's log replays to.

Left out of the comparison, because no model can know them: timestamps and offsets (the
real log also holds NoOp heartbeats and Raft control records), topic ids (random: compared
through the topic name), incarnation ids, endpoints (hosts, ports) and the supported feature
ranges of registrations (properties of the processes and the build), directory ids (random
per broker: compared through the broker that owns the directory) and broker epochs (offsets:
compared as "the epoch of the broker's n-th registration"). Within one operation, Kafka
writes the per-partition records of a run in the order of its hash maps (topic id hash,
then the order replicas joined the ISR index), so runs of partition records are compared
sorted by (topic, partition).
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from kraftlake.codec.logfiles import iter_file, list_log_dir
from kraftlake.codec.records import Record, decode_metadata_value, encode_metadata_value
from kraftlake.kraft.builder import Election
from kraftlake.kraft.configs import MIN_ISR, RESOURCE_BROKER, RESOURCE_TOPIC
from kraftlake.kraft.partition import LRS_NO_CHANGE, RECOVERED, RECOVERING
from kraftlake.kraft.versions import ELR_FEATURE, MV_FEATURE
from kraftlake.reference.replay import Replay
from kraftlake.simulate.controller import Controller, ControllerConfig, ListSink
from tests.conftest import real_log_dirs

LOG = Path(__file__).resolve().parents[2] / "examples" / "real-incident" / "__cluster_metadata-0"

# Whether a broker's previous incarnation stopped cleanly is not in the log: Kafka decides it
# from the registration request's PreviousBrokerEpoch. The scenario says it: the ELR step
# stops 4, 3 and 2 with SIGTERM and each one's second registration follows that clean
# shutdown; every later restart follows kill -9 (tests/kafka/scenario.py `run`).
CLEAN_RESTARTS = {(4, 2), (3, 2), (2, 2)}  # (broker, n-th registration)


@dataclass
class Cause:
    """One operation of Kafka's controller: what asked for it and the records it wrote."""

    kind: str  # a key of CALLS
    args: dict[str, Any]
    kafka: list[Record]  # what Kafka wrote for it, in log order
    kafka_after: dict[tuple[str, int], dict[str, Any]] = field(default_factory=dict)

    def __str__(self) -> str:
        first, last = self.kafka[0].offset, self.kafka[-1].offset
        where = f"offset {first}" if first == last else f"offsets {first}-{last}"
        return f"{self.kind}({', '.join(f'{k}={v}' for k, v in self.args.items())}) at {where}"


def _tp(c: Controller, x: Cause) -> tuple[str, int]:
    return c.image.topic_ids[x.args["topic"]], x.args["partition"]


def _preferred_all(c: Controller) -> None:
    """`kafka-leader-election --election-type PREFERRED --all-topic-partitions`: every
    partition is asked; those already led by their first replica write nothing."""
    for tp in c.partitions():
        c.elect(tp, Election.PREFERRED)


# cause -> the Controller call that must decide what Kafka decided
CALLS: dict[str, Callable[[Controller, Cause], object]] = {
    "bootstrap": lambda c, x: c.bootstrap(),
    "register_controller": lambda c, x: c.register_controller(x.args["controller"], "c"),
    "register_broker": lambda c, x: c.register_broker(x.args["broker"], clean=x.args["clean"]),
    "cordoned_dirs": lambda c, x: c.report_cordoned_dirs(
        x.args["broker"], [c.default_dir(b) for b in x.args["dirs"]]),
    "unfence": lambda c, x: c.unfence(x.args["broker"]),
    "fence": lambda c, x: c.fence(x.args["broker"]),
    "controlled_shutdown": lambda c, x: c.controlled_shutdown(x.args["broker"]),
    "create_topic": lambda c, x: c.create_topic(
        x.args["topic"], len(x.args["assignment"]), len(x.args["assignment"][0]),
        x.args["configs"], assignments=x.args["assignment"]),
    "delete_topic": lambda c, x: c.delete_topic(x.args["topic"]),
    "alter_config": lambda c, x: c.set_config(x.args["key"], x.args["value"], x.args["topic"]),
    "alter_partition": lambda c, x: c.alter_partition(_tp(c, x), x.args["isr"],
                                                      recovered=x.args["recovered"]),
    "elect_preferred_all": lambda c, x: _preferred_all(c),
    "elect_unclean": lambda c, x: c.elect(_tp(c, x), Election.UNCLEAN),
    "unclean_sweep": lambda c, x: c.unclean_sweep(),
    "reassign": lambda c, x: c.reassign(_tp(c, x), x.args["target"]),
}


# ---------------------------------------------------------------- reading Kafka's log


def kafka_batches(log_dir: Path = LOG) -> list[list[Record]]:
    """The data records of each batch of a real log's segments (no NoOps, no Raft control
    records); by default the 4.3.1 log of examples/real-incident."""
    segments, _snapshots = list_log_dir(log_dir)
    out = []
    for seg in segments:
        for _batch, recs in iter_file(seg):
            data = [r for r in recs if not r.control and r.type != "NoOpRecord"]
            if data:
                out.append(data)
    return out


def _is_pcr(r: Record) -> bool:
    return r.type == "PartitionChangeRecord"


def _brcr(r: Record, field_name: str, value: Any) -> bool:
    return r.type == "BrokerRegistrationChangeRecord" and r.data.get(field_name) == value


def _is_fence(r: Record) -> bool:
    return _brcr(r, "fenced", 1)


def _leader_only(r: Record) -> bool:
    """An ElectLeaders PREFERRED record: a new leader and nothing else."""
    d = r.data
    return _is_pcr(r) and d["leader"] >= 0 and d["isr"] is None and d["replicas"] is None \
        and d["leader_recovery_state"] == LRS_NO_CHANGE


class CauseReader:
    """Cuts Kafka's log into operations. Records of one operation are written together, so
    they sit in one batch: the partition records right before a fence (session timeout,
    SHUTDOWN_NOW) or a registration (clean-up of the previous incarnation) belong to it, and
    so do those right after an unfence or the start of a controlled shutdown."""

    def __init__(self) -> None:
        self.image = Replay()  # Kafka's state, to name topics and read configs and LRS
        self.registrations: dict[int, int] = {}
        self.dir_owner: dict[str, int] = {}  # directory id -> broker

    def read(self, batches: list[list[Record]]) -> list[Cause]:
        causes = []
        for rs in batches:
            i = 0
            while i < len(rs):
                cause = self._cause_at(rs, i)
                i += len(cause.kafka)
                for r in cause.kafka:
                    self.image.apply(r)
                    if r.type == "RegisterBrokerRecord":
                        self.dir_owner.update((u, r.data["broker_id"])
                                              for u in r.data["log_dirs"] or [])
                cause.kafka_after = partition_states(self.image, self.dir_owner)
                causes.append(cause)
        return causes

    def _name(self, topic_id: str) -> str:
        return self.image.topics[topic_id]

    def _cause_at(self, rs: list[Record], i: int) -> Cause:
        r, d = rs[i], rs[i].data
        rest = rs[i + 1:]
        if r.type == "BeginTransactionRecord":
            end = next(k for k, x in enumerate(rs) if x.type == "EndTransactionRecord")
            return Cause("bootstrap", {}, rs[i:end + 1])
        if r.type == "RegisterControllerRecord":
            return Cause("register_controller", {"controller": d["controller_id"]}, [r])
        if r.type == "RegisterBrokerRecord":
            b = d["broker_id"]
            n = self.registrations[b] = self.registrations.get(b, 0) + 1
            return Cause("register_broker", {"broker": b, "clean": (b, n) in CLEAN_RESTARTS}, [r])
        if r.type == "TopicRecord":
            tail = _run(rest, lambda x: x.type in ("ConfigRecord", "ClearElrRecord",
                                                   "PartitionRecord"))
            parts = sorted((x.data["partition_id"], x.data["replicas"]) for x in tail
                           if x.type == "PartitionRecord")
            configs = {x.data["name"]: x.data["value"] for x in tail if x.type == "ConfigRecord"}
            return Cause("create_topic", {"topic": d["name"], "configs": configs,
                                          "assignment": [reps for _p, reps in parts]},
                         [r, *tail])
        if r.type == "RemoveTopicRecord":
            return Cause("delete_topic", {"topic": self._name(d["topic_id"])}, [r])
        if r.type == "ConfigRecord":
            assert d["resource_type"] in (RESOURCE_TOPIC, RESOURCE_BROKER)
            topic = d["resource_name"] if d["resource_type"] == RESOURCE_TOPIC else None
            tail = _run(rest, lambda x: x.type == "ClearElrRecord")
            return Cause("alter_config", {"key": d["name"], "value": d["value"], "topic": topic},
                         [r, *tail])
        if _is_fence(r):
            return Cause("fence", {"broker": d["broker_id"]}, [r])
        if _brcr(r, "fenced", -1):
            b = d["broker_id"]
            tail = _run(rest, _is_pcr)
            after = rest[len(tail):]
            if after and _brcr(after[0], "broker_id", b) and \
                    after[0].data.get("cordoned_log_dirs") is not None:
                tail.append(after[0])  # the same heartbeat reported its cordoned dirs
            return Cause("unfence", {"broker": b}, [r, *tail])
        if _brcr(r, "in_controlled_shutdown", 1):
            return Cause("controlled_shutdown", {"broker": d["broker_id"]},
                         [r, *_run(rest, _is_pcr)])
        if r.type == "BrokerRegistrationChangeRecord" and d.get("cordoned_log_dirs") is not None:
            return Cause("cordoned_dirs", {"broker": d["broker_id"], "dirs": [
                self.dir_owner[u] for u in d["cordoned_log_dirs"]]}, [r])
        if _is_pcr(r):
            run = [r, *_run(rest, _is_pcr)]
            nxt = rs[i + len(run)] if i + len(run) < len(rs) else None
            if nxt is not None and (_is_fence(nxt) or nxt.type == "RegisterBrokerRecord"):
                cause = self._cause_at(rs, i + len(run))
                cause.kafka[:0] = run
                return cause
            if all(_leader_only(x) for x in run):
                return Cause("elect_preferred_all", {}, run)
            return self._partition_cause(r)
        raise AssertionError(f"no cause known for {r.type} at offset {r.offset}: {d}")

    def _partition_cause(self, r: Record) -> Cause:
        """A partition record of its own: a reassignment, an unclean election (the periodic
        sweep when the topic allows unclean elections, else ElectLeaders UNCLEAN), or the
        ISR a partition's leader asked for in an AlterPartition."""
        d = r.data
        name = self._name(d["topic_id"])
        where = {"topic": name, "partition": d["partition_id"]}
        if d["replicas"] is not None and d["isr"] is None:
            removing = set(d["removing_replicas"] or [])
            return Cause("reassign", {**where, "target": [x for x in d["replicas"]
                                                          if x not in removing]}, [r])
        if d["leader_recovery_state"] == RECOVERING and d["leader"] >= 0:
            kind = "unclean_sweep" if self.image.unclean_enabled(name) else "elect_unclean"
            return Cause(kind, where, [r])
        if d["isr"] is not None and d["leader"] == -2:
            before = self.image.partitions[d["topic_id"]][d["partition_id"]]
            lrs = d["leader_recovery_state"]
            recovered = lrs == RECOVERED or (lrs == LRS_NO_CHANGE and
                                             before.leader_recovery_state == RECOVERED)
            return Cause("alter_partition", {**where, "isr": d["isr"], "recovered": recovered},
                         [r])
        raise AssertionError(f"no cause known for the record at offset {r.offset}: {d}")


def _run(rs: list[Record], pred: Callable[[Record], bool]) -> list[Record]:
    out = []
    for r in rs:
        if not pred(r):
            break
        out.append(r)
    return out


# ---------------------------------------------------------------- what is compared


class View:
    """One side's records, normalised to what a controller decides (module docstring)."""

    def __init__(self) -> None:
        self.topics: dict[str, str] = {}  # topic id -> name
        self.dirs: dict[str, int] = {}  # directory id -> broker
        self.epochs: dict[tuple[int, int], int] = {}  # (broker, epoch) -> n-th registration

    def see(self, r: Record) -> tuple[str, int, dict[str, Any]]:
        d = dict(r.data)
        if r.type == "TopicRecord":
            self.topics[d["topic_id"]] = d["name"]
        if r.type == "RegisterBrokerRecord":
            b = d["broker_id"]
            self.epochs[(b, d["broker_epoch"])] = 1 + sum(1 for k in self.epochs if k[0] == b)
            for u in d.get("log_dirs") or []:
                self.dirs[u] = b
        if r.type in ("RegisterBrokerRecord", "RegisterControllerRecord"):
            for k in ("incarnation_id", "end_points", "features"):
                d.pop(k, None)
        if "topic_id" in d:
            d["topic_id"] = self.topics.get(d["topic_id"], d["topic_id"])
        for k in ("directories", "log_dirs", "cordoned_log_dirs"):
            if d.get(k) is not None:
                d[k] = [self.dirs.get(u, u) for u in d[k]]
        if "broker_epoch" in d:
            key = (d["broker_id"], d["broker_epoch"])
            d["broker_epoch"] = f"registration {self.epochs[key]}" if key in self.epochs \
                else d["broker_epoch"]
        return r.type, r.version, d


def operation_view(view: View, recs: list[Record]) -> list[tuple[str, int, dict[str, Any]]]:
    """The records of one operation; runs of partition records in (topic, partition) order."""
    seen = [view.see(r) for r in recs]
    out: list[tuple[str, int, dict[str, Any]]] = []
    run: list[tuple[str, int, dict[str, Any]]] = []
    for item in [*seen, None]:
        if item is not None and item[0] == "PartitionChangeRecord":
            run.append(item)
            continue
        out += sorted(run, key=lambda x: (x[2]["topic_id"], x[2]["partition_id"]))
        run = []
        if item is not None:
            out.append(item)
    return out


def partition_states(image: Replay, dir_owner: dict[str, int]) -> dict[tuple[str, int],
                                                                          dict[str, Any]]:
    """Every partition's state, directories as the brokers that own them."""
    out = {}
    for tid, parts in image.partitions.items():
        for pid, st in parts.items():
            s = st.as_dict(directories=True)
            s["directories"] = [dir_owner.get(u, u) for u in s["directories"]]
            out[(image.topics[tid], pid)] = s
    return out


def canonical(r: Record) -> Record:
    """The simulator's record as a reader of its bytes sees it (every field, defaults
    filled in), so it compares with Kafka's decoded records field for field."""
    dec = decode_metadata_value(encode_metadata_value(r.type, r.version, r.data))
    assert dec.error is None, dec.error
    return Record(r.offset, r.timestamp, r.epoch, False, dec.type, dec.api_key, dec.version,
                  dec.data, None)


# ---------------------------------------------------------------- the run


@dataclass
class Outcome:
    causes: list[Cause]
    record_mismatches: list[str]
    state_mismatches: list[str]
    records_compared: int
    states_compared: int


def controller_config(batches: list[list[Record]]) -> ControllerConfig:
    """Same metadata.version and features as the real cluster (the bootstrap records)."""
    features = {r.data["name"]: r.data["feature_level"] for r in batches[0]
                if r.type == "FeatureLevelRecord"}
    min_isr = next(int(r.data["value"]) for r in batches[0]
                   if r.type == "ConfigRecord" and r.data["name"] == MIN_ISR)
    mv = features.pop(MV_FEATURE)
    elr = features.pop(ELR_FEATURE, 0) >= 1
    return ControllerConfig(metadata_version=mv, elr_enabled=elr, default_min_isr=min_isr,
                            features=features)


@functools.cache
def run_against_kafka() -> Outcome:
    """Feed every cause read from Kafka's log to a fresh controller and compare."""
    batches = kafka_batches()
    causes = CauseReader().read(batches)
    sink = ListSink()
    c = Controller(controller_config(batches), sink)
    kafka_view, sim_view = View(), View()
    rec_bad: list[str] = []
    state_bad: list[str] = []
    n_recs = n_states = 0
    for cause in causes:
        start = len(sink.records)
        CALLS[cause.kind](c, cause)
        ours = operation_view(sim_view, [canonical(r) for r in sink.records[start:]])
        theirs = operation_view(kafka_view, cause.kafka)
        n_recs += len(theirs)
        if ours != theirs:
            rec_bad.append(f"{cause}:\n  Kafka wrote     {theirs}\n  simulator wrote {ours}")
        owner = {u: b for b, u in c.broker_dirs.items()}
        sim_after = partition_states(c.image, owner)
        n_states += len(cause.kafka_after)
        if sim_after != cause.kafka_after:
            diff = {tp: (cause.kafka_after.get(tp), sim_after.get(tp))
                    for tp in sorted(set(sim_after) | set(cause.kafka_after))
                    if sim_after.get(tp) != cause.kafka_after.get(tp)}
            state_bad.append(f"after {cause}: (Kafka, simulator) {diff}")
    return Outcome(causes, rec_bad, state_bad, n_recs, n_states)


# ---------------------------------------------------------------- tests


def test_the_real_cluster_is_the_one_configured():
    """The comparison runs at Kafka's settings: metadata.version 4.3-IV0 (30), ELR on."""
    cfg = controller_config(kafka_batches())
    assert (cfg.metadata_version, cfg.elr_enabled, cfg.default_min_isr) == (30, True, 1)


def test_every_record_kafka_wrote_has_a_cause():
    """No record of the log is skipped: the operations cover it exactly, and every kind of
    operation the scenario drove is among them."""
    batches = kafka_batches()
    causes = run_against_kafka().causes
    assert [r.offset for x in causes for r in x.kafka] == \
        [r.offset for rs in batches for r in rs]
    kinds = {x.kind for x in causes}
    assert kinds == set(CALLS), set(CALLS) - kinds


def test_simulator_writes_the_records_kafka_wrote():
    """Per operation: the same record types, versions and order, every decided field equal
    (leader, ISR, ELR, LastKnownElr, LeaderRecoveryState, replicas, adding / removing,
    directories, fence / unfence / controlled-shutdown flags, configs, ClearElrRecords)."""
    out = run_against_kafka()
    assert not out.record_mismatches, "\n".join(out.record_mismatches[:4])
    assert out.records_compared >= 150


def test_partition_states_equal_after_every_operation():
    """Leader and partition epochs included: what the log replays to, after each cause."""
    out = run_against_kafka()
    assert not out.state_mismatches, "\n".join(out.state_mismatches[:4])


@pytest.mark.parametrize(("offset", "kind", "expected"), [
    # broker 4's session expired (SIGSTOP): one record per partition whose ISR held it
    (84, "fence", ["PartitionChangeRecord"] * 3 + ["BrokerRegistrationChangeRecord"]),
    # a topic created with min.insync.replicas: TopicRecord, its config, a ClearElrRecord
    (55, "create_topic", ["TopicRecord", "ConfigRecord", "ClearElrRecord"] +
     ["PartitionRecord"] * 3),
    # min.insync.replicas changed: a ClearElrRecord for the topic follows the config
    (203, "alter_config", ["ConfigRecord", "ClearElrRecord"]),
    # 4.3-IV0: the heartbeat that unfences a restarted broker also reports its (no)
    # cordoned log dirs, one more registration change
    (172, "unfence", ["BrokerRegistrationChangeRecord"] * 2),
])
def test_operations_spelled_out(offset, kind, expected):
    """A few operations as Kafka wrote them, for a reader (the simulator writes the same,
    by the test above)."""
    cause = next(x for x in run_against_kafka().causes if x.kafka[0].offset == offset)
    assert (cause.kind, [r.type for r in cause.kafka]) == (kind, expected)


def test_registration_epoch_is_the_first_offset_it_writes():
    """Not in the real log (no registration there had a previous incarnation to clean up):
    Kafka's broker epoch is the controller's next write offset when it handles the request
    (`QuorumController.registerBroker`), so when an unclean restart first removes the broker
    from an ELR, the epoch is that record's offset, not the registration's own."""
    sink = ListSink()
    c = Controller(ControllerConfig(metadata_version=30, elr_enabled=True), sink)
    c.bootstrap()
    for b in (1, 2, 3):
        c.register_broker(b)
        c.unfence(b)
    c.create_topic("t", 1, 3, {MIN_ISR: "2"}, assignments=[[1, 2, 3]])
    c.fence(3)
    c.fence(2)  # ISR [1] < 2: ELR [2]
    start = len(sink.records)
    c.register_broker(2, clean=False)
    written = sink.records[start:]
    assert [r.type for r in written] == ["PartitionChangeRecord", "RegisterBrokerRecord"]
    assert written[0].data["eligible_leader_replicas"] == []
    assert written[1].data["broker_epoch"] == written[0].offset


def _creation_orders(log_dir: Path) -> set[tuple[int, bool]]:
    """(metadata.version, TopicRecord first?) of every topic created with configs in a real
    log whose metadata.version is known at that point."""
    recs = [r for batch in kafka_batches(log_dir) for r in batch]
    out, mv = set(), None
    for i, r in enumerate(recs):
        if r.type == "FeatureLevelRecord" and r.data["name"] == MV_FEATURE:
            mv = r.data["feature_level"]
        if r.type == "TopicRecord" and mv is not None:
            after = i + 1 < len(recs) and recs[i + 1].type == "ConfigRecord"
            before = i > 0 and recs[i - 1].type == "ConfigRecord"
            if after or before:
                out.add((mv, after))
    return out


def test_topic_creation_order_of_every_real_cluster():
    """Beyond the one 4.3.1 log: in every real fixture (Kafka 3.3 to 4.1) a topic created
    with configs has its TopicRecord first from metadata.version 3.4-IV0 on and its
    ConfigRecords first below, and the simulator at each of those levels writes that order."""
    seen: set[tuple[int, bool]] = set()
    for d in real_log_dirs():
        seen |= _creation_orders(d)
    assert {topic_first for _mv, topic_first in seen} == {True, False}, seen  # both eras
    for mv, topic_first in sorted(seen):
        c = Controller(ControllerConfig(metadata_version=mv), ListSink())
        c.bootstrap()
        c.register_broker(1)
        c.unfence(1)
        start = len(c.sink.records)
        c.create_topic("t", 1, 1, {"cleanup.policy": "compact"})
        first = [r.type for r in c.sink.records[start:]][:2]
        assert first == (["TopicRecord", "ConfigRecord"] if topic_first else
                         ["ConfigRecord", "TopicRecord"]), (mv, topic_first, first)
