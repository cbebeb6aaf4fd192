"""`kraftlake timeline` through the real command on a real lake of a simulated cluster.

The `mixed` scenario (1 simulated hour, ELR on) has unclean elections that recover and topics
that are deleted; which partitions those are, and at which offsets, comes from the
simulator's ground truth (`labels.jsonl`), not from the lake the command reads.
"""

from __future__ import annotations

from pathlib import Path

from click.testing import CliRunner

from kraftlake.cli import main


def _timeline(lake: Path, topic: str, partition: int):
    return CliRunner().invoke(main, ["timeline", "--lake", str(lake), "--topic", topic,
                                     "--partition", str(partition)])


def _with(labels: list[dict], event: str) -> list[dict]:
    return [x for x in labels if event in x["events"]]


def test_unclean_election_and_its_recovery(sim_lake) -> None:
    lake, labels = sim_lake
    recovered = {(x["topic_name"], x["partition_id"]) for x in _with(labels, "recovery_completed")}
    case = next(x for x in _with(labels, "unclean_election")
                if (x["topic_name"], x["partition_id"]) in recovered)
    topic, pid = case["topic_name"], case["partition_id"]
    out = _timeline(lake, topic, pid)
    assert out.exit_code == 0, out.output
    assert f"{topic}-{pid}" in out.output
    assert "unclean_election(leader_recovery_state)" in out.output
    assert "RECOVERING" in out.output
    assert "recovery_completed after" in out.output
    assert str(case["offset"]) in out.output


def test_deleted_partition(sim_lake) -> None:
    lake, labels = sim_lake
    gone = _with(labels, "partition_deleted")[0]
    out = _timeline(lake, gone["topic_name"], gone["partition_id"])
    assert out.exit_code == 0, out.output
    assert f"deleted at offset {gone['offset']}" in out.output


def test_unknown_partition(sim_lake) -> None:
    lake, _ = sim_lake
    out = _timeline(lake, "no-such-topic", 0)
    assert out.exit_code == 2
    assert "no timeline rows for no-such-topic-0" in out.output
