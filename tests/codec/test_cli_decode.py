"""`kraftlake decode` on real logs, as a user runs it (a real subprocess, real files)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from tests.conftest import real

LOG_DIR = real("ogs59__docker-compose-kafka4.10/data/kafka-1/__cluster_metadata-0")


def kraftlake(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "kraftlake", *args], capture_output=True,
                          text=True, timeout=120, check=False)


def test_count_of_a_real_three_broker_log_matches_inventory() -> None:
    out = kraftlake("decode", str(LOG_DIR), "--count")
    assert out.returncode == 0, out.stderr
    counts = dict(line.rsplit(None, 1) for line in out.stdout.splitlines())
    counts = {k.strip(): int(v.replace(",", "")) for k, v in counts.items()}
    assert counts["NoOpRecord"] == 31393 and counts["PartitionChangeRecord"] == 298
    assert counts["RegisterBrokerRecord"] == 39 and counts["total"] == 31933


def test_jsonl_has_the_documented_keys_in_log_order() -> None:
    out = kraftlake("decode", str(LOG_DIR / "00000000000000000000.log"), "--jsonl")
    assert out.returncode == 0, out.stderr
    rows = [json.loads(line) for line in out.stdout.splitlines()]
    assert len(rows) == 31933
    assert [r["offset"] for r in rows] == list(range(31933))
    assert set(rows[0]) == {"offset", "timestamp", "epoch", "control", "type", "version", "data"}
    pcr = next(r for r in rows if r["type"] == "PartitionChangeRecord")
    # a v1 record (MV 3.7-IV2+ without ELR): fields of its version only, absent tags as null
    assert pcr["version"] == 1
    assert set(pcr["data"]) == {"partition_id", "topic_id", "isr", "leader", "replicas",
                                "removing_replicas", "adding_replicas",
                                "leader_recovery_state", "directories"}
    assert pcr["data"]["leader_recovery_state"] in (-1, 0, 1)
    assert rows[0]["control"] is True and rows[0]["type"] == "LeaderChangeMessage"
    epochs = [r["epoch"] for r in rows]
    assert epochs == sorted(epochs)


def test_default_table_folds_noop_runs() -> None:
    out = kraftlake("decode", str(LOG_DIR))
    assert out.returncode == 0, out.stderr
    assert "NoOpRecord up to offset" in out.stdout
    assert out.stdout.count("\n") < 2000  # 31,933 records, but the heartbeat is folded
    assert "31,933 records" in out.stdout


def test_errors_are_one_line_without_traceback(tmp_path: Path) -> None:
    missing = kraftlake("decode", str(tmp_path / "nope.log"))
    assert missing.returncode == 2
    assert missing.stderr.strip() == f"Error: {tmp_path / 'nope.log'}: no such file or directory"
    text = tmp_path / "notes.txt"
    text.write_text("this is not a metadata log, just some notes\n" * 3)
    bad = kraftlake("decode", str(text))
    assert bad.returncode == 2 and "not a Kafka metadata log" in bad.stderr
    assert "Traceback" not in bad.stderr
    empty_dir = tmp_path / "empty"
    empty_dir.mkdir()
    nodir = kraftlake("decode", str(empty_dir))
    assert nodir.returncode == 2 and "not a KRaft metadata-log directory" in nodir.stderr


def test_truncated_active_segment_decodes_up_to_the_last_complete_batch(tmp_path: Path) -> None:
    seg = tmp_path / "00000000000000000000.log"
    data = (LOG_DIR / "00000000000000000000.log").read_bytes()
    seg.write_bytes(data[: len(data) - 5])  # the last batch lacks its final 5 bytes
    out = kraftlake("decode", str(seg), "--count")
    assert out.returncode == 0
    assert "total" in out.stdout and "31,932" in out.stdout
    # the last segment's last batch still being written: said as `ingest` says it
    assert "from offset 31932 wait for the rest of their batch" in out.stderr
    assert "warning" not in out.stderr
