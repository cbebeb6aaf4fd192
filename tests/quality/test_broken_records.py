"""Each records-suite expectation, broken alone: crafted segment bytes where the invariant is
about bytes, a crafted table where it is about what the pipeline wrote.

The crafted log is decoded by the pipeline's `kraft-metadata` Spark source (the bronze step of
ingest), so an offset gap or a corrupt field reaches the suite as it would in production.
"""

from __future__ import annotations

from datetime import timedelta

import pyarrow as pa
import pytest

from kraftlake.lake.delta import Lake
from kraftlake.quality.suites import checks
from tests.quality import crafted as C
from tests.quality.conftest import CRAFTED_NOW, ONE_DAY, assert_only_failure, validate


@pytest.fixture(scope="module")
def good_records(bronze_of) -> pa.Table:
    return bronze_of(None)


@pytest.fixture(scope="module")
def good_lake(good_records, tmp_path_factory) -> Lake:
    """The crafted log's rows and a progress row that agrees: the lake of the passing run
    and of the stale one (a validation without results writes nothing to its lake), built
    once: two Delta tables created by Spark writes."""
    return C.records_lake(tmp_path_factory.mktemp("good-lake"), good_records,
                          progress_records=good_records.num_rows)


def _run(spark, qctx, lake, **kw):
    kw.setdefault("now", CRAFTED_NOW)
    kw.setdefault("max_age", ONE_DAY)
    return validate(spark, qctx, lake, ["records"], **kw)


def test_crafted_log_passes(spark, qctx, good_records, good_lake):
    assert good_records.num_rows == 12
    run = _run(spark, qctx, good_lake)
    assert not run.failed, [(o.expectation, o.unexpected_sample) for o in run.failed]
    assert {o.expectation for o in run.outcomes} == {c.name for c in checks("records")}


BYTES = {
    "gap": ("offsets_contiguous", "dq_offset_step", 4),
    "epoch_back": ("raft_epoch_non_decreasing", "dq_epoch_step", -1),
    "epoch_without_leader_change": ("raft_epoch_starts_with_leader_change", "dq_epoch_start",
                                    "NoOpRecord"),
    "bad_lrs": ("leader_recovery_state_field_valid", "dq_leader_recovery_state_violation",
                "PartitionChangeRecord leader_recovery_state 5"),
    "undecodable": ("records_decode", "error", None),
}


@pytest.mark.parametrize("brk", sorted(BYTES))
def test_broken_bytes_fail_only_their_expectation(spark, qctx, bronze_of, tmp_path, brk):
    name, column, value = BYTES[brk]
    records = bronze_of(brk)
    lake = C.records_lake(tmp_path / "lake", records, progress_records=records.num_rows)
    out = assert_only_failure(_run(spark, qctx, lake), "records", name)
    assert out.column == column
    assert out.unexpected_count == 1
    sample = out.unexpected_sample[0]
    assert sample["cluster_id"] == C.CLUSTER
    if value is not None:
        assert sample[column] == value, sample
    else:
        assert "TopicRecord" in str(sample[column]) or sample[column], sample


def test_missing_value_fails_no_unexpected_nulls(spark, qctx, good_records, tmp_path):
    broken = C.set_cell(good_records, 5, "timestamp", None)
    lake = C.records_lake(tmp_path, broken, progress_records=broken.num_rows)
    out = assert_only_failure(_run(spark, qctx, lake), "records", "no_unexpected_nulls")
    assert out.unexpected_sample[0]["dq_unexpected_nulls"] == "timestamp"


def test_progress_mismatch_fails_volume_match(spark, qctx, good_records, tmp_path):
    lake = C.records_lake(tmp_path, good_records, progress_records=good_records.num_rows + 2)
    out = assert_only_failure(_run(spark, qctx, lake), "records",
                              "records_match_ingest_progress")
    assert out.unexpected_sample[0]["dq_progress_difference"] == -2


def test_empty_lake_fails_volume(spark, qctx, good_records, tmp_path):
    lake = C.records_lake(tmp_path, C.empty(good_records))
    out = assert_only_failure(_run(spark, qctx, lake), "records", "records_volume")
    assert out.observed_value == 0


def test_stale_cluster_fails_freshness_as_warning(spark, qctx, good_records, good_lake):
    run = _run(spark, qctx, good_lake, now=CRAFTED_NOW + timedelta(days=3))
    out = assert_only_failure(run, "records", "records_fresh")
    assert out.severity == "warning"
    assert run.exit_code == 0
    newest = max(good_records.column("timestamp").to_pylist())
    age = (CRAFTED_NOW + timedelta(days=3) - newest).total_seconds()
    assert out.unexpected_count == 1
    assert out.unexpected_sample[0]["dq_newest_age_seconds"] == pytest.approx(age, abs=0.01)


def test_every_records_expectation_is_broken_here():
    covered = {v[0] for v in BYTES.values()} | {
        "no_unexpected_nulls", "records_match_ingest_progress", "records_volume",
        "records_fresh"}
    assert covered == {c.name for c in checks("records")}
