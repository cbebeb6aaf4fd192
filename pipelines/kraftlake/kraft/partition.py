"""One partition's state: Kafka's `PartitionRegistration`, its sentinels and its merge.

Sources (apache/kafka, metadata module): `metadata/LeaderConstants.java` (leader sentinels),
`metadata/LeaderRecoveryState.java` (`of`, `changeTo`), `common/DirectoryId.java` (reserved
directory ids), `metadata/PartitionRegistration.java` (the `PartitionRecord` constructor,
`merge(PartitionChangeRecord)`, `defaultToMigrating`), `image/TopicDelta.java` and
`controller/ReplicationControlManager.removeTopicElrs` (ClearElrRecord, 4.x).

A record Kafka's constructor or merge throws on (a LeaderRecoveryState outside {0, 1}, or
outside {-1, 0, 1} in a change) is refused as a whole: the controller's replay fails and the
broker's loader (`MetadataBatchLoader.loadBatch`) hands the exception to its fault handler
and skips the record. `InvalidRecord` is that refusal here.
"""

from __future__ import annotations

from typing import Any, NamedTuple

NO_LEADER = -1  # LeaderConstants.NO_LEADER
NO_LEADER_CHANGE = -2  # LeaderConstants.NO_LEADER_CHANGE: the change record's default

RECOVERED = 0  # LeaderRecoveryState.RECOVERED
RECOVERING = 1  # LeaderRecoveryState.RECOVERING
LRS_NO_CHANGE = -1  # LeaderRecoveryState.NO_CHANGE: the change record's default
LRS_VALUES = (RECOVERED, RECOVERING)  # what LeaderRecoveryState.of accepts
LRS_CHANGE_VALUES = (LRS_NO_CHANGE, *LRS_VALUES)  # what changeTo accepts

MIGRATING_DIR = "AAAAAAAAAAAAAAAAAAAAAA"  # DirectoryId.MIGRATING = Uuid(0, 0)
UNASSIGNED_DIR = "AAAAAAAAAAAAAAAAAAAAAQ"  # DirectoryId.UNASSIGNED = Uuid(0, 1)
LOST_DIR = "AAAAAAAAAAAAAAAAAAAAAg"  # DirectoryId.LOST = Uuid(0, 2)

# The state columns every layer carries, snake_case of Kafka's field names.
LIST_COLUMNS = ("isr", "eligible_leader_replicas", "last_known_elr", "replicas",
                "adding_replicas", "removing_replicas")
STATE_COLUMNS = ("leader", "leader_epoch", "partition_epoch", "isr", "eligible_leader_replicas",
                 "last_known_elr", "replicas", "adding_replicas", "removing_replicas",
                 "leader_recovery_state", "directories")


class InvalidRecord(ValueError):
    """A partition record Kafka refuses as a whole (see the module docstring)."""


class PartitionRegistration(NamedTuple):
    """The state Kafka keeps for one partition, immutable; changes make new values.

    A named tuple rather than a frozen dataclass: every record makes one, and a frozen
    dataclass sets each of its eleven fields through `object.__setattr__` (some 1.5 us a
    state more than a tuple, which is made in one step: most of `merge`'s time)."""

    replicas: tuple[int, ...]
    isr: tuple[int, ...]
    removing_replicas: tuple[int, ...] = ()
    adding_replicas: tuple[int, ...] = ()
    leader: int = NO_LEADER
    leader_epoch: int = 0
    partition_epoch: int = 0
    leader_recovery_state: int = RECOVERED
    eligible_leader_replicas: tuple[int, ...] = ()
    last_known_elr: tuple[int, ...] = ()
    directories: tuple[str, ...] = ()

    @classmethod
    def from_record(cls, data: dict[str, Any]) -> PartitionRegistration:
        """`PartitionRegistration(PartitionRecord)`: a complete state, never a merge
        (docs/semantics.md 1.1). Absent ELR / LastKnownElr are []; LeaderRecoveryState's
        default is RECOVERED and anything but 0 / 1 is refused (`LeaderRecoveryState.of`)."""
        lrs = data.get("leader_recovery_state")
        lrs = RECOVERED if lrs is None else lrs
        if lrs not in LRS_VALUES:
            raise InvalidRecord(f"PartitionRecord LeaderRecoveryState {lrs} is not 0 or 1")
        replicas = _tuple(data.get("replicas"))
        return cls(
            replicas=replicas,
            isr=_tuple(data.get("isr")),
            removing_replicas=_tuple(data.get("removing_replicas")),
            adding_replicas=_tuple(data.get("adding_replicas")),
            leader=data.get("leader", NO_LEADER),
            leader_epoch=data.get("leader_epoch", 0),
            partition_epoch=data.get("partition_epoch", 0),
            leader_recovery_state=lrs,
            eligible_leader_replicas=_tuple(data.get("eligible_leader_replicas")),
            last_known_elr=_tuple(data.get("last_known_elr")),
            directories=_default_to_migrating(tuple(data.get("directories") or ()),
                                             len(replicas)),
        )

    def merge(self, data: dict[str, Any]) -> tuple[PartitionRegistration, str | None]:
        """`PartitionRegistration.merge(PartitionChangeRecord)` (docs/semantics.md 1.2, 1.3).

        Absent fields and the sentinels (Leader -2, LeaderRecoveryState -1) mean
        "unchanged", an empty list is a value; the leader epoch goes up by one iff Leader is
        present, the partition epoch by one for every record. Returns (new state, problem):
        the problem is a directories mismatch Kafka's constructor would reject, reported but
        applied as far as it can be. Raises `InvalidRecord` for a LeaderRecoveryState
        `changeTo` refuses.
        """
        lrs = data.get("leader_recovery_state", LRS_NO_CHANGE)
        if lrs not in LRS_CHANGE_VALUES:
            raise InvalidRecord(
                f"PartitionChangeRecord LeaderRecoveryState {lrs} is not -1, 0 or 1")
        problem = None
        replicas = data.get("replicas")
        dirs = data.get("directories")
        leader = data.get("leader", NO_LEADER_CHANGE)
        new_replicas = tuple(replicas) if replicas is not None else self.replicas
        if dirs is not None:
            new_dirs = _default_to_migrating(tuple(dirs), len(new_replicas))
        elif len(new_replicas) != len(self.directories):
            if all(d == MIGRATING_DIR for d in self.directories):
                new_dirs = (MIGRATING_DIR,) * len(new_replicas)
            else:
                problem = (f"replicas changed length ({len(self.replicas)} -> "
                           f"{len(new_replicas)}) without directories while directories "
                           f"are assigned")
                new_dirs = self.directories
        else:
            new_dirs = self.directories
        moved = leader != NO_LEADER_CHANGE
        # positional, in the fields' order: the named tuple's keyword constructor is a
        # Python function of its own, a quarter of a merge's time
        return _new(PartitionRegistration, (
            new_replicas,
            _given(data, "isr", self.isr),
            _given(data, "removing_replicas", self.removing_replicas),
            _given(data, "adding_replicas", self.adding_replicas),
            leader if moved else self.leader,
            self.leader_epoch + 1 if moved else self.leader_epoch,
            self.partition_epoch + 1,
            self.leader_recovery_state if lrs == LRS_NO_CHANGE else lrs,
            _given(data, "eligible_leader_replicas", self.eligible_leader_replicas),
            _given(data, "last_known_elr", self.last_known_elr),
            new_dirs,
        )), problem

    @property
    def elr_clear_changes(self) -> bool:
        """A ClearElrRecord changes this partition iff its ELR or LastKnownElr is non-empty
        (`TopicDelta.maybeClearElr`, `RCM.removeTopicElrs`, 4.x)."""
        return bool(self.eligible_leader_replicas or self.last_known_elr)

    def clear_elr(self) -> PartitionRegistration:
        """The synthetic change a ClearElrRecord merges: ELR = LastKnownElr = [], +1
        partition epoch (no PartitionChangeRecord in the log)."""
        return self._replace(partition_epoch=self.partition_epoch + 1,
                             eligible_leader_replicas=(), last_known_elr=())

    @property
    def reassigning(self) -> bool:
        """`isReassignmentInProgress`: adding or removing replicas non-empty."""
        return bool(self.adding_replicas or self.removing_replicas)

    def as_dict(self, *, directories: bool = False) -> dict[str, Any]:
        """The state as the lake's state columns hold it (the kernel's timeline and event
        rows, with `directories`) and as `final_state.json` does (without): lists, [] when
        empty, never null."""
        out: dict[str, Any] = {
            "leader": self.leader,
            "leader_epoch": self.leader_epoch,
            "partition_epoch": self.partition_epoch,
            "isr": list(self.isr),
            "eligible_leader_replicas": list(self.eligible_leader_replicas),
            "last_known_elr": list(self.last_known_elr),
            "replicas": list(self.replicas),
            "adding_replicas": list(self.adding_replicas),
            "removing_replicas": list(self.removing_replicas),
            "leader_recovery_state": self.leader_recovery_state,
        }
        if directories:
            out["directories"] = list(self.directories)
        return out


def _default_to_migrating(dirs: tuple[str, ...], n: int) -> tuple[str, ...]:
    """`PartitionRegistration.defaultToMigrating`: empty or all-MIGRATING -> MIGRATING x n."""
    if not dirs or all(d == MIGRATING_DIR for d in dirs):
        return (MIGRATING_DIR,) * n
    return dirs


def completes_reassignment(b: PartitionRegistration, a: PartitionRegistration) -> bool:
    """A change that ends a reassignment with the target: A.replicas = B.replicas - removing
    (`PartitionReassignmentReplicas.maybeCompleteReassignment`)."""
    return b.reassigning and not a.reassigning and \
        a.replicas == tuple(r for r in b.replicas if r not in b.removing_replicas)


def cancels_reassignment(b: PartitionRegistration, a: PartitionRegistration) -> bool:
    """A change that reverts a reassignment: A.replicas = B.replicas - adding
    (`PartitionReassignmentRevert`)."""
    return b.reassigning and not a.reassigning and not completes_reassignment(b, a) and \
        a.replicas == tuple(r for r in b.replicas if r not in b.adding_replicas)


_new = tuple.__new__  # a named tuple of values in its fields' order


def _tuple(v: Any) -> tuple[int, ...]:
    return tuple(v) if v else ()


def _given(data: dict[str, Any], key: str, old: tuple[int, ...]) -> tuple[int, ...]:
    v = data.get(key)
    return tuple(v) if v is not None else old
