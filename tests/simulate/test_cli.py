"""`kraftlake simulate` end to end through click."""

from __future__ import annotations

import hashlib
import json

from click.testing import CliRunner

from kraftlake import simulate_cluster
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


def _digest(out):
    return {str(p.relative_to(out)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(out.rglob("*")) if p.is_file()}


def test_the_demo_simulates_exactly_what_kraftlake_simulate_writes(tmp_path):
    """`kraftlake demo` (ELR on unless --no-elr) calls `simulate_cluster`, as the command
    does: the same scenario, seed and hours give the same bytes, so a demo's labels can be
    reproduced with `kraftlake simulate` (whose ELR default at the latest level is on, as
    Kafka formats a 4.1 cluster)."""
    args = ["--scenario", "elr", "--seed", "1", "--hours", "0.25"]
    res = CliRunner().invoke(main, ["simulate", "--out", str(tmp_path / "cli"), *args])
    assert res.exit_code == 0, res.output
    simulate_cluster(tmp_path / "demo", "elr", seed=1, hours=0.25, elr=True)
    cli = _digest(tmp_path / "cli")
    assert "labels.jsonl" in cli and cli == _digest(tmp_path / "demo")
    off = CliRunner().invoke(main, ["simulate", "--out", str(tmp_path / "off"), *args,
                                    "--no-elr"])
    assert off.exit_code == 0, off.output
    assert _digest(tmp_path / "off")["labels.jsonl"] != cli["labels.jsonl"]
