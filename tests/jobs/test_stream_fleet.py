"""One `kraftlake stream` process over a directory of clusters: a query per cluster in one
JVM, a cluster that appears later picked up, a cluster whose writes fail restarted with
backoff while the others go on, SIGTERM stopping them all, and the lake equal to a batch
ingest of every final log.

The logs grow batch by batch from real Kafka segments (`GrowingLog`); the failure is the
lake's own: where one cluster's `partition_current` partition directory goes, a file stands,
as an object store refusing writes under one prefix would, until it is removed.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import urllib.request
from pathlib import Path

import yaml

from kraftlake.config import Config
from kraftlake.jobs.inputs import expand_sources, find_inputs, watched
from kraftlake.lake.delta import Lake
from tests.conftest import SHORT_JOB_CONF
from tests.lake_rows import table_rows
from tests.lakes import TABLES, batch_lake, progress_end
from tests.logs import INDUS, NOMAN, OGS, GrowingLog
from tests.polling import wait_until
from tests.ports import free_port


def _segment(log_dir: Path) -> Path:
    return sorted(log_dir.glob("*.log"))[0]


def test_the_sources_a_stream_watches(tmp_path) -> None:
    """A pattern is what matches it now, a wildcard within one path segment; `@FILE` is what
    the file lists; a directory of log directories is watched, one log directory is not."""
    for name in ("x", "y"):
        GrowingLog(tmp_path / "fleet" / name, _segment(NOMAN), name).write(0, 1)
    (tmp_path / "fleet" / "notes.txt").write_text("not a cluster\n")
    pattern = f"{tmp_path}/fleet/*/__cluster_metadata-0"
    listed = tmp_path / "clusters.txt"
    listed.write_text(f"# the fleet\n\n{tmp_path / 'fleet' / 'y'}\n{pattern}\n")
    logs = [str(tmp_path / "fleet" / n / "__cluster_metadata-0") for n in ("x", "y")]
    assert expand_sources([pattern]) == logs
    assert expand_sources([f"{tmp_path}/*/__cluster_metadata-0"]) == []
    assert expand_sources([f"@{listed}", "z"]) == [str(tmp_path / "fleet" / "y"), *logs, "z"]
    def watches(*sources: str) -> bool:
        return watched(list(sources), find_inputs(expand_sources(list(sources)), None,
                                                  Config(lake=str(tmp_path / "lake"))))

    assert watches(str(tmp_path / "fleet")) and watches(pattern) and watches(*logs)
    assert not watches(logs[0])


def test_one_process_streams_a_directory_of_clusters(spark, tmp_path, cfg_factory) -> None:
    parent = tmp_path / "clusters"
    a = GrowingLog(parent / "a", _segment(INDUS), "fleet-a")
    b = GrowingLog(parent / "b", _segment(NOMAN), "fleet-b")  # its first partitions at 961
    ends = {"fleet-a": a.write(0, 150), "fleet-b": b.write(0, 900)}
    twin = GrowingLog(parent / "a2", _segment(INDUS), "fleet-a")  # another copy of a's log
    twin.write(0, 10)
    conf = tmp_path / "conf.yaml"  # a look for new clusters every second
    conf.write_text(yaml.safe_dump({"spark": {"conf": SHORT_JOB_CONF},
                                    "stream": {"discover_every": 1, "noop_every": 2}}))
    lake, port, out = Lake(str(tmp_path / "lake")), free_port(), tmp_path / "stream.out"
    env = {**os.environ, "PYSPARK_PYTHON": sys.executable, "COLUMNS": "200"}
    with open(out, "wb") as fh:
        proc = subprocess.Popen(
            [sys.executable, "-m", "kraftlake", "stream", str(parent), "--lake", lake.root,
             "--trigger", "1s", "--metrics-port", str(port), "--conf", str(conf),
             "--master", "local[2]"], stdout=fh, stderr=subprocess.STDOUT, env=env)

    def failed() -> str | None:
        return None if proc.poll() is None else f"the stream ended: {out.read_text()}"

    def reached(*clusters: str) -> bool:
        return all(progress_end(lake, c) == ends[c] for c in clusters)

    try:
        wait_until("both clusters' first batches", lambda: reached("fleet-a", "fleet-b"),
                   300, interval=0.5, failed=failed)
        # a cluster appears under the watched directory, its meta.properties last: named
        # once it is there without one, then picked up, no restart
        c = GrowingLog(tmp_path / "staging" / "c", _segment(OGS), "fleet-c")
        ends["fleet-c"] = c.write(0, 100)
        props = (tmp_path / "staging" / "c" / "meta.properties").read_text()
        (tmp_path / "staging" / "c" / "meta.properties").unlink()
        (tmp_path / "staging" / "c").rename(parent / "c")
        c.dir = parent / "c" / "__cluster_metadata-0"
        c.active = c.dir / c.active.name
        wait_until("the new directory named", lambda: "no meta.properties beside it" in
                   out.read_text(), 60, interval=0.5, failed=failed)
        (parent / "c" / "meta.properties").write_text(props)
        wait_until("the new cluster", lambda: reached("fleet-c"), 300, interval=0.5,
                   failed=failed)

        # fleet-b's lake partition refuses writes: its query fails and waits; a and c go on
        part = Path(lake.path("partition_current")) / "cluster_id=fleet-b"
        part.write_text("not a directory\n")
        b_before = ends["fleet-b"]
        b.write(900, 1000)
        ends["fleet-a"] = a.write(150, 300)
        ends["fleet-c"] = c.write(100, 200)
        wait_until("a and c past b's failure", lambda: reached("fleet-a", "fleet-c") and
                   "fleet-b: stream failed, restarting from its checkpoint" in out.read_text(),
                   300, interval=0.5, failed=failed)
        assert progress_end(lake, "fleet-b") == b_before
        part.unlink()
        ends["fleet-b"] = b.write(1000, 1100)
        wait_until("b after its restart", lambda: reached("fleet-b"), 300, interval=0.5,
                   failed=failed)
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10) as r:
            scraped = r.read().decode()
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(120)
    text = out.read_text()
    assert proc.returncode == 128 + signal.SIGTERM, text
    assert "Traceback" not in text and text.rstrip().endswith(
        "stopped by SIGTERM; the next start resumes from the last complete micro-batch"), text
    for cid in ends:
        assert f"({cid}) into {lake.root}" in text, text
    assert f"{parent / 'a2' / '__cluster_metadata-0'}: cluster fleet-a is streamed from " \
           f"{a.dir} already; skipped" in text, text
    assert 'kraftlake_stream_failures_total{cluster_id="fleet-a"} 0.0' in scraped
    assert 'kraftlake_stream_failures_total{cluster_id="fleet-b"} 0.0' not in scraped
    assert 'kraftlake_stream_restarts_total{cluster_id="fleet-b"} 0.0' not in scraped

    # each cluster once, as a batch ingest of its final log holds it
    shutil.rmtree(parent / "a2")
    blake = batch_lake(spark, cfg_factory, tmp_path / "batch", parent)
    for name in TABLES:
        assert table_rows(lake, name) == table_rows(blake, name), name
