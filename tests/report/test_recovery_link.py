"""Recovery is linked where a user looks for it: the README's example query (each unclean
election LEFT JOIN the recovery_completed that ends it) and the report give the same answer
on lakes the pipeline builds into Delta: the demo's scenario (`mixed`, seed 1, unclean
elections detected by LeaderRecoveryState) and a crafted log (real segment bytes) in which a
second unclean election comes during the first one's recovery (`already_recovering`: the
case the old join on `recovery_started_offset` missed, 9 partitions on a 3-hour demo lake).
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from click.testing import CliRunner

from kraftlake import ingest_dir
from kraftlake.cli import main
from kraftlake.lake.delta import Lake
from kraftlake.report.data import Window, clusters, load, recovery_of
from kraftlake.simulate.writer import LogWriter
from tests.lake_rows import table_dicts
from tests.quality.crafted import DIR_ID, T0, TOPIC_ID

README = Path(__file__).resolve().parents[2] / "README.md"


def readme_query() -> str:
    """The README's example query that names each unclean election's recovery."""
    found = [q for q in re.findall(r'kraftlake sql "(.*?)"', README.read_text(), re.S)
             if "recovered_ts" in q]
    assert len(found) == 1, found
    return found[0]


def _second(ts) -> str:
    return str(ts).replace("T", " ")[:19]


def _twice_unclean_log(root: Path) -> Path:
    """orders-0 on brokers 1, 2, 3: leader 1 alone in the ISR; an unclean election of 2
    (RECOVERING), then of 3 while still RECOVERING, then the recovery completes."""
    w = LogWriter(root)
    w.new_epoch(1, [1], T0)
    w.append([("FeatureLevelRecord", 0, {"name": "metadata.version", "feature_level": 21})],
             T0)
    w.append([("TopicRecord", 0, {"name": "orders", "topic_id": TOPIC_ID}),
              ("PartitionRecord", 1, {
                  "partition_id": 0, "topic_id": TOPIC_ID, "replicas": [1, 2, 3], "isr": [1],
                  "removing_replicas": [], "adding_replicas": [], "leader": 1,
                  "leader_epoch": 0, "partition_epoch": 0, "leader_recovery_state": 0,
                  "directories": [DIR_ID] * 3})], T0 + 10)
    for i, change in enumerate([{"leader": 2, "isr": [2], "leader_recovery_state": 1},
                                {"leader": 3, "isr": [3]},
                                {"isr": [3, 1, 2], "leader_recovery_state": 0}]):
        w.append([("PartitionChangeRecord", 0, {"partition_id": 0, "topic_id": TOPIC_ID,
                                                **change})], T0 + 60_000 * (i + 1))
    w.close()
    w.write_companions(cluster_id="twice-unclean", node_id=1, directory_id=DIR_ID,
                       bootstrap=[], leader_id=1, voters=[1], ts=T0, formatted="crafted")
    return w.dir


@pytest.fixture(scope="module")
def lakes(spark, scenario_lakes, tmp_path_factory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("twice-unclean")
    _twice_unclean_log(root / "log")
    ingest_dir(spark, root / "log", root / "lake")
    return {"mixed": scenario_lakes["mixed"][1], "twice-unclean": root / "lake"}


@pytest.mark.parametrize("case", ["mixed", "twice-unclean"])
def test_readme_query_equals_report(spark, lakes, case) -> None:
    path = lakes[case]
    res = CliRunner().invoke(main, ["sql", readme_query(), "--lake", str(path),
                                    "--format", "json", "--limit", "0"])
    assert res.exit_code == 0, res.output
    sql = {(r["topic_name"], r["partition_id"], r["offset"]):
           None if r["recovered_ts"] is None else _second(r["recovered_ts"])
           for r in json.loads(res.output[res.output.index("["):])}
    lake = Lake(path)
    (cid,) = clusters(spark, lake)
    data = load(spark, lake, cid, Window(None, None))
    report = {}
    for evs in data.incident_events.values():
        for e in evs:
            if e["event_type"] == "unclean_election":
                r = recovery_of(e, evs)
                report[(e["topic_name"], e["partition_id"], e["offset"])] = (
                    None if r is None else _second(r["timestamp"]))
    assert sql == report
    detections = {r["detection"] for r in table_dicts(
        lake.path("partition_events"), ["detection"], [("event_type", "=", "unclean_election")])}
    if case == "twice-unclean":
        assert detections == {"leader_recovery_state", "already_recovering"}
        assert len(sql) == 2 and len(set(sql.values())) == 1  # one recovery closes both
    assert all(v is not None for v in sql.values())  # every recovery of the run completed
