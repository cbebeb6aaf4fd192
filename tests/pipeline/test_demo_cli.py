"""`kraftlake demo` end to end as a user runs it (a subprocess), checked against the labels.

The same seed and options simulated in-process give byte-identical labels, so what the demo
prints (event counts, unclean elections, partitions still RECOVERING, the ground-truth line)
can be compared with labels.jsonl without trusting the demo's own comparison.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from collections import Counter
from pathlib import Path

from kraftlake.cli.demo import EVENT_TYPES, read_labels, simulate_cluster

ARGS = ["--scenario", "mixed", "--seed", "1", "--hours", "1"]


def test_demo_prints_the_labelled_incidents(tmp_path: Path) -> None:
    # TMPDIR: the demo's simulated cluster goes to a new temp dir; keep it inside tmp_path
    env = {**os.environ, "PYSPARK_PYTHON": sys.executable, "TMPDIR": str(tmp_path)}
    proc = subprocess.run(
        [sys.executable, "-m", "kraftlake", "demo", *ARGS, "--lake", str(tmp_path / "lake"),
         "--master", "local[2]"], capture_output=True, text=True, env=env, timeout=600,
        cwd=Path(__file__).resolve().parents[2])
    assert proc.returncode == 0, proc.stderr[-3000:]
    out = proc.stdout

    simulate_cluster(tmp_path / "truth", "mixed", seed=1, hours=1.0, elr=True)
    labels = read_labels(tmp_path / "truth")
    want = Counter(e for x in labels for e in x["events"])
    assert want["unclean_election"] and want["recovery_completed"] and want["elr_change"]

    # the "All events" table: one row per type with its count
    got = {m[1]: int(m[2]) for m in re.finditer(r"│ (\w+)\s+│\s+(\d+) │\s+\d+ │", out)}
    assert got == {t: want[t] for t in EVENT_TYPES}
    n = sum(want.values())
    assert f"ground truth: {n} events == {n} labelled events (labels.jsonl): exact match" in out
    assert re.search(rf"Unclean leader elections: {want['unclean_election']} on \d+ partitions",
                     out)

    # partitions whose last unclean election has no later recovery are listed by name
    last_unclean: dict[tuple[str, int], tuple[int, str]] = {}
    last_rec: dict[tuple[str, int], int] = {}
    for x in labels:
        k = (x["topic_id"], x["partition_id"])
        if "unclean_election" in x["events"]:
            last_unclean[k] = (x["offset"], f"{x['topic_name']}:{x['partition_id']}")
        if "recovery_completed" in x["events"]:
            last_rec[k] = x["offset"]
    stuck = {name for k, (off, name) in last_unclean.items() if last_rec.get(k, -1) < off}
    printed = set(re.findall(r"still RECOVERING: (\S+) \(", out))
    assert printed == stuck
    # the incident table: each row's offset range starts and ends at labelled unclean
    # elections, and together the ranges cover every labelled one
    offs = {x["offset"] for x in labels if "unclean_election" in x["events"]}
    section = out[out.index("Unclean leader elections"):out.index("Eligible leader")]
    ranges = [(int(a), int(b or a)) for a, b in re.findall(
        r"│ [\w.-]+:\d+(?:, [\w.-]+:\d+)*(?: \(\+\d+\))?\s+│ (\d+)(?:-(\d+))?\s+│", section)]
    assert ranges and all(a in offs and b in offs for a, b in ranges)
    assert all(any(a <= o <= b for a, b in ranges) for o in offs)
