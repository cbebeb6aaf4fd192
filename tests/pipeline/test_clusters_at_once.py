"""Jobs of different clusters writing one lake at the same moment: three real logs of three
clusters ingested together into a new lake (every table created by whichever job commits
first), then each cluster's rows must equal its own one-shot ingest into a lake of its own,
in every table, and `kraftlake timeline` of a partition the clusters share asks which
cluster is meant, and `kraftlake quality` names each stale cluster and its age. The jobs
run on threads of the worker's session: Delta's optimistic concurrency is the same between
threads as between processes, each job commits its own transactions against the tables'
shared logs.

While they run, a reader polls the lake's consistent view (`Lake.consistent`, what every
read command reads) and checks that it holds whole increments only: per cluster, as many
events and changes as its progress rows count, and no event past its last state."""

from __future__ import annotations

import random
import re
import threading
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from click.testing import CliRunner

from kraftlake.cli import main
from kraftlake.jobs.batch import ingest
from kraftlake.lake.delta import Lake
from kraftlake.lake.schema import table_names
from kraftlake.sources.files import find_log_dirs, read_cluster_id
from tests.lake_rows import comparable, table_dicts
from tests.lakes import ingested_once
from tests.logs import BUSY, NOMAN, TINY
from tests.polling import wait_until

LOGS = [BUSY, NOMAN.parent, TINY]  # three cluster ids


@pytest.fixture(scope="module")
def own_lakes(spark, tmp_path_factory, cfg_factory) -> dict[str, Path]:
    """Each log of LOGS ingested alone into a lake of its own: cluster id -> lake (built once
    in the run, `ingested_once`: BUSY's is `busy_once`'s)."""
    return {read_cluster_id(find_log_dirs(str(log))[0]):
            ingested_once(spark, cfg_factory, tmp_path_factory, log) for log in LOGS}


class PartialIncrement(AssertionError):
    """A consistent read showed part of an increment."""


def _check_whole(spark, shared: Path) -> bool:
    """One poll: the consistent view holds, per cluster, exactly the events and changes its
    progress rows count, and no event after its newest timeline state; False while the lake
    has no progress yet."""
    from pyspark.sql import functions as F

    if not Lake(shared, spark).is_lake():
        return False
    view = Lake(shared, spark).consistent()

    def per_cluster(name: str, *aggs) -> dict[str, tuple]:
        return {r[0]: tuple(r[1:]) for r in
                view.read(spark, name).groupBy("cluster_id").agg(*aggs).collect()}

    counted = per_cluster("ingest_progress", F.sum("events"), F.sum("changes"))
    events = per_cluster("partition_events", F.count("*"), F.max("offset"))
    changes = per_cluster("partition_changes", F.count("*"))
    states = per_cluster("partition_timeline", F.max("valid_from_offset"))
    for cid in set(events) | set(changes) | set(counted):
        n_ev, last_ev = events.get(cid, (0, None))
        want = counted.get(cid, (0, 0))
        if (n_ev, changes.get(cid, (0,))[0]) != want or (
                last_ev is not None and last_ev > states.get(cid, (-1,))[0]):
            raise PartialIncrement(f"{cid}: events {n_ev} (last {last_ev}), changes "
                                   f"{changes.get(cid)}, newest state {states.get(cid)}; "
                                   f"progress counts {want}; cut {view.cut}")
    return True


@contextmanager
def polling_reader(spark, shared: Path) -> Iterator[list[int]]:
    """A thread polling `_check_whole` until the block ends; yields the list it appends
    each poll's number to (polls of a lake with progress), and raises what a poll found."""
    polls: list[int] = []
    failed: list[BaseException] = []
    stop = threading.Event()

    def poll() -> None:
        while not stop.is_set():
            try:
                if _check_whole(spark, shared):
                    polls.append(len(polls))
            except BaseException as exc:  # re-raised in the test's thread
                failed.append(exc)
                return
            stop.wait(0.5)

    thread = threading.Thread(target=poll, name="consistent-reader")
    thread.start()
    try:
        yield polls
    finally:
        stop.set()
        thread.join()
    if failed:
        raise failed[0]


def _same_as_own(shared: Path, own_lakes: dict[str, Path], skip: tuple[str, ...] = ()) -> None:
    """Every cluster's rows of every table of `shared` (but `skip`) equal its own lake's."""
    for cid, own in own_lakes.items():
        for name in table_names():
            if name not in ("quality_results", *skip):
                assert _rows(shared, name, cid) == _rows(own, name, cid), (cid, name)


def _rows(lake: Path, name: str, cluster_id: str) -> list[str]:
    return sorted(map(repr, (sorted(comparable(name, r).items()) for r in table_dicts(
        lake / name, filters=[("cluster_id", "=", cluster_id)]))))


def test_three_clusters_ingested_at_once_into_a_new_lake_equal_their_own_ingests(
        spark, tmp_path, cfg_factory, own_lakes) -> None:
    ids = [read_cluster_id(find_log_dirs(str(log))[0]) for log in LOGS]
    assert len(set(ids)) == 3, ids
    shared = tmp_path / "shared"
    with polling_reader(spark, shared) as polls, ThreadPoolExecutor(len(LOGS)) as pool:
        results = list(pool.map(lambda log: ingest(spark, cfg_factory(shared), [log]), LOGS))
    print(f"{len(polls)} consistent reads during the ingests")
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
        assert cells[3:5] == [str(len(incidents)), str(still_open)], cells
        # freshness: the newest log record (not the last change), when it was ingested,
        # and the partitions offline and under min ISR now (their open intervals)
        log = [r["timestamp"] for r in table_dicts(
            shared / "records", ["timestamp", "source"], [("cluster_id", "=", cid)])
            if r["source"] == "log" and r["timestamp"] is not None]
        assert cells[1] == f"{max(log):%Y-%m-%d %H:%M:%S}", cells
        assert cells[2] >= f"{datetime.now(UTC) - timedelta(hours=1):%Y-%m-%d %H:%M:%S}"
        open_iv = [i["kind"] for i in table_dicts(
            shared / "partition_intervals", ["kind", "is_open"], [("cluster_id", "=", cid)])
            if i["is_open"]]
        assert cells[7:] == ["0", str(open_iv.count("offline")),
                             str(open_iv.count("under_min_isr"))], cells


@pytest.mark.parametrize("seed", [1, 2])
def test_two_streams_and_an_ingest_started_at_shuffled_moments_equal_their_own_ingests(
        spark, tmp_path, cfg_factory, own_lakes, seed) -> None:
    """Two streams (micro-batches of at most 700 and 60 offsets) and an ingest of three
    clusters, started in a shuffled order 0-3 s apart, into one new lake, and a compaction
    of the whole lake (`kraftlake maintain`) 0-3 s after the first increment completed:
    all complete (a compaction that
    lost a commit race to a job says so in one line and leaves that table for next time),
    every cluster's rows equal its own one-shot ingest in every table (a stream's progress
    rows are its own), and the reader polling the consistent view all along never saw part
    of an increment."""
    from kraftlake.jobs.stream import start_stream
    from kraftlake.lake.maintain import maintain

    shared = tmp_path / "shared"

    def stream(log: Path, max_offsets: int) -> None:
        start_stream(spark, cfg_factory(shared), log, available_now=True,
                     max_offsets=max_offsets).awaitTermination()

    jobs = [lambda: stream(NOMAN, 700), lambda: stream(BUSY, 60),
            lambda: ingest(spark, cfg_factory(shared), [TINY])]
    rng = random.Random(seed)
    rng.shuffle(jobs)
    delays = sorted(rng.uniform(0, 3) for _ in jobs)

    def delayed(job, delay: float) -> None:
        time.sleep(delay)
        job()

    compacted: list = []

    def compaction() -> None:  # once the first increment completed, while the others run
        wait_until("a first increment", Lake(shared, spark).is_lake, 300, interval=0.2)
        compacted.extend(maintain(Lake(shared, spark), vacuum=False))

    jobs.append(compaction)
    delays.append(rng.uniform(0, 3))
    with polling_reader(spark, shared) as polls, ThreadPoolExecutor(len(jobs)) as pool:
        for f in [pool.submit(delayed, j, d) for j, d in zip(jobs, delays, strict=True)]:
            f.result()
    lost = [m.error for m in compacted if m.error]
    print(f"seed {seed}: starts {[round(d, 1) for d in delays]} s, {len(polls)} consistent "
          f"reads during the jobs; compaction of {len(compacted)} tables, lost races: {lost}")
    assert compacted and all("\n" not in e for e in lost)
    assert polls, "the reader never read the lake while the jobs ran"
    kinds = {r["app_id"].split(":")[0] for r in table_dicts(shared / "ingest_progress")}
    assert kinds == {"kraftlake-stream", "kraftlake-ingest"}, kinds
    _same_as_own(shared, own_lakes, skip=("ingest_progress",))
