"""What a job holds between increments (`kraftlake.jobs.seed`): the next increment of the
same process continues from it while the lake's tables have not moved, and reads the lake
again when they have. The suite runs with KRAFTLAKE_CHECK_HELD=1 (tests/conftest.py), so
every increment here that continues from held slices also compares them with the lake."""

from __future__ import annotations

import json

import pytest

from kraftlake.jobs import seed
from kraftlake.jobs.batch import ingest
from kraftlake.lake.delta import Lake
from kraftlake.lake.schema import table_names
from tests.conftest import real
from tests.lake_rows import table_rows
from tests.logs import BUSY, BUSY_CUTS, growing_copy

# another cluster's log (under a cluster id of its own: the two share the image's default)
OTHER = real("vasifvortex__azercell_docker_project2/data/kafka1")
# every table but the progress rows, which count the increments
TABLES = [n for n in table_names() if n != "ingest_progress"]


def _now(lake: Lake) -> dict:
    """The (table id, version) of every table of the slices a job holds, as the lake is now."""
    return {name: lake.tag(name) for name in seed.SLICES}


def _rows(lake: Lake, name: str, cluster_id: str | None = None) -> list[str]:
    """`table_rows`, of one cluster only when `cluster_id` is given."""
    rows = table_rows(lake, name)
    return rows if cluster_id is None else [
        r for r in rows if json.loads(r).get("cluster_id") == cluster_id]


def _grow(tmp_path, cuts):
    """A copy of BUSY that grows: a callable that writes it up to each cut in turn."""
    grown, seg, full, batches = growing_copy(BUSY, tmp_path / "grown")
    ends = [batches[i].position for i in cuts] + [len(full)]
    return grown, (lambda k: seg.write_bytes(full[:ends[k]])), len(ends)


def test_increments_of_one_process_continue_from_what_it_held(spark, tmp_path, cfg_factory,
                                                              busy_once):
    """BUSY in three increments in this process: after each one the process holds every
    slice at the (table id, version) the lake has now, tables it created included, so the
    next increment reads none of them from Delta; the second and third compare them with
    the lake as they use them. The lake equals one ingest of the whole log."""
    grown, grow, steps = _grow(tmp_path, BUSY_CUTS)
    cfg = cfg_factory(tmp_path / "lake")
    lake = Lake(cfg.lake)
    for k in range(steps):
        grow(k)
        (res,) = ingest(spark, cfg, [grown])
        assert res.records > 0
        assert seed.held_tags(lake, res.cluster_id) == _now(lake), k
    for name in TABLES:
        assert _rows(lake, name) == _rows(busy_once, name), name


def test_a_commit_of_another_job_makes_the_next_increment_read_the_lake(
        spark, tmp_path, cfg_factory, busy_once):
    """Another cluster's ingest into the same lake between two increments moves every
    table: what the process held no longer matches, the next increment reads its slices
    from the lake, and both clusters' rows come out as if each were ingested alone."""
    grown, grow, steps = _grow(tmp_path, BUSY_CUTS)
    cfg = cfg_factory(tmp_path / "lake")
    lake = Lake(cfg.lake)
    grow(0)
    ingest(spark, cfg, [grown])
    grow(1)
    (res,) = ingest(spark, cfg, [grown])
    (other,) = ingest(spark, cfg, [OTHER], cluster_id="other")
    held = seed.held_tags(lake, res.cluster_id)
    moved = [n for n, tag in _now(lake).items() if held.get(n) not in (None, tag)]
    assert moved, "the other cluster's ingest committed to the tables held"
    for k in range(2, steps):
        grow(k)
        ingest(spark, cfg, [grown])
    assert seed.held_tags(lake, res.cluster_id) == _now(lake)
    alone = Lake(tmp_path / "alone")
    ingest(spark, cfg_factory(alone.root), [OTHER], cluster_id="other")
    for name in TABLES:
        assert _rows(lake, name, res.cluster_id) == _rows(busy_once, name), name
        assert _rows(lake, name, other.cluster_id) == _rows(alone, name), name


def test_the_check_refuses_a_held_slice_the_lake_does_not_hold(spark, tmp_path, cfg_factory):
    """KRAFTLAKE_CHECK_HELD compares what an increment continues from with the lake: a held
    slice that lost a row (what a bug in keeping it would leave) stops the increment with
    HeldStateError before it commits anything."""
    grown, grow, _steps = _grow(tmp_path, BUSY_CUTS)
    cfg = cfg_factory(tmp_path / "lake")
    lake = Lake(cfg.lake)
    for k in range(2):
        grow(k)
        (res,) = ingest(spark, cfg, [grown])
    held = seed._held(lake, res.cluster_id)
    tag, rows = held.slices["partition_current"]
    assert rows.num_rows > 1
    held.slices["partition_current"] = (tag, rows.slice(1))
    versions = {n: lake.version(n) for n in table_names()}
    grow(2)
    with pytest.raises(seed.HeldStateError, match="partition_current"):
        ingest(spark, cfg, [grown])
    assert {n: lake.version(n) for n in table_names()} == versions
