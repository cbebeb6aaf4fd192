"""Bad input through the real `kraftlake` command: one line naming the problem, the
documented exit status, no traceback, nothing deleted or written.

`decode` runs as a subprocess (as a user runs it); the configuration and `demo --force`
cases through click's CliRunner on the real command group: they fail before any Spark
session or simulation starts.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from kraftlake.cli import main
from tests.conftest import REPO

EXAMPLE = REPO / "examples" / "real-3-broker"


def kraftlake(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "kraftlake", *args], capture_output=True,
                          text=True, timeout=120, check=False)


def _one_line_error(out: subprocess.CompletedProcess[str], *needles: str) -> None:
    assert out.returncode == 2, out
    assert out.stdout == ""
    lines = out.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("Error: "), out.stderr
    assert "Traceback" not in out.stderr
    for n in needles:
        assert n in lines[0], lines[0]


# ------------------------------------------------------------ decode


def test_decode_of_a_file_that_is_not_a_kafka_log(tmp_path: Path) -> None:
    f = tmp_path / "00000000000000000000.log"
    f.write_text("just some text, no record batch\n" * 10)
    _one_line_error(kraftlake("decode", str(f)), str(f), "not a Kafka metadata log")


def test_decode_of_an_empty_directory(tmp_path: Path) -> None:
    d = tmp_path / "empty"
    d.mkdir()
    _one_line_error(kraftlake("decode", str(d)), str(d), "not a KRaft metadata-log directory")


def test_decode_of_a_missing_path(tmp_path: Path) -> None:
    _one_line_error(kraftlake("decode", str(tmp_path / "nope")), "no such file or directory")


def test_decode_of_an_unreadable_file(tmp_path: Path) -> None:
    """A segment whose bytes cannot be read: permission denied for a normal user; as root
    (which reads any file) a segment name linked to /proc/self/mem, which fails with EIO."""
    seg = tmp_path / "00000000000000000000.log"
    if os.geteuid() == 0:
        seg.symlink_to("/proc/self/mem")
        reason = "Input/output error"
    else:
        seg.write_bytes(b"\0" * 100)
        seg.chmod(0)
        reason = "Permission denied"
    _one_line_error(kraftlake("decode", str(seg)), seg.name, reason)


# ------------------------------------------------------------ configuration


def _ingest(tmp_path: Path, *extra: str, env: dict[str, str] | None = None):
    lake = tmp_path / "lake"
    out = CliRunner().invoke(main, ["ingest", str(EXAMPLE), "--lake", str(lake), *extra],
                             env=env)
    assert not lake.exists()  # refused before anything was written
    return out


def test_conf_naming_a_missing_file(tmp_path: Path) -> None:
    missing = tmp_path / "nope.yaml"
    out = _ingest(tmp_path, "--conf", str(missing))
    assert out.exit_code == 2
    assert out.output.strip() == (f"Error: configuration file {missing} (from --conf) does "
                                  f"not exist")


def test_kraftlake_conf_naming_a_missing_file(tmp_path: Path) -> None:
    missing = tmp_path / "gone.yaml"
    out = _ingest(tmp_path, env={"KRAFTLAKE_CONF": str(missing)})
    assert out.exit_code == 2
    assert "$KRAFTLAKE_CONF" in out.output and str(missing) in out.output
    assert len(out.output.strip().splitlines()) == 1


@pytest.mark.parametrize("yaml_text, key", [
    ("min_insync_replica_default: 2\n", "min_insync_replica_default"),
    ("stream:\n  triger: 5s\n", "stream.triger"),
    ("spark:\n  master: local[2]\n  cores: 4\n", "spark.cores"),
])
def test_conf_with_a_key_kraftlake_does_not_know(tmp_path: Path, yaml_text: str,
                                                 key: str) -> None:
    conf = tmp_path / "k.yaml"
    conf.write_text(yaml_text)
    out = _ingest(tmp_path, "--conf", str(conf))
    assert out.exit_code == 2
    line = out.output.strip()
    assert len(line.splitlines()) == 1 and str(conf) in line and key in line


def test_spark_conf_settings_are_free_form(tmp_path: Path) -> None:
    from kraftlake.config import load_config

    conf = tmp_path / "k.yaml"
    conf.write_text("spark:\n  conf:\n    spark.anything.at.all: '1'\n")
    assert load_config(conf).spark_conf["spark.anything.at.all"] == "1"


# ------------------------------------------------------------ demo --force


def test_demo_force_never_deletes_what_is_not_a_kraftlake_lake(tmp_path: Path) -> None:
    home = tmp_path / "home"
    (home / "src").mkdir(parents=True)
    (home / "notes.txt").write_text("precious")
    (home / "records" / "_delta_log").mkdir(parents=True)  # one table-like entry is not enough
    out = CliRunner().invoke(main, ["demo", "--lake", str(home), "--force"])
    assert out.exit_code == 2, out.output
    assert "is not a kraftlake lake" in out.output
    assert (home / "notes.txt").read_text() == "precious" and (home / "src").is_dir()


def test_demo_force_may_replace_a_kraftlake_lake(tmp_path: Path) -> None:
    from kraftlake.lake.schema import is_kraftlake_lake

    lake = tmp_path / "lake"
    for t in ("records", "partition_events"):
        (lake / t / "_delta_log").mkdir(parents=True)
    (lake / "_kraftlake" / "staging").mkdir(parents=True)
    assert is_kraftlake_lake(lake)
    (lake / "records" / "_delta_log").rmdir()  # a table name without a Delta log
    assert not is_kraftlake_lake(lake)


# ------------------------------------------------------------ ingest and stream sources


def _dir(d: Path, *files: str) -> Path:
    d.mkdir()
    for f in files:
        (d / f).write_text("not a log\n")
    return d


@pytest.mark.parametrize("command", ["ingest", "stream"])
@pytest.mark.parametrize("make, needle", [
    (lambda d: d / "nope", "no such file or directory"),
    (lambda d: _dir(d / "empty"), "not a metadata-log directory"),
    (lambda d: _dir(d / "notes", "a.txt"), "not a metadata-log directory"),
    (lambda d: _dir(d / "__cluster_metadata-0", "00000000000000000000.log"),
     "not a Kafka"),
])
def test_a_source_that_is_no_metadata_log_is_refused_before_spark_starts(
        tmp_path: Path, command: str, make, needle: str) -> None:
    src, lake = make(tmp_path), tmp_path / "lake"
    out = kraftlake(command, str(src), "--lake", str(lake), "--cluster-id", "x")
    assert out.returncode == 2, out
    assert out.stdout == "" and "Traceback" not in out.stderr
    lines = out.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"Error: {src}"), out.stderr
    assert needle in lines[0]
    assert not lake.exists()


@pytest.mark.parametrize("command", ["ingest", "stream"])
def test_a_lake_that_is_a_file_is_refused_before_spark_starts(tmp_path: Path,
                                                              command: str) -> None:
    lake = tmp_path / "lake.yaml"
    lake.write_text("lake: somewhere\n")
    out = kraftlake(command, str(EXAMPLE), "--lake", str(lake))
    assert out.returncode == 2, out
    assert out.stderr.strip() == (f"Error: {lake}: is a file, not a directory a lake is (or "
                                  f"can be) kept in"), out.stderr
    assert lake.read_text() == "lake: somewhere\n"


@pytest.mark.parametrize("props, says", [
    (None, "no meta.properties beside it; pass --cluster-id"),
    ("node.id=1\nversion=1\n", "meta.properties holds no cluster.id; pass --cluster-id"),
])
def test_a_log_without_a_cluster_id_says_what_is_missing(tmp_path: Path, props: str | None,
                                                         says: str) -> None:
    shutil.copytree(EXAMPLE, tmp_path / "node", ignore=shutil.ignore_patterns(
        "meta.properties"))
    if props is not None:
        (tmp_path / "node" / "meta.properties").write_text(props)
    log = tmp_path / "node" / "__cluster_metadata-0"
    out = kraftlake("ingest", str(log), "--lake", str(tmp_path / "lake"))
    assert out.returncode == 2, out
    assert out.stderr.strip().endswith(says), out.stderr
    assert not (tmp_path / "lake").exists()


def test_every_bad_source_gets_its_line(tmp_path: Path) -> None:
    a, b = tmp_path / "a", tmp_path / "b"
    out = kraftlake("ingest", str(a), str(b), "--lake", str(tmp_path / "lake"))
    assert out.returncode == 2, out
    assert [ln.split(":")[1].strip() for ln in out.stderr.strip().splitlines()] == [
        str(a), str(b)]
