"""How long before a broker outage its own partition troubles can start (incident causes).

A crashed or hung broker stops fetching and stops heartbeating at the same moment. Its
partitions' leaders drop it from their ISRs once it has not caught up for
`replica.lag.time.max.ms` (ReplicationConfigs, default 30000); the controller fences it
once its lease has gone `broker.session.timeout.ms` without a heartbeat (KRaftConfigs,
default 9000; values of Kafka 4.1, confluentinc/kafka branch 4.1). So the ISR shrinks a
failure causes can precede the broker's outage record, but never by more than the sum of
the two: a partition trouble that began earlier than that before the outage was not caused
by it (the incident's cause is then that trouble, `incidents`). The sum is an upper
bound on purpose: the attribution errs on the broker's side.

Neither setting is dynamically reconfigurable in Kafka 4.1 (DynamicBrokerConfig lists
neither; nor in 4.3: a broker refuses `kafka-configs --alter` of either, "Cannot update these
configs dynamically"), so a log rarely holds them: only a request sent to the controller
itself writes one (it checks no broker config), and the nodes then ignore the value
(DynamicBrokerConfig: "Non-dynamic configs will be ignored"). Where a ConfigRecord does
(BROKER resource, a broker id or "" for the cluster default), the largest value in force at
any level is taken (the leaders that shrink and the controller that fences may be different
nodes), with Kafka's default standing for every broker without a value of its own when
there is no cluster default. Values that do not parse as Kafka parses them (a long, an int)
are ignored.
"""

from __future__ import annotations

import re
from bisect import bisect_right
from collections.abc import Iterable

from .configs import CLUSTER_DEFAULT, INT_MAX, INT_PATTERN

REPLICA_LAG_TIME_MAX_MS = "replica.lag.time.max.ms"
BROKER_SESSION_TIMEOUT_MS = "broker.session.timeout.ms"
KAFKA_DEFAULT_REPLICA_LAG_TIME_MAX_MS = 30000  # ReplicationConfigs.REPLICA_LAG_TIME_MAX_MS_DEFAULT
KAFKA_DEFAULT_BROKER_SESSION_TIMEOUT_MS = 9000  # KRaftConfigs.BROKER_SESSION_TIMEOUT_MS_DEFAULT
TIMING_KEYS = {REPLICA_LAG_TIME_MAX_MS: KAFKA_DEFAULT_REPLICA_LAG_TIME_MAX_MS,
               BROKER_SESSION_TIMEOUT_MS: KAFKA_DEFAULT_BROKER_SESSION_TIMEOUT_MS}
_LONG_MAX = 2**63 - 1
_INT = re.compile(INT_PATTERN)

# (offset, seq, key, resource name, value or None = deleted), one per ConfigRecord
ConfigPoint = tuple[int, int, str, str, "str | None"]


def _parse(key: str, value: str) -> int | None:
    """`Long.parseLong` (replica.lag.time.max.ms) / `Integer.parseInt` (the session
    timeout); None where Kafka would throw, or for a negative time."""
    if not _INT.match(value):
        return None
    n = int(value)
    top = _LONG_MAX if key == REPLICA_LAG_TIME_MAX_MS else INT_MAX
    return n if 0 <= n <= top else None


def setting(key: str, in_force: dict[str, str]) -> int:
    """One setting's largest value in force (resource name -> value), see the module doc."""
    values = [n for n in (_parse(key, v) for v in in_force.values()) if n is not None]
    if CLUSTER_DEFAULT not in in_force or _parse(key, in_force[CLUSTER_DEFAULT]) is None:
        values.append(TIMING_KEYS[key])
    return max(values)


def attribution_window_ms(in_force: dict[str, dict[str, str]]) -> int:
    """replica.lag.time.max.ms + broker.session.timeout.ms in force (key -> resource ->
    value): how long before an outage a trouble it caused can start."""
    return sum(setting(k, in_force.get(k, {})) for k in TIMING_KEYS)


def window_history(points: Iterable[ConfigPoint]) -> list[tuple[int, int, int]]:
    """(offset, seq, window in force from there on), starting with Kafka's defaults at
    (-1, 0), from one cluster's ConfigRecords of TIMING_KEYS at BROKER resources."""
    in_force: dict[str, dict[str, str]] = {}
    out = [(-1, 0, attribution_window_ms(in_force))]
    for offset, seq, key, resource, value in sorted(points, key=lambda p: (p[0], p[1])):
        levels = in_force.setdefault(key, {})
        if value is None:
            levels.pop(resource, None)
        else:
            levels[resource] = value
        out.append((offset, seq, attribution_window_ms(in_force)))
    return out


def window_at(history: list[tuple[int, int, int]], offset: int) -> int:
    """The window in force at `offset` in a `window_history`: that of its last entry at or
    before the offset (a ConfigRecord at the offset itself included)."""
    return history[bisect_right(history, offset, key=lambda h: h[0]) - 1][2]
