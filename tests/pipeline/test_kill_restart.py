"""Exactly once for real: `kraftlake stream --available-now` in a subprocess, SIGKILLed at
random instants (at least three times), restarted until it completes; the lake must then
equal one clean batch ingest of the same input.

The whole process group is killed (the Python driver and its Spark JVM), which is what
`kill -9` of a job does. Kills are placed after the job announced it is streaming, at a
random delay (seeded, and printed on failure), so they land inside micro-batches: between
Delta commits of one increment, or inside one.

No column is ignored in the comparison: no table written here holds an ingest time or other
run-dependent value (the timestamps are the controller's, from the log).
"""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from kraftlake.jobs.batch import ingest
from kraftlake.lake.delta import Lake
from tests.pipeline.test_stream_tail import NOMAN, GrowingLog, rows

TABLES = ["records", "partition_changes", "partition_timeline", "partition_events",
          "partition_current", "quarantine", "topics", "brokers", "configs",
          "snapshot_reconciliation"]
CONF = """spark:
  master: local[2]
  conf:
    spark.ui.enabled: "false"
    spark.sql.shuffle.partitions: "2"
    spark.default.parallelism: "2"
    spark.sql.session.timeZone: UTC
    spark.driver.memory: 1g
    spark.ui.showConsoleProgress: "false"
"""


def _start(log_dir: Path, lake: Path, conf: Path, out: Path) -> subprocess.Popen:
    env = {**os.environ, "PYSPARK_PYTHON": sys.executable, "PYSPARK_DRIVER_PYTHON":
           sys.executable, "COLUMNS": "200"}
    cmd = [sys.executable, "-m", "kraftlake", "stream", str(log_dir), "--lake", str(lake),
           "--available-now", "--max-offsets", "400", "--master", "local[2]",
           "--conf", str(conf)]
    fh = open(out, "ab")  # noqa: SIM115 - closed by the child's exit; kept for the report
    return subprocess.Popen(cmd, stdout=fh, stderr=subprocess.STDOUT, env=env,
                            start_new_session=True)


def _wait_started(p: subprocess.Popen, out: Path, timeout: float = 180) -> None:
    """Until the job says it is streaming (or has already exited)."""
    deadline = time.time() + timeout
    while time.time() < deadline and p.poll() is None:
        if b"streaming" in out.read_bytes():
            return
        time.sleep(0.2)


@pytest.mark.slow  # about 6 minutes on two shared cores: every restart starts a JVM
def test_sigkill_at_random_instants_then_restart_equals_one_batch_run(
        spark, tmp_path, cfg_factory):
    log = GrowingLog(tmp_path / "kafka", NOMAN / "00000000000000000000.log", "kill-test")
    last = max(i for i, b in enumerate(log.batches) if b.base_offset < 1200)
    end = log.write(0, last + 1)
    lake = tmp_path / "lake"
    conf = tmp_path / "conf.yaml"
    conf.write_text(CONF)
    seed = int(os.environ.get("KILL_SEED", random.randrange(1 << 30)))
    rng = random.Random(seed)
    kills: list[float] = []  # delays (s) after "streaming" at which a SIGKILL landed
    runs = 0
    while True:
        runs += 1
        out = tmp_path / f"run{runs}.out"
        out.write_bytes(b"")
        p = _start(log.dir, lake, conf, out)
        if len(kills) < 3:
            _wait_started(p, out)
            delay = rng.uniform(0.5, 30.0)
            try:
                p.wait(timeout=delay)
            except subprocess.TimeoutExpired:
                os.killpg(p.pid, signal.SIGKILL)  # the driver and its JVM, as kill -9 of a job
                p.wait()
                kills.append(round(delay, 1))
                continue
        else:
            p.wait(timeout=600)
        assert p.returncode == 0, f"seed {seed}, run {runs}: {out.read_text()[-3000:]}"
        break  # completed (before a kill landed, if fewer than 3 kills: checked below)
    assert len([k for k in kills if k >= 0]) >= 3, f"seed {seed}: kills {kills}"

    clean = tmp_path / "clean"
    ingest(spark, cfg_factory(clean), [log.dir])
    slake, blake = Lake(lake), Lake(clean)
    for name in TABLES:
        assert rows(spark, slake, name) == rows(spark, blake, name), \
            f"{name} differs (seed {seed}, kills after {kills} s)"
    recs = slake.read(spark, "records")
    assert recs.count() == recs.select("offset").distinct().count() == end
