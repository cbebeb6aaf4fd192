"""Nothing to do costs no JVM (jobs/resume.py, lake/deltalog.py): `kraftlake ingest` of a log
that holds nothing new, `upgrade` of a lake in this layout and `timeline` asking which
cluster answer from the Delta logs and the log's batch headers, as commands in processes
whose JAVA_HOME names no Java and that leave no Spark log. And what must still reach Spark
does: a grown log is ingested, a diverged tail refused, an open increment finished. The
delta-rs reader reads `ingest_progress` as Spark does, after a checkpoint and a compaction
too. On copies of `busy_runs` (the real BUSY log ingested by two scheduled runs)."""

from __future__ import annotations

import json
import os
import struct
import subprocess
import sys
from pathlib import Path

import pyarrow as pa
import pytest
from click.testing import CliRunner

from kraftlake.cli import main
from kraftlake.config import load_config
from kraftlake.jobs import increment
from kraftlake.jobs.batch import ingest
from kraftlake.jobs.inputs import find_inputs
from kraftlake.jobs.resume import nothing_new, plan_file
from kraftlake.lake.apps import app_id_for
from kraftlake.lake.delta import Lake
from kraftlake.lake.deltalog import LakeLog
from kraftlake.lake.maintain import maintain
from kraftlake.lake.schema import table_names, table_rows
from tests.conftest import cli_env
from tests.logs import BUSY, BUSY_CUTS, growing_copy


def _log(dest: Path, whole: bool = False) -> tuple[Path, Path, bytes, list]:
    """A copy of BUSY as the last of `busy_runs` saw it (what its lake holds), or whole."""
    log, seg, full, batches = growing_copy(BUSY, dest)
    if not whole:
        seg.write_bytes(full[:batches[BUSY_CUTS[-1]].position])
    return log, seg, full, batches


def _no_jvm(tmp: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """`kraftlake ARGS` in a process that cannot start a JVM (JAVA_HOME names no Java, no
    java on PATH); asserts it started none (no Spark log in its state directory)."""
    state = tmp / "state"
    out = subprocess.run([sys.executable, "-m", "kraftlake", *args], capture_output=True,
                         text=True, timeout=300, check=False, env=cli_env(
                             PATH=os.path.dirname(sys.executable),
                             JAVA_HOME=str(tmp / "no-java"), KRAFTLAKE_STATE_DIR=str(state)))
    assert not list((state / "logs").glob("spark-*.log")), out.stderr
    assert "JAVA_GATEWAY" not in out.stderr, out.stderr
    return out


def _commits(lake: Path) -> list[str]:
    return sorted(p.name for p in lake.glob("*/_delta_log/*.json"))


def test_an_unchanged_log_is_nothing_new_without_a_jvm(busy_runs, tmp_path: Path) -> None:
    lake = busy_runs.copy(tmp_path / "lake")
    log, *_ = _log(tmp_path / "log")
    cid = busy_runs.results[0].cluster_id
    before = _commits(lake)
    out = _no_jvm(tmp_path, "ingest", str(log), "--lake", str(lake))
    assert out.returncode == 0, out.stderr
    assert out.stderr == ""
    (row,) = [ln for ln in out.stdout.splitlines() if cid in ln]
    assert "nothing new" in row and str(log) in row
    # beside an input that is refused: the same table and exit status as the Spark path
    (tmp_path / "notes.txt").write_text("not a log\n")
    out = _no_jvm(tmp_path, "ingest", str(log), str(tmp_path / "notes.txt"), "--lake",
                  str(lake))
    assert out.returncode == 1, out.stderr
    assert "nothing new" in out.stdout and "refused" in out.stdout
    assert out.stderr.startswith("Error: refused ") and "notes.txt" in out.stderr
    assert _commits(lake) == before  # nothing written


def _spark_rows(lake: Lake) -> list[str]:
    rows = table_rows(lake.read(None, "ingest_progress").toArrow(), "ingest_progress")
    return sorted(map(repr, rows.to_pylist()))


def _same_as_spark(root: Path, lake: Lake, app_ids: list[str]) -> None:
    log = LakeLog(str(root))
    assert sorted(map(repr, log.progress_rows())) == _spark_rows(lake)
    assert log.clusters() == {r["cluster_id"] for r in log.progress_rows()}
    for name in table_names():
        dt = log.table(name)
        assert (None if dt is None else dt.version()) == lake.version(name), name
        assert log.layout_problem(name) is None
        txns = lake.transactions(name)[1]
        assert {a: log.transaction(name, a) for a in app_ids} == \
            {a: txns.get(a) for a in app_ids}, name


def test_the_reader_reads_ingest_progress_as_spark_does(spark, busy_runs,
                                                        tmp_path: Path) -> None:
    """Two clusters' rows, the second's in 21 commits of delta-spark's own appends (a
    checkpoint at version 20, `delta.checkpointInterval`), then compacted (`remove`
    actions of every file the checkpoint and the commits added)."""
    root = busy_runs.copy(tmp_path / "lake")
    lake = Lake(root, spark)
    cid = busy_runs.results[0].cluster_id
    apps = [app_id_for(c, k) for c in (cid, "other") for k in ("ingest", "stream")]
    _same_as_spark(root, lake, apps)
    rows = lake.read(None, "ingest_progress").toArrow().slice(0, 1)
    for v in range(21):
        one = rows.set_column(0, "cluster_id", pa.array(["other"])).set_column(
            1, "app_id", pa.array([app_id_for("other")])).set_column(
            2, "version", pa.array([v], pa.int64()))
        lake.append("ingest_progress", one, app_id_for("other"), v)
    log_dir = root / "ingest_progress" / "_delta_log"
    assert (log_dir / f"{22:020d}.json").exists()
    assert list(log_dir.glob("*.checkpoint.parquet")), "no checkpoint written"
    _same_as_spark(root, lake, apps)
    (done,) = maintain(lake, ["ingest_progress"], compact=True, vacuum=False)
    assert done.error is None and done.files_after < done.files_before
    last = sorted(log_dir.glob("*.json"))[-1].read_text()
    assert '"remove"' in last
    _same_as_spark(root, lake, apps)


def test_a_grown_log_is_ingested_by_spark(spark, busy_runs, tmp_path: Path) -> None:
    lake = busy_runs.copy(tmp_path / "lake")
    log, _seg, _full, batches = _log(tmp_path / "log", whole=True)
    cfg = load_config(lake=lake)
    assert nothing_new(cfg, find_inputs([log], None, cfg)) is None
    out = CliRunner().invoke(main, ["ingest", str(log), "--lake", str(lake)])
    assert out.exit_code == 0, out.output
    start = batches[BUSY_CUTS[-1]].base_offset
    assert f"{start}..{batches[-1].last_offset + 1}" in out.output
    assert "nothing new" not in out.output


def test_a_diverged_tail_is_still_refused(spark, busy_runs, tmp_path: Path) -> None:
    """The last batch the lake holds, its leader epoch changed (outside what the CRC
    covers, so the batch is valid): its header no longer proves the tail, Spark compares
    the records and refuses the log."""
    lake = busy_runs.copy(tmp_path / "lake")
    log, seg, _full, batches = _log(tmp_path / "log")
    last = batches[BUSY_CUTS[-1] - 1]
    data = bytearray(seg.read_bytes())
    (epoch,) = struct.unpack_from(">i", data, last.position + 12)
    struct.pack_into(">i", data, last.position + 12, epoch + 1)
    seg.write_bytes(bytes(data))
    cfg = load_config(lake=lake)
    assert nothing_new(cfg, find_inputs([log], None, cfg)) is None
    out = CliRunner().invoke(main, ["ingest", str(log), "--lake", str(lake)])
    assert out.exit_code == 1, out.output
    assert "refused" in out.output and "differs from what the lake ingested" in \
        " ".join(out.output.split())
    diverged = Lake(lake).read_arrow("quarantine", "kind = 'diverged'")
    assert diverged.num_rows == 1


def test_an_open_increment_is_never_nothing_new(busy_runs, tmp_path: Path) -> None:
    """A plan of the next version of either job kind (what a killed run leaves) leaves the
    unchanged log to Spark, which finishes that increment first."""
    lake = busy_runs.copy(tmp_path / "lake")
    log, *_ = _log(tmp_path / "log")
    cfg = load_config(lake=lake)
    inputs = find_inputs([log], None, cfg)
    assert nothing_new(cfg, inputs) is not None
    cid = busy_runs.results[0].cluster_id
    for kind, version in (("ingest", len(busy_runs.results)), ("stream", 0)):
        plan = Path(plan_file(str(lake), app_id_for(cid, kind), version))
        plan.parent.mkdir(parents=True, exist_ok=True)
        plan.write_text(json.dumps({"start": {}, "end": {}}))
        assert nothing_new(cfg, inputs) is None, kind
        plan.unlink()


def test_a_killed_ingest_is_finished(spark, busy_runs, tmp_path: Path) -> None:
    lake = busy_runs.copy(tmp_path / "lake")
    log, _seg, _full, batches = _log(tmp_path / "log", whole=True)
    cfg = load_config(lake=lake)
    increment.FAIL_AFTER = "records"
    try:
        with pytest.raises(increment.InjectedFailure):
            ingest(spark, cfg, [log])
    finally:
        increment.FAIL_AFTER = None
    assert nothing_new(cfg, find_inputs([log], None, cfg)) is None
    out = CliRunner().invoke(main, ["ingest", str(log), "--lake", str(lake)])
    assert out.exit_code == 0, out.output
    assert f"{batches[BUSY_CUTS[-1]].base_offset}..{batches[-1].last_offset + 1}" in out.output
    again = CliRunner().invoke(main, ["ingest", str(log), "--lake", str(lake)])
    assert again.exit_code == 0 and "nothing new" in again.output, again.output


def test_upgrade_and_timeline_answer_without_a_jvm(spark, busy_runs, tmp_path: Path) -> None:
    """A lake of two clusters with the same partitions (the log ingested again under
    another cluster id): `upgrade` finds it current, `timeline` without --cluster-id asks
    which cluster, or says the partition has no rows, all without a JVM."""
    lake = busy_runs.copy(tmp_path / "lake")
    log, *_ = _log(tmp_path / "log")
    cid = busy_runs.results[0].cluster_id
    ingest(spark, load_config(lake=lake), [log], cluster_id="other")
    out = _no_jvm(tmp_path, "upgrade", "--lake", str(lake))
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == f"{lake} is in this version's layout already: nothing to do"
    states = LakeLog(str(lake)).rows("partition_timeline", ["topic_name", "partition_id"])
    topic, partition = states["topic_name"][0].as_py(), states["partition_id"][0].as_py()
    ids = ", ".join(sorted([cid, "other"]))
    # several times: reading the rows through Arrow's threads aborted such processes at exit
    # now and then (SIGABRT, "terminate called without an active exception"; about one in
    # 30 under load while Parquet's pre-buffering was on: `deltalog.LakeLog.rows`)
    for _ in range(6):
        out = _no_jvm(tmp_path, "timeline", "--lake", str(lake), "--topic", topic,
                      "--partition", str(partition))
        assert out.returncode == 2, out.stderr
        assert out.stderr.strip() == (f"Error: {topic}-{partition} is in 2 clusters of the "
                                      f"lake; choose one with --cluster-id: {ids}")
    out = _no_jvm(tmp_path, "timeline", "--lake", str(lake), "--topic", "nope",
                  "--partition", "0")
    assert out.returncode == 2, out.stderr
    assert out.stderr.strip() == "Error: no timeline rows for nope-0"
