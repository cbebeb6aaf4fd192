"""partition_intervals and incidents equal the answers of the reference replay (tests/report/
oracle.py), on simulated scenarios and on a real log with broker restarts; computed in one
pass and as two increments (open intervals and the open incident carried over, closings
upserted on their keys), the answer is the same.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from kraftlake.detect.incidents import (
    broker_outages,
    from_tables,
    incidents,
    with_same_write_start,
)
from kraftlake.detect.intervals import INTERVAL_KEY, intervals
from kraftlake.lake.delta import Lake
from tests.report.oracle import expected

CASES = ["mixed", "broker-crash", "real"]
INCIDENT_FIELDS = ["start_offset", "end_offset", "cause", "cause_broker", "brokers",
                   "partitions_affected", "event_types", "event_partitions",
                   "unclean_elections", "data_loss_partitions"]


def _tables(spark, lake: Path) -> dict[str, DataFrame]:
    lk = Lake(lake)
    return {t: lk.read(spark, t) for t in ("partition_timeline", "configs", "brokers",
                                            "partition_events", "topics")}


def _interval_map(df: DataFrame) -> dict[tuple, int | None]:
    return {(r.topic_id, r.partition_id, r.kind, r.start_offset): r.end_offset
            for r in df.collect()}


def _incident_rows(df: DataFrame) -> list[dict]:
    return [{k: r[k] for k in INCIDENT_FIELDS} for r in df.orderBy("start_offset").collect()]


@pytest.fixture(scope="module")
def computed(spark, scenario_lakes):
    """case -> (expected, intervals rows, incidents rows) from whole tables."""
    out = {}
    for case in CASES:
        log_dir, lake = scenario_lakes[case]
        iv, inc = from_tables(*_tables(spark, lake).values())
        out[case] = (expected(log_dir), _interval_map(iv), _incident_rows(inc))
    return out


@pytest.mark.parametrize("case", CASES)
def test_intervals_equal_replay(computed, case) -> None:
    ex, got, _ = computed[case]
    assert got == ex.intervals
    assert got, "the case has bad states"


@pytest.mark.parametrize("case", CASES)
def test_incidents_equal_replay(computed, case) -> None:
    ex, _, got = computed[case]
    assert got == ex.incidents
    assert got and all(i["brokers"] for i in got if i["cause"].startswith("broker_"))


def test_scenarios_have_what_they_simulate(computed) -> None:
    """Hand-checked facts of the scenarios (independent of any rule's details): the crash
    scenario's incidents are all caused by a broker; `mixed` has unclean elections, all
    inside incidents, and every partition that went RECOVERING in it recovered."""
    ex, ivs, inc = computed["broker-crash"]
    assert inc and all(i["cause"] == "broker_fenced" for i in inc)
    ex, ivs, inc = computed["mixed"]
    unclean = {f"{e[3]}:{e[4]}" for e in ex.events if "unclean_election" in e[5]}
    assert unclean and unclean <= {p for i in inc for p in i["data_loss_partitions"]}
    assert all(end is not None for (_, _, kind, _), end in ivs.items() if kind == "recovering")
    assert {"broker_controlled_shutdown", "broker_fenced"} <= {i["cause"] for i in inc}


def _upsert(old: DataFrame, new: DataFrame, key: list[str]) -> DataFrame:
    return old.join(new.select(*key), key, "left_anti").unionByName(new)


@pytest.mark.parametrize("case", ["mixed", "real"])
def test_two_increments_equal_one_pass(spark, scenario_lakes, computed, case) -> None:
    """First increment: the log before offset X (timeline states current at X still open).
    Second: the states from X on plus the states they closed, the open intervals, the open
    incident and the events from its start; results upserted on the tables' keys."""
    _, lake = scenario_lakes[case]
    t = _tables(spark, lake)
    tl, cfg, brk, ev, topics = t.values()
    x = tl.agg(F.percentile_approx("valid_from_offset", 0.5)).first()[0]
    cut = F.col("valid_to_offset") >= x
    tl1 = (tl.filter(F.col("valid_from_offset") < x)
           .withColumn("valid_to_ts", F.when(~cut, F.col("valid_to_ts")))
           .withColumn("valid_to_offset", F.when(~cut, F.col("valid_to_offset"))))
    iv1, inc1 = from_tables(tl1, cfg.filter(F.col("offset") < x), brk.filter(
        F.col("offset") < x), ev.filter(F.col("offset") < x), topics)
    iv1, inc1 = iv1.cache(), inc1.cache()
    open_iv = iv1.filter(F.col("end_offset").isNull())
    tl2 = tl.filter((F.col("valid_from_offset") >= x) | cut)
    iv2 = intervals(tl2, cfg, open_intervals=open_iv, topic_names=topics).cache()
    open_inc = inc1.filter(F.col("end_offset").isNull())
    since = open_inc.agg(F.min("start_offset")).first()[0]
    outages = with_same_write_start(broker_outages(brk), ev).filter(
        (F.col("start_offset") >= x) | F.col("end_offset").isNull() | (F.col("end_offset") >= x))
    troubles = _upsert(open_iv, iv2, INTERVAL_KEY)
    inc2 = incidents(troubles, outages, ev.filter(F.col("offset") >= min(x, since or x)),
                     open_incident=open_inc if since is not None else None, since_offset=x)
    ivs = _interval_map(_upsert(iv1, iv2, INTERVAL_KEY))
    incs = _incident_rows(_upsert(inc1, inc2, ["cluster_id", "incident_id"]))
    for df in (iv1, inc1, iv2):  # the worker's session runs other modules' tests next
        df.unpersist()
    _, full_iv, full_inc = computed[case]
    assert ivs == full_iv
    assert incs == full_inc
