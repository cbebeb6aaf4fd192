"""kafka-dump-log text as a batch ingest source.

A real segment rendered the way `kafka-dump-log.sh --cluster-metadata-decoder` (4.1) prints
it must give exactly the tables the binary segment gives; the hand-written excerpts go
through the CLI, which insists on --cluster-id for text (a dump carries none).
"""

from __future__ import annotations

from pathlib import Path

from click.testing import CliRunner

from kraftlake.codec.logfiles import classify
from kraftlake.jobs.batch import ingest
from kraftlake.lake.delta import Lake
from tests.codec.dumplog_render import render_file
from tests.lake_rows import table_dicts, table_rows
from tests.lakes import TABLES
from tests.logs import NOMAN, GrowingLog

DATA = Path(__file__).resolve().parents[1] / "data" / "dumplog"


def test_rendered_dump_equals_binary_ingest(spark, tmp_path, cfg_factory):
    cid = "dump-test"
    log = GrowingLog(tmp_path / "kafka", NOMAN / "00000000000000000000.log", cid)
    last = max(i for i, b in enumerate(log.batches) if b.base_offset < 1200)
    log.write(0, last + 1)
    seg = log.dir / "00000000000000000000.log"
    text = tmp_path / "dump.txt"
    text.write_text("\n".join(render_file(classify(seg), "4.1")) + "\n")

    tcfg = cfg_factory(tmp_path / "text", cluster_id=cid)
    (res,) = ingest(spark, tcfg, [text])
    assert res.quarantined == 0 and res.records > 0
    blake = Lake(tmp_path / "bin")
    ingest(spark, cfg_factory(blake.root), [log.dir])
    tlake = Lake(tcfg.lake)
    for name in TABLES:
        assert table_rows(tlake, name) == table_rows(blake, name), name
    before = {n: tlake.version(n) for n in TABLES}
    (again,) = ingest(spark, tcfg, [text])
    assert again.version == -1  # re-running on the same text adds nothing
    assert {n: tlake.version(n) for n in TABLES} == before


def test_cli_ingests_dump_excerpt_and_requires_cluster_id(spark, tmp_path):
    from kraftlake.cli import main

    src = DATA / "kafka-3.9-excerpt.txt"
    lake = tmp_path / "lake"
    out = CliRunner().invoke(main, ["ingest", str(src), "--lake", str(lake),
                                    "--master", "local[2]"])
    assert out.exit_code == 2 and "--cluster-id" in out.output, out.output
    out = CliRunner().invoke(main, ["ingest", str(src), "--lake", str(lake), "--cluster-id",
                                    "excerpt", "--master", "local[2]"])
    assert out.exit_code == 0, out.output
    recs = sorted(table_dicts(Lake(lake).path("records")), key=lambda r: r["offset"])
    assert [r["offset"] for r in recs] == list(range(9))
    scram = next(r for r in recs if r["record_type"] == "UserScramCredentialRecord")
    assert "c2F" not in (scram["data"] or "")  # the salt printed in the dump is redacted
