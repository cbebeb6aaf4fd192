"""kraft.timing: the attribution window from Kafka's defaults and the log's configs."""

from __future__ import annotations

from kraftlake.kraft.timing import (
    BROKER_SESSION_TIMEOUT_MS,
    REPLICA_LAG_TIME_MAX_MS,
    window_at,
    window_history,
)


def test_defaults_are_kafkas() -> None:
    """30 s (ReplicationConfigs) + 9 s (KRaftConfigs), Kafka 4.1."""
    assert window_history([]) == [(-1, 0, 39_000)]


def test_log_values_in_force() -> None:
    hist = window_history([
        (10, 0, REPLICA_LAG_TIME_MAX_MS, "", "60000"),  # cluster default: replaces 30 s
        (20, 0, BROKER_SESSION_TIMEOUT_MS, "2", "4000"),  # broker 2 only: others keep 9 s
        (30, 0, BROKER_SESSION_TIMEOUT_MS, "", "20000"),  # cluster default above broker 2's
        (40, 0, REPLICA_LAG_TIME_MAX_MS, "", "x"),  # unparseable: Kafka's default again
        (50, 0, BROKER_SESSION_TIMEOUT_MS, "", None),  # deleted
    ])
    assert [w for *_, w in hist] == [39_000, 69_000, 69_000, 80_000, 50_000, 39_000]


def test_the_window_at_an_offset_is_the_one_in_force_there() -> None:
    """From the config's own offset on; before the first, Kafka's defaults."""
    hist = window_history([(10, 0, REPLICA_LAG_TIME_MAX_MS, "", "60000"),
                           (10, 1, BROKER_SESSION_TIMEOUT_MS, "", "1000"),
                           (30, 0, REPLICA_LAG_TIME_MAX_MS, "", None)])
    assert [window_at(hist, o) for o in (0, 9, 10, 29, 30, 99)] == [
        39_000, 39_000, 61_000, 61_000, 31_000, 31_000]
