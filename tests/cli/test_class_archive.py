"""The class-data archive of the JVM kraftlake launches (`kraftlake.jvm.cds`): written once
by a short job's JVM at its exit, put in place only whole, used by the next JVM, and a
broken one never stops a JVM given kraftlake's options from running. Real `kraftlake sql`
processes and real JVMs; the claim and promotion rules on real files."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

from kraftlake.jvm import _cache_dir, resolve
from kraftlake.jvm.cds import DYNAMIC_MAGIC, UNUSED_DAYS, ClassArchive, archive_key, is_archive
from kraftlake.jvm.javac import spark_jars
from kraftlake.jvm.localfs import local_fs_jar
from tests.conftest import cli_env, launch_command
from tests.polling import wait_until

JARS = spark_jars()
QUERY = "SELECT count(*) AS n FROM topics"


def _dead_pid() -> int:
    proc = subprocess.Popen(["true"])
    proc.wait()
    return proc.pid


def test_a_claim_keeps_others_from_writing_and_only_a_whole_archive_is_used(
        tmp_path: Path) -> None:
    first = ClassArchive(JARS, tmp_path)
    assert first.jvm_options(write=False) == []  # a long job never writes it
    writes = first.jvm_options(write=True)
    assert any(o.startswith("-XX:ArchiveClassesAtExit=") for o in writes), writes
    (claim,) = tmp_path.glob("*.jvm")
    # while the claiming process (this one) lives, nobody else writes or maps one
    assert ClassArchive(JARS, tmp_path).jvm_options(write=True) == []
    # the JVM ended, the archive it wrote is whole: the next process puts it in place
    claim.write_text(str(_dead_pid()))
    claim.with_suffix(".tmp").write_bytes(DYNAMIC_MAGIC + b"\0" * 64)
    uses = ClassArchive(JARS, tmp_path).jvm_options(write=True)
    assert uses[0] == f"-XX:SharedArchiveFile={first.path}" and is_archive(first.path)
    assert sorted(p.name for p in tmp_path.iterdir()) == [first.path.name]


def test_what_a_killed_jvm_left_is_deleted(tmp_path: Path) -> None:
    archive = ClassArchive(JARS, tmp_path)
    claim = archive.path.with_name(f"{archive.path.name}.{_dead_pid()}.jvm")
    claim.write_text(str(_dead_pid()))
    claim.with_suffix(".tmp").write_bytes(b"\0" * 4096)  # killed before its header
    options = archive.jvm_options(write=True)
    assert any(o.startswith("-XX:ArchiveClassesAtExit=") for o in options)  # a new try
    assert not claim.exists() and not claim.with_suffix(".tmp").exists()
    assert not archive.path.exists()


def test_archives_of_other_pairs_unused_for_a_week_go_before_a_new_one_is_written(
        tmp_path: Path) -> None:
    long_ago = time.time() - UNUSED_DAYS * 86400 - 60
    unused = tmp_path / "spark-0123456789abcdef.jsa"
    left = tmp_path / "spark-0123456789abcdef.jsa.4242.tmp"  # a killed writer's
    used = tmp_path / "spark-fedcba9876543210.jsa"
    for f in (unused, left, used):
        f.write_bytes(DYNAMIC_MAGIC + b"\0" * 64)
    for f in (unused, left):
        os.utime(f, (long_ago, long_ago))
    mine = ClassArchive(JARS, tmp_path)
    mine.path.write_bytes(DYNAMIC_MAGIC + b"\0" * 64)
    os.utime(mine.path, (long_ago, long_ago))
    # mapping an archive is a use: it is touched, and nothing is pruned
    assert mine.jvm_options(write=True)[0] == f"-XX:SharedArchiveFile={mine.path}"
    assert mine.path.stat().st_mtime > time.time() - 60 and unused.exists()
    # another pair writing its first archive deletes what nobody used for a week
    mine.path.unlink()
    assert any(o.startswith("-XX:ArchiveClassesAtExit=") for o in mine.jvm_options(write=True))
    assert not unused.exists() and not left.exists() and used.exists()


def _jvm_cache_without_archive(cache: Path) -> Path:
    """A JVM cache as setup leaves it (the jar lists `python -m kraftlake.jvm` resolved),
    without a class-data archive: the first `sql` then runs as the first short job after a
    user's setup. An empty cache would also resolve the Delta jars with Maven in that job's
    process: 5.8 CPU s of a JVM this test is not about."""
    resolve("delta")  # the test process's cache holds the list from here on
    local_fs_jar()  # and the local file system's jar, which setup compiles
    cache.mkdir()
    for listing in [*_cache_dir().glob("*.classpath"), *_cache_dir().glob("*.jar")]:
        shutil.copy(listing, cache)
    return cache


def _java_and_class_path(command: str) -> tuple[str, str]:
    """The java and the class path of a launch command ("Spark Command: JAVA -cp CP ...")."""
    words = command.removeprefix("Spark Command:").split()
    return words[0], words[words.index("-cp") + 1]


def test_a_jar_changed_at_its_path_gets_a_new_archive(tmp_path: Path) -> None:
    """Java maps an archive only with every jar as it was (size, modification time), so a
    pyspark installed again at the same path must not find the old archive under its name."""
    jars = tmp_path / "jars"
    jars.mkdir()
    (jars / "spark-core.jar").write_bytes(b"PK")
    key = archive_key(jars)
    assert archive_key(jars) == key
    os.utime(jars / "spark-core.jar", ns=(10**18, 10**18))
    assert archive_key(jars) != key


def test_a_jar_before_sparks_on_the_class_path_gets_an_archive_of_its_own(tmp_path: Path
                                                                            ) -> None:
    """The driver's extra class path (kraftlake's local file system) comes first on the
    class path Java checks: with it, without it, or with it built again, another archive."""
    jars, ours = tmp_path / "jars", tmp_path / "local-fs.jar"
    jars.mkdir()
    (jars / "spark-core.jar").write_bytes(b"PK")
    ours.write_bytes(b"PK")
    key = archive_key(jars, [str(ours)])
    assert key not in (None, archive_key(jars))
    assert archive_key(jars, [str(ours)]) == key
    os.utime(ours, ns=(10**18, 10**18))
    assert archive_key(jars, [str(ours)]) != key


def _sql(lake: Path, cache: Path, state: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "kraftlake", "sql", QUERY, "--lake", str(lake), "--format",
         "json"], capture_output=True, text=True, timeout=900, check=False, cwd=state.parent,
        env=cli_env(KRAFTLAKE_JVM_CACHE=str(cache), KRAFTLAKE_STATE_DIR=str(state),
                    SPARK_PRINT_LAUNCH_COMMAND="1"))


def test_the_first_short_job_writes_it_the_next_uses_it_a_broken_one_is_ignored(
        sim_lake, tmp_path: Path) -> None:
    lake, state = sim_lake[0], tmp_path / "state"
    cache = _jvm_cache_without_archive(tmp_path / "cache")
    out = _sql(lake, cache, state)
    assert out.returncode == 0 and json.loads(out.stdout)[0]["n"] > 0, out
    expected = out.stdout
    assert "-XX:ArchiveClassesAtExit=" in launch_command(state)
    (claim,) = (cache / "cds").glob("*.jvm")  # the JVM writes on after the process ended
    jvm = int(claim.read_text())
    wait_until(f"the JVM {jvm} that writes the archive has ended",
               lambda: not Path(f"/proc/{jvm}").exists(), 600)

    out = _sql(lake, cache, state)
    assert out.returncode == 0 and out.stdout == expected, out
    (archive,) = (cache / "cds").glob("*.jsa")
    assert is_archive(archive)
    command = launch_command(state)
    assert f"-XX:SharedArchiveFile={archive}" in command
    # and Java maps it: with -Xshare:on a JVM that cannot (a jar of the class path changed
    # since the archive was written, another java) fails instead of running on without it
    java, class_path = _java_and_class_path(command)
    mapped = subprocess.run([java, f"-XX:SharedArchiveFile={archive}", "-Xshare:on", "-cp",
                             class_path, "-version"], capture_output=True, text=True,
                            check=False)
    assert mapped.returncode == 0, mapped.stdout + mapped.stderr

    # the magic of a whole archive, garbage after it: Java refuses to map it, and a JVM
    # given the options kraftlake gives the next one (the archive, `-Xshare:auto`) runs on.
    # A JVM, not a third `sql`: a cold one is a third of this test's CPU, and the JVM is
    # what the archive could stop. A new file in its place, as kraftlake puts one there:
    # the JVM of the run before may still be ending with the old one mapped, and a file
    # cut under a mapping is a SIGBUS
    broken = archive.with_suffix(".broken")
    with archive.open("rb") as src, broken.open("wb") as dst:
        dst.write(src.read(4) + b"\x5a" * 4096 + src.read(archive.stat().st_size // 2))
    os.replace(broken, archive)
    extra = [str(cache / Path(local_fs_jar()).name)]  # the sql's extra class path
    assert class_path.startswith(extra[0])
    options = ClassArchive(JARS, archive.parent, extra).jvm_options(write=True)
    assert options[0] == f"-XX:SharedArchiveFile={archive}", options
    refused = subprocess.run([java, options[0], "-Xshare:on", "-cp", class_path, "-version"],
                             capture_output=True, text=True, check=False)
    assert refused.returncode != 0, refused.stdout + refused.stderr
    runs_on = subprocess.run([java, *options, "-cp", class_path, "-version"],
                             capture_output=True, text=True, check=False)
    assert runs_on.returncode == 0, runs_on.stdout + runs_on.stderr
    assert "warning" not in (runs_on.stdout + runs_on.stderr).lower(), runs_on  # silently
