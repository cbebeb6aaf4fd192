"""partition_events == the simulator's ground truth, exactly, for every event type.

simulate -> `kraftlake ingest` library path -> compare with labels.jsonl by (topic_id,
partition_id, offset, event_type). The pipeline finds its events in the bytes alone
(`kraft.events`); the labels are what the simulator's controller model decided for each
record it wrote (an unclean, ELR or clean election, a completed reassignment or recovery:
`simulate/labels.py`), plus `under_min_isr` and `elr_change` read from the states before and
after. The two share no classification rule, so any difference is a detection bug or a
controller-model bug (or a documented disagreement, which would be an explicit exclusion
here: there is none).

Two runs keep the test short yet cover every rule: `mixed` with ELR on (every event type,
LeaderRecoveryState-based unclean elections, ELR and last-known-leader elections, reassignment
completions and cancels, topic churn, an aborted metadata transaction) and `unclean-election`
at metadata.version 3.1-IV0, where no LeaderRecoveryState exists and no FeatureLevelRecord
is written, so only the heuristic rule can find the unclean elections.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest

from kraftlake import (
    EVENT_TYPES,
    compare,
    event_keys,
    ingest_dir,
    label_keys,
    lake_events,
    read_cluster_id,
    read_labels,
    simulate_cluster,
)

# Spark's events held against the simulator's labels: over two partitions, as on a real input
pytestmark = pytest.mark.usefixtures("several_partitions")

# id: (scenario, ELR on?, metadata.version level, hours, event types that must occur,
#      detections of unclean_election that must all occur, and nothing else)
CASES = {
    "mixed+elr": ("mixed", True, None, 1.0,
                  {"unclean_election", "recovery_completed", "elr_change", "elr_election",
                   "reassignment_started", "reassignment_completed", "reassignment_cancelled",
                   "partition_deleted", "under_min_isr", "preferred_election"},
                  {"leader_recovery_state", "already_recovering"}),
    "unclean@3.1-IV0": ("unclean-election", None, 2, 0.5, {"unclean_election"},
                        {"metadata_version"}),
}


@pytest.fixture(scope="module", params=sorted(CASES))
def run(request, spark, tmp_path_factory) -> tuple[str, list[dict], list[dict]]:
    """(case id, pipeline events, labels.jsonl lines) of one simulated cluster."""
    scenario, elr, level, hours, _, _ = CASES[request.param]
    base: Path = tmp_path_factory.mktemp(request.param.replace("@", "-"))
    sim, lake = base / "cluster", base / "lake"
    simulate_cluster(sim, scenario, seed=1, hours=hours, elr=elr, metadata_version=level)
    (res,) = ingest_dir(spark, sim, lake)
    assert res.orphans == 0 and res.quarantined == 0
    return request.param, lake_events(spark, lake, read_cluster_id(sim)), read_labels(sim)


def test_events_equal_labels_for_every_type(run) -> None:
    case, events, labels = run
    want, got = label_keys(labels), event_keys(events)
    score = compare(got, want, examples=3)
    diffs = {t: (score.fp[t], score.fn[t], score.fp_examples.get(t), score.fn_examples.get(t))
             for t in score.types() if score.fp[t] or score.fn[t]}
    assert diffs == {}, f"{case}: (extra, missed, extra e.g., missed e.g.) per type"
    assert len(events) == len(got)  # one row per (partition, offset, type): no duplicates
    assert {e["event_type"] for e in events} <= set(EVENT_TYPES)


def test_incident_types_are_present(run) -> None:
    """Guards the equality test against passing on empty input."""
    case, events, _ = run
    counts = Counter(e["event_type"] for e in events)
    missing = {t for t in CASES[case][4] if counts[t] == 0}
    assert not missing, f"{case}: no {sorted(missing)} in {dict(counts)}"


def test_unclean_detection_and_recovery_columns(run) -> None:
    case, events, _ = run
    unclean = [e for e in events if e["event_type"] == "unclean_election"]
    assert {e["detection"] for e in unclean} == CASES[case][5]
    assert all(e["new_leader"] >= 0 and e["new_leader"] not in (e["prev_isr"] or [])
               for e in unclean if e["detection"] != "leader_recovery_state")
    for r in (e for e in events if e["event_type"] == "recovery_completed"):
        assert r["prev_leader_recovery_state"] == 1 and r["new_leader_recovery_state"] == 0
        assert r["recovery_started_offset"] < r["offset"] and r["recovery_duration_ms"] > 0
    for e in (e for e in events if e["event_type"] == "elr_change"):
        assert (set(e["prev_eligible_leader_replicas"] or []) !=
                set(e["new_eligible_leader_replicas"] or [])) or (
            set(e["prev_last_known_elr"] or []) != set(e["new_last_known_elr"] or []))
