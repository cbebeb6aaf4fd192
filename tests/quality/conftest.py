"""Fixtures of the quality tests: one GX context, lakes built once (the SparkSession is
tests/conftest.py's).

Lakes from real logs are built by the pipeline's own batch ingest (the code behind
`kraftlake ingest`) in this session. By default one real fixture and one simulator scenario
are ingested (ingest dominates the run time); KRAFTLAKE_QUALITY_ALL_REAL=1 adds the real
fixtures of `REAL_MORE` (a Kafka 4.1 cluster restarted many times, a log whose single-replica
partition stays RECOVERING).
"""

from __future__ import annotations

import os
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pyarrow as pa
import pytest
from click.testing import CliRunner

from kraftlake.cli import main
from kraftlake.config import load_config
from kraftlake.lake.delta import Lake
from kraftlake.quality.derive import INPUTS
from kraftlake.quality.results import Outcome, QualityRun
from kraftlake.quality.runner import QualityContext, run_quality
from kraftlake.quality.suites import SUITES
from tests.conftest import real
from tests.quality import crafted

REAL_DEFAULT = ["nomanazeem__Kafka-java/kafka-logs"]
REAL_MORE = ["ogs59__docker-compose-kafka4.10/data/kafka-1",
             "IndusWargods__local-test-rig/kafka-data"]
# Both nomanazeem and IndusWargods ran the apache/kafka Docker image's default cluster id
# (5L6g3nShT-eMCtK--X86sw): two different clusters under one id. In one lake that is one
# cluster with two diverging logs, which offsets_contiguous rightly rejects; give one its own.
CLUSTER_IDS = {"IndusWargods__local-test-rig/kafka-data": "IndusWargods-local-test-rig"}
SIM = {"scenario": "unclean-election", "seed": 1}
# Reference time and allowed age that make freshness pass on historical logs; the
# freshness test itself uses a short allowed age.
LONG_AGO = 20 * 365 * 24 * 3600.0


@pytest.fixture(scope="session")
def qctx() -> QualityContext:
    return QualityContext()


def real_sources() -> list[tuple[Path, str | None]]:
    names = REAL_DEFAULT + (REAL_MORE if os.environ.get("KRAFTLAKE_QUALITY_ALL_REAL") else [])
    return [(real(n), CLUSTER_IDS.get(n)) for n in names]


@pytest.fixture(scope="session")
def sim_dir(tmp_path_factory) -> Path:
    from kraftlake.simulate.cluster import SimConfig
    from kraftlake.simulate.scenarios import DEFAULTS, Params, simulate

    out = tmp_path_factory.mktemp("sim") / SIM["scenario"]
    d = dict(DEFAULTS.get(SIM["scenario"], {}))
    params = Params(hours=1.0, brokers=4, topics=3, partitions=3, replication_factor=3)
    cfg = SimConfig(out=out, seed=SIM["seed"], brokers=params.brokers,
                    elr=d.get("elr", False), txn_threshold=d.get("txn_threshold", 10_000))
    simulate(SIM["scenario"], cfg, params)
    return out


@pytest.fixture(scope="session")
def bronze_of(spark, tmp_path_factory) -> Callable[[str | None], pa.Table]:
    """brk -> the `records` rows of `crafted.write_log(brk)` as the ingest's bronze step
    decodes them (`crafted.bronze`), decoded once for the package: the good log and the
    `bad_lrs` one are read by test_broken_records.py and test_record_checks.py both, and
    each decode is a Spark job through the Python data source."""
    decoded: dict[str | None, pa.Table] = {}

    def get(brk: str | None) -> pa.Table:
        if brk not in decoded:
            log = crafted.write_log(tmp_path_factory.mktemp(f"log-{brk}"), brk)
            decoded[brk] = crafted.bronze(spark, log)
        return decoded[brk]

    return get


@pytest.fixture(scope="session")
def real_lake(spark, tmp_path_factory, sim_dir) -> Lake:
    """A lake with the real fixture(s) and the simulated cluster, one cluster each."""
    from kraftlake.jobs.batch import ingest

    root = tmp_path_factory.mktemp("lake") / "lake"
    cfg = load_config(lake=str(root))
    for src, cid in [*real_sources(), (sim_dir, None)]:
        assert src.is_dir(), src
        ingest(spark, cfg, [src], cluster_id=cid)
    return Lake(root)


@pytest.fixture(scope="session")
def good_run(spark, real_lake, tmp_path_factory):
    """`kraftlake quality --lake <real lake> --report DIR` (all suites; freshness, a warning,
    is the only failure): (CLI result, report directory)."""
    report = tmp_path_factory.mktemp("report_good")
    res = CliRunner().invoke(main, ["quality", "--lake", str(real_lake.root),
                                    "--report", str(report)])
    return res, report


@pytest.fixture(scope="session")
def pristine(real_lake, tmp_path_factory) -> Path:
    """The tables the silver/gold suites read, copied from the real lake once; the broken
    lakes (`broken_run`, test_broken_tables.py's cases) are file copies of it with one
    table edited (`crafted.edited_copy`), where a `copy_lake` of their own read and wrote
    every table again."""
    root = tmp_path_factory.mktemp("pristine") / "lake"
    crafted.copy_lake(real_lake, root)
    return root


@pytest.fixture(scope="session")
def broken_run(spark, pristine, tmp_path_factory):
    """The same command on a copy of the lake where one timeline state has leader 9999 (an
    error-severity failure): (CLI result, report directory, lake)."""
    root = tmp_path_factory.mktemp("broken")

    def edit(t):
        i = crafted.find_row(t, lambda r: r["valid_to_offset"] is not None)
        return crafted.set_cell(t, i, "leader", 9999)

    lake = crafted.edited_copy(pristine, root / "lake", {"partition_timeline": edit})
    report = root / "report"
    res = CliRunner().invoke(main, ["quality", "--lake", str(lake.root), "--report",
                                    str(report), "--suite", "partition_timeline"])
    return res, report, lake


def validate(spark, qctx: QualityContext, lake: Lake, suites: list[str] | None = None, *,
             now: datetime | None = None, max_age: float = LONG_AGO,
             report_dir: Path | None = None) -> QualityRun:
    return run_quality(spark, lake, suites=suites, now=now or datetime.now(UTC),
                       max_age_seconds=max_age, qctx=qctx, report_dir=report_dir,
                       write_results=False)


def affected(tables: list[str]) -> list[str]:
    """Suites whose frame reads one of `tables` (the others cannot change)."""
    return [s for s in SUITES if set(INPUTS[s]) & set(tables)]


def assert_only_failure(run: QualityRun, suite: str, name: str) -> Outcome:
    """Exactly one expectation failed, and it is `suite.name`; returns its outcome."""
    failed = [(o.suite, o.expectation) for o in run.failed]
    assert failed == [(suite, name)], f"expected only {suite}.{name} to fail, got {failed}"
    assert all(o.exception is None for o in run.outcomes), [
        (o.expectation, o.exception) for o in run.outcomes if o.exception]
    return run.failed[0]


CRAFTED_NOW = datetime(2023, 11, 14, 23, 0, tzinfo=UTC)  # 47 minutes after crafted.T0
ONE_DAY = timedelta(days=1).total_seconds()
