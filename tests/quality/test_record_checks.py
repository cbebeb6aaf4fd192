"""The per-batch record checks of ingest/stream, and the suite files themselves."""

from __future__ import annotations

import json

import pytest

from kraftlake.lake.schema import table_schema
from kraftlake.packaged import EXPECTATIONS
from kraftlake.quality.record_checks import check_records, record_level_checks
from kraftlake.quality.suites import SUITES, checks, gx_suite
from kraftlake.sources.decode import with_fields
from tests.quality import crafted as C


def test_suites_are_gx_1x_json_with_severity():
    for suite in SUITES:
        raw = json.loads((EXPECTATIONS / f"{suite}.json").read_text())
        assert raw["name"] == suite
        built = gx_suite(suite)  # every entry accepted by GX
        assert len(built.expectations) == len(raw["expectations"]) > 0
        for exp in raw["expectations"]:
            assert exp["meta"]["severity"] in ("error", "warning"), exp
            assert exp["type"].startswith("expect_")
    names = {(s, c.name): c for s in SUITES for c in checks(s)}
    assert names[("records", "records_fresh")].severity == "warning"
    assert names[("partition_timeline", "leader_in_isr")].invariant == "10"


def test_record_level_checks_are_those_of_the_records_suite():
    assert {c.name for c in record_level_checks()} == {
        "no_unexpected_nulls", "leader_recovery_state_field_valid"}


@pytest.mark.parametrize("typed", [False, True], ids=["bronze", "source"])
@pytest.mark.parametrize("brk", [None, "bad_lrs"])
def test_batch_is_split_into_good_rows_and_quarantine(spark, bronze_of, brk, typed):
    """The same split whether the field is read from `data` (bronze, as `kraftlake quality`
    reads it) or from the decoder's typed `fields` (an ingest's source rows)."""
    records = bronze_of(brk)
    df = spark.createDataFrame(records.to_pandas(), table_schema("records").spark)
    if typed:
        df = with_fields(df)
    good, bad = check_records(df)
    assert good.columns == df.columns
    assert bad.columns == table_schema("quarantine").names
    good_n, bad_rows = good.count(), bad.collect()
    assert good_n + len(bad_rows) == records.num_rows  # nothing dropped
    if brk is None:
        assert bad_rows == []
        return
    assert len(bad_rows) == 1
    row = bad_rows[0].asDict()
    assert row["kind"] == "invariant" and row["cluster_id"] == C.CLUSTER
    assert row["reason"] == ("leader_recovery_state_field_valid: "
                             "dq_leader_recovery_state_violation="
                             "PartitionChangeRecord leader_recovery_state 5")
    assert row["raw"] and row["offset"] == 7


def test_missing_required_value_is_quarantined(spark, bronze_of):
    records = C.set_cell(bronze_of(None), 3, "epoch", None)
    df = spark.createDataFrame(records.to_pandas(), table_schema("records").spark)
    good, bad = check_records(df)
    reasons = [r["reason"] for r in bad.collect()]
    assert reasons == ["no_unexpected_nulls: dq_unexpected_nulls=epoch"]
    assert good.count() == records.num_rows - 1
