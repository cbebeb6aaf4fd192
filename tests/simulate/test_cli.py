"""`kraftlake simulate` end to end through click."""

from __future__ import annotations

import json

from click.testing import CliRunner

from kraftlake.cli import main


def test_simulate_command(tmp_path):
    out = tmp_path / "sim"
    res = CliRunner().invoke(main, ["simulate", "--out", str(out), "--scenario",
                                    "unclean-election", "--seed", "3", "--hours", "1",
                                    "--brokers", "4", "--topics", "3", "--partitions", "2",
                                    "--replication-factor", "2", "--metadata-version",
                                    "3.7-IV2"])
    assert res.exit_code == 0, res.output
    summary = json.loads((out / "simulation.json").read_text())
    assert summary["metadata_version"] == 17 and summary["brokers"] == 4
    assert (out / "__cluster_metadata-0" / "00000000000000000000.log").is_file()
    assert (out / "labels.jsonl").is_file() and (out / "final_state.json").is_file()
    again = CliRunner().invoke(main, ["simulate", "--out", str(out), "--scenario", "quiet"])
    assert again.exit_code != 0 and "exists" in again.output


def test_simulate_rejects_elr_below_4_0(tmp_path):
    res = CliRunner().invoke(main, ["simulate", "--out", str(tmp_path / "x"), "--scenario",
                                    "quiet", "--hours", "0.1", "--elr",
                                    "--metadata-version", "3.9-IV0"])
    assert res.exit_code != 0 and "ELR" in res.output
