"""Jobs of different clusters writing one lake at the same moment: three real logs of three
clusters ingested together into a new lake (every table created by whichever job commits
first), then each cluster's rows must equal its own one-shot ingest into a lake of its own,
in every table, and `kraftlake timeline` of a partition the clusters share asks which
cluster is meant, and `kraftlake quality` names each stale cluster and its age. The jobs
run on threads of the worker's session: Delta's optimistic concurrency is the same between
threads as between processes, each job commits its own transactions against the tables'
shared logs."""

from __future__ import annotations

import re
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime
from pathlib import Path

import pytest
from click.testing import CliRunner

from kraftlake.cli import main
from kraftlake.jobs.batch import ingest
from kraftlake.lake.delta import Lake
from kraftlake.lake.schema import table_names
from kraftlake.sources.files import find_log_dirs, read_cluster_id
from tests.lake_rows import table_dicts
from tests.pipeline.conftest import BUSY
from tests.pipeline.test_stream_tail import NOMAN, TINY

LOGS = [BUSY, NOMAN.parent, TINY]  # three cluster ids


@pytest.fixture(scope="module")
def own_lakes(spark, tmp_path_factory, cfg_factory) -> dict[str, Path]:
    """Each log of LOGS ingested alone into a lake of its own: cluster id -> lake."""
    base = tmp_path_factory.mktemp("own")
    lakes = {}
    for log in LOGS:
        cid = read_cluster_id(find_log_dirs(str(log))[0])
        ingest(spark, cfg_factory(base / cid), [log])
        lakes[cid] = base / cid
    return lakes


def _same_as_own(shared: Path, own_lakes: dict[str, Path], skip: tuple[str, ...] = ()) -> None:
    """Every cluster's rows of every table of `shared` (but `skip`) equal its own lake's."""
    for cid, own in own_lakes.items():
        for name in table_names():
            if name not in ("quality_results", *skip):
                assert _rows(shared, name, cid) == _rows(own, name, cid), (cid, name)


def _rows(lake: Path, name: str, cluster_id: str) -> list[str]:
    return sorted(map(repr, (sorted(r.items()) for r in table_dicts(
        lake / name, filters=[("cluster_id", "=", cluster_id)]))))


def test_three_clusters_ingested_at_once_into_a_new_lake_equal_their_own_ingests(
        spark, tmp_path, cfg_factory, own_lakes) -> None:
    ids = [read_cluster_id(find_log_dirs(str(log))[0]) for log in LOGS]
    assert len(set(ids)) == 3, ids
    shared = tmp_path / "shared"
    with ThreadPoolExecutor(len(LOGS)) as pool:
        results = list(pool.map(lambda log: ingest(spark, cfg_factory(shared), [log]), LOGS))
    assert [r.cluster_id for (r,) in results] == ids
    assert all(r.records > 0 for (r,) in results)
    assert list(own_lakes) == ids
    _same_as_own(shared, own_lakes)
    assert Lake(shared).is_lake()

    # a partition every cluster has: its timeline names no cluster unless asked for one
    shared_parts = {}
    for r in table_dicts(shared / "partition_current",
                         columns=["cluster_id", "topic_name", "partition_id"]):
        shared_parts.setdefault((r["topic_name"], r["partition_id"]), set()).add(r["cluster_id"])
    (topic, pid), owners = max(shared_parts.items(), key=lambda kv: len(kv[1]))
    assert len(owners) >= 2, shared_parts
    args = ["timeline", "--lake", str(shared), "--topic", topic, "--partition", str(pid)]
    mixed = CliRunner().invoke(main, args)
    assert mixed.exit_code == 2, mixed.output
    assert f"{topic}-{pid} is in {len(owners)} clusters" in mixed.output
    assert all(c in mixed.output for c in owners)
    one = CliRunner().invoke(main, [*args, "--cluster-id", min(owners)],
                             env={"COLUMNS": "200"})
    assert one.exit_code == 0, one.output

    # freshness names every stale cluster with the age of its newest record, in days
    now = datetime(2030, 1, 1, tzinfo=UTC)
    fresh = CliRunner().invoke(main, ["quality", "--lake", str(shared), "--suite", "records",
                                      "--max-age", "3600", "--now", "2030-01-01"])
    assert fresh.exit_code in (0, 1), fresh.output
    stale = [ln for ln in fresh.output.splitlines() if ln.startswith("stale: ")]
    newest = {}
    for r in table_dicts(shared / "records", columns=["cluster_id", "timestamp"]):
        if r["timestamp"] is not None:
            newest[r["cluster_id"]] = max(newest.get(r["cluster_id"], r["timestamp"]),
                                          r["timestamp"])
    assert len(stale) == len(ids), fresh.output
    for cid in ids:
        days = (now - newest[cid]).days
        line = next(ln for ln in stale if f"cluster {cid}:" in ln)
        assert f"newest record {days} d " in line and line.endswith("old (allowed 1 h)"), line

    # a report of the whole lake: a fleet summary linking one report per cluster
    fleet = tmp_path / "fleet.html"
    made = CliRunner().invoke(main, ["report", "--lake", str(shared), "--out", str(fleet)])
    assert made.exit_code == 0, made.output
    assert f"and {len(ids)} cluster reports beside it" in made.output
    summary = fleet.read_text()
    for cid in ids:
        page = tmp_path / f"fleet-{cid}.html"
        assert f"<a href='fleet-{cid}.html'>{cid}</a>" in summary
        assert f"kraftlake incident report: cluster {cid}" in page.read_text()
        incidents = table_dicts(shared / "incidents", filters=[("cluster_id", "=", cid)])
        still_open = sum(i["end_offset"] is None for i in incidents)
        row = summary.split(f"{cid}</a>", 1)[1].split("</tr>", 1)[0]
        cells = [re.sub("<[^>]+>", "", c.split("</td>")[0]) for c in row.split("<td>")[1:]]
        assert cells[2:4] == [str(len(incidents)), str(still_open)], cells


def test_a_stream_beside_ingests_of_other_clusters_equals_their_own_ingests(
        spark, tmp_path, cfg_factory, own_lakes) -> None:
    """A stream of one cluster (three micro-batches) while two ingests of other clusters
    write the same new lake: neither conflicts with the other (each cluster's replacements
    touch only its own partitions, appends are blind), and every cluster's rows equal its
    own one-shot ingest in every table."""
    from kraftlake.jobs.stream import start_stream

    shared = tmp_path / "shared"

    def stream() -> None:
        q = start_stream(spark, cfg_factory(shared), NOMAN, available_now=True,
                         max_offsets=700)
        q.awaitTermination()

    def ingests() -> None:
        for log in (BUSY, TINY):
            ingest(spark, cfg_factory(shared), [log])

    with ThreadPoolExecutor(2) as pool:
        for f in [pool.submit(stream), pool.submit(ingests)]:
            f.result()
    runs = {r["cluster_id"]: r for r in table_dicts(shared / "ingest_progress")
            if r["app_id"].startswith("kraftlake-stream")}
    assert list(runs) == [read_cluster_id(NOMAN)]
    _same_as_own(shared, own_lakes, skip=("ingest_progress",))  # a stream's runs are its own
