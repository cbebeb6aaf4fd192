"""kraftlake installs like a library: its wheel carries every file it reads at run time, and
the installed package runs the demo from a directory that is not the checkout, as a user
runs it (a subprocess).

What the demo prints is checked against the simulator's labels: the same seed and options
simulated in-process give byte-identical labels, so its event counts, unclean elections,
partitions still RECOVERING and ground-truth line can be compared with labels.jsonl without
trusting the demo's own comparison.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import zipfile
from collections import Counter
from pathlib import Path

from kraftlake import EVENT_TYPES, read_labels, simulate_cluster
from kraftlake.spark import SHORT_JOB_JVM_OPTIONS
from tests.conftest import REPO, launch_command

ARGS = ["--scenario", "mixed", "--seed", "1", "--hours", "1"]


def test_the_installed_wheel_runs_the_demo_and_it_prints_the_labels(tmp_path: Path) -> None:
    dist = tmp_path / "dist"
    subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation",
                    "-q", "-w", str(dist), str(REPO)], check=True, timeout=600)
    (wheel,) = dist.glob("kraftlake-*.whl")
    names = set(zipfile.ZipFile(wheel).namelist())
    for needed in ("kraftlake/conf/kraftlake.yaml",
                   "kraftlake/schemas/redaction.json",
                   "kraftlake/schemas/records/PartitionChangeRecord.json",
                   "kraftlake/schemas/tables/partition_events.json",
                   "kraftlake/expectations/partition_timeline.json",
                   "kraftlake/jvm/delta.pom.xml", "kraftlake/jvm/S3ConditionalLogStore.java",
                   "kraftlake/jvm/S3CheckpointFileManager.java",
                   "kraftlake/py.typed",
                   "kraftlake/quality/datadocs_static/fontawesome-free@6.6.0/webfonts/"
                   "fa-solid-900.woff2"):
        assert needed in names, needed

    # installed without the checkout on the path (its dependencies are this venv's)
    site = tmp_path / "site"
    subprocess.run([sys.executable, "-m", "pip", "install", "--no-deps", "-q", "--target",
                    str(site), str(wheel)], check=True, timeout=600)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    # TMPDIR: the demo's simulated cluster goes to a new temp dir; keep it inside tmp_path
    state = tmp_path / "state"
    env = {**os.environ, "PYTHONPATH": str(site), "COLUMNS": "200", "TMPDIR": str(tmp_path),
           "KRAFTLAKE_STATE_DIR": str(state), "SPARK_PRINT_LAUNCH_COMMAND": "1"}
    env.pop("KRAFTLAKE_CONF", None)
    where = subprocess.run([sys.executable, "-c", "import kraftlake; print(kraftlake.__file__)"],
                           cwd=elsewhere, env=env, capture_output=True, text=True, check=True)
    assert where.stdout.startswith(str(site)), where.stdout
    proc = subprocess.run([sys.executable, "-m", "kraftlake", "demo", *ARGS, "--lake", "lake"],
                          cwd=elsewhere, env=env, capture_output=True, text=True, timeout=900,
                          check=False)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert (elsewhere / "lake" / "partition_events" / "_delta_log").is_dir()
    # a small log: the demo's JVM is a short job's, as `kraftlake ingest` of it would be
    java = launch_command(state)
    assert all(o in java.split() for o in SHORT_JOB_JVM_OPTIONS), java
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
