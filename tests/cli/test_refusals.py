"""What can be checked before Spark starts is: a bad option value, a `--lake` that holds no
kraftlake lake (a local directory or an s3a location), a user topic's segment given to
`decode`, a source of `ingest` that is no metadata log. Each command runs as a process, as a
user runs it, and must answer without launching a JVM (kraftlake launches one only after
writing its log file, `kraftlake.spark.spark_log`, so an empty log directory is the proof)
and without importing pyspark, whose import alone costs about a second: the process finds a
`pyspark` package first on its path that fails when imported. How long each answer takes is
printed by benchmarks/refusals.py."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from kraftlake.codec.batch import build_batch, encode_batch
from tests.cluster.servers import s3_server, store_fs
from tests.conftest import REPO

EXAMPLE = REPO / "examples" / "real-3-broker"
METADATA_LOG = EXAMPLE / "__cluster_metadata-0"


NO_PYSPARK = "pyspark was imported"


def kraftlake(tmp: Path, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
    """`kraftlake ARGS` in its own process; fails the test if it launched a JVM or imported
    pyspark."""
    import os

    state = tmp / "state"
    poison = tmp / "no-pyspark" / "pyspark"
    poison.mkdir(parents=True, exist_ok=True)
    (poison / "__init__.py").write_text(f"raise AssertionError({NO_PYSPARK!r})\n")
    path = os.pathsep.join([str(poison.parent), os.environ.get("PYTHONPATH", "")])
    out = subprocess.run([sys.executable, "-m", "kraftlake", *args], capture_output=True,
                         text=True, timeout=120, check=False, cwd=tmp,
                         env={**os.environ, "KRAFTLAKE_STATE_DIR": str(state),
                              "PYTHONPATH": path, **env})
    assert not list(state.glob("logs/*.log")), f"a JVM was launched for {args}"
    assert NO_PYSPARK not in out.stderr, f"{args} imported pyspark: {out.stderr}"
    assert "Traceback" not in out.stderr, out.stderr
    return out


def _one_error(out: subprocess.CompletedProcess[str], status: int, *needles: str) -> str:
    assert out.returncode == status, out
    assert out.stdout == ""
    line = out.stderr.strip().splitlines()[-1]
    assert line.startswith("Error: "), out.stderr
    for n in needles:
        assert n in out.stderr, out.stderr
    return line


# ------------------------------------------------------------ option values


def test_a_trigger_spark_cannot_parse_is_refused_before_spark(tmp_path: Path) -> None:
    out = kraftlake(tmp_path, "stream", str(METADATA_LOG), "--lake", str(tmp_path / "lake"),
                    "--trigger", "banana")
    _one_error(out, 2, "--trigger", "'banana'", "500ms")
    assert not (tmp_path / "lake").exists()


def test_a_metrics_port_taken_is_refused_before_spark(tmp_path: Path) -> None:
    """`--metrics-port` listens before Spark starts: a port another server holds is a usage
    error naming it, with no JVM and no lake."""
    import socket

    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = str(taken.getsockname()[1])
        out = kraftlake(tmp_path, "stream", str(METADATA_LOG), "--lake",
                        str(tmp_path / "lake"), "--metrics-port", port)
    _one_error(out, 2, "--metrics-port", f"127.0.0.1:{port}", "in use")
    assert not (tmp_path / "lake").exists()


def test_a_stream_of_a_file_that_is_no_log_is_refused_before_spark(tmp_path: Path) -> None:
    hosts = tmp_path / "hosts"
    hosts.write_text("127.0.0.1 localhost\n")
    out = kraftlake(tmp_path, "stream", str(hosts), "--lake", str(tmp_path / "lake"))
    _one_error(out, 2, str(hosts))
    assert not (tmp_path / "lake").exists()


def test_an_ingest_of_sources_that_are_no_log_is_refused_before_spark(tmp_path: Path) -> None:
    """Every source refused: exit status 2, one line each, no lake created."""
    hosts, empty = tmp_path / "hosts", tmp_path / "empty"
    hosts.write_text("127.0.0.1 localhost\n")
    empty.mkdir()
    out = kraftlake(tmp_path, "ingest", str(hosts), str(empty), "--lake", str(tmp_path / "lake"))
    assert out.returncode == 2 and out.stdout == "", out
    lines = out.stderr.strip().splitlines()
    assert len(lines) == 2 and all(ln.startswith("Error: ") for ln in lines), out.stderr
    assert str(hosts) in lines[0] and str(empty) in lines[1], out.stderr
    assert not (tmp_path / "lake").exists()


def test_a_short_retention_is_refused_before_spark(tmp_path: Path) -> None:
    out = kraftlake(tmp_path, "maintain", "--lake", str(tmp_path), "--retention-hours", "1")
    _one_error(out, 2, "--retention-hours", "--allow-short-retention")


# ------------------------------------------------------------ a --lake that is no lake


READERS = [
    ["sql", "SELECT 1"],
    ["timeline", "--topic", "t", "--partition", "0"],
    ["quality"],
    ["maintain"],
    ["report", "--out", "r.html"],
]


@pytest.mark.parametrize("args", READERS, ids=lambda a: a[0])
def test_a_reader_on_a_directory_without_a_lake(tmp_path: Path, args: list[str]) -> None:
    empty = tmp_path / "not-a-lake"
    empty.mkdir()
    line = _one_error(kraftlake(tmp_path, *args, "--lake", str(empty)), 2)
    assert "no kraftlake lake here" in line and str(empty) in line
    assert list(empty.iterdir()) == []  # nothing was written


def test_a_reader_on_a_file_is_told_it_is_a_file(tmp_path: Path) -> None:
    """Not to run `ingest` first, which refuses a file as a lake as well."""
    segment = tmp_path / "00000000000000000000.log"
    segment.write_bytes(b"")
    line = _one_error(kraftlake(tmp_path, "sql", "SELECT 1", "--lake", str(segment)), 2)
    assert "is a file, not a directory" in line and "ingest" not in line


def test_a_reader_on_a_missing_directory(tmp_path: Path) -> None:
    gone = tmp_path / "gone"
    line = _one_error(kraftlake(tmp_path, "report", "--lake", str(gone), "--out", "r.html"), 2)
    assert "no kraftlake lake here" in line and str(gone) in line
    assert not gone.exists()


def test_a_reader_on_an_s3a_location_without_a_lake(tmp_path: Path) -> None:
    """Through pyarrow's S3 filesystem (`kraftlake.uris`), as the batch sources are read:
    `report` took `--lake` for a local directory and said it did not exist."""
    import pyarrow.fs as pafs

    with s3_server(tmp_path) as aws:
        fs = store_fs(aws)
        fs.create_dir("bucket")
        fs.open_output_stream("bucket/notes/readme.txt").close()
        assert fs.get_file_info("bucket/notes").type == pafs.FileType.Directory
        for args in (["report", "--out", "r.html"], ["sql", "SELECT 1"]):
            line = _one_error(kraftlake(tmp_path, *args, "--lake", "s3a://bucket/notes",
                                        **aws), 2)
            assert "s3a://bucket/notes: no kraftlake lake here" in line, line


# ------------------------------------------------------------ decode of user data


def _user_segment(directory: Path) -> Path:
    """A segment of a user topic: batches whose records are a producer's payloads (readings
    of a telemetry topic), in Kafka's record-batch format with valid CRCs."""
    directory.mkdir(parents=True)
    seg = directory / "00000000000000000000.log"
    with seg.open("wb") as fh:
        for i in range(5):
            values = [f'{{"sensor": {i}, "reading": {n}.5}}'.encode() for n in range(10)]
            fh.write(encode_batch(build_batch(10 * i, 0, 1_735_689_600_000 + i, values)))
    return seg


def test_decode_refuses_a_user_topic_as_ingest_does(tmp_path: Path) -> None:
    seg = _user_segment(tmp_path / "telemetry-0")
    for path in (seg, seg.parent):
        line = _one_error(kraftlake(tmp_path, "decode", str(path)), 2)
        assert "topic 'telemetry'" in line and "refusing to read user data" in line, line
    # the same bytes under the metadata log's name: refused by what the records are
    disguised = tmp_path / "copy" / "__cluster_metadata-0"
    shutil.copytree(seg.parent, disguised)
    for path in (disguised / seg.name, disguised, disguised.parent):
        line = _one_error(kraftlake(tmp_path, "decode", str(path), "--count"), 2)
        assert "are not KRaft metadata records" in line, line
    # and ingest says the same of them
    line = _one_error(kraftlake(tmp_path, "ingest", str(seg.parent), "--lake",
                                str(tmp_path / "lake"), "--cluster-id", "x"), 2)
    assert "topic 'telemetry'" in line


def test_decode_of_the_metadata_log_beside_a_user_topic(tmp_path: Path) -> None:
    """A metadata segment is decoded wherever it lies, unless its directory is another
    topic's partition."""
    out = kraftlake(tmp_path, "decode", str(METADATA_LOG), "--count")
    assert out.returncode == 0 and "total" in out.stdout, out
    under = tmp_path / "telemetry-0"
    shutil.copytree(METADATA_LOG, under)
    _one_error(kraftlake(tmp_path, "decode", str(under), "--count"), 2, "topic 'telemetry'")
