"""Java's class-data sharing for the JVM kraftlake starts: Spark's classes, parsed and
verified once, then mapped from an archive by every later JVM.

A cold `kraftlake sql` loads some twenty thousand classes (Spark, Delta, Hadoop, Scala),
and their parsing and bytecode verification is a large part of its CPU time. Java 17 writes
the classes a JVM loaded to a *dynamic archive* when it exits (`-XX:ArchiveClassesAtExit`),
and a later JVM maps that archive instead (`-XX:SharedArchiveFile`): measured on a cold
one-row `sql` of the demo lake, 13.4-14.1 s of CPU without it, 10.2 s with it.

Where and when: in kraftlake's JVM cache (`~/.cache/kraftlake/jvm/cds/`, beside the jar
lists: a cache, rebuilt if deleted), written by the first JVM of a command that answers one
question (`sql`, `timeline`, `report`: its classes are the ones every command loads) and
used by every JVM kraftlake launches afterwards, ingest and serve included. Writing it costs
that JVM's exit tens of seconds of CPU (minutes under load) once; the command's process does
not wait for it: the JVM writes on after the answer is out and the process has ended.

What makes it safe:

- the JVM writes the archive under a name of its own (`*.<pid>.tmp`) beside a claim file
  (`*.<pid>.jvm`, the JVM's pid) that tells later processes it is being written (they run
  without it meanwhile and write none of their own); the first process that finds the JVM
  ended and the file whole (the dynamic-archive magic at its start, which Java writes last)
  renames it into place, and one that finds it broken deletes it;
- the archive's name carries a digest of what it depends on: the `java` that runs (path,
  size, change time: a JVM upgrade gets a new archive), Spark's jar directory (its path
  and each jar's name, size and change time: another pyspark, another virtual environment,
  or the same one made again at the same path gets a new one), and the jars the driver's
  class path puts before Spark's (`spark.driver.extraClassPath`: kraftlake's local file
  system, built again when its source changes). Java checks the same (its
  build, the class path, each jar's size and time) and runs without an archive that does
  not match or is broken (`-Xshare:auto`, its default); its messages about that are
  switched off (`-Xlog:cds*=off`), so a digest that missed what Java checks would leave
  every JVM silently without the archive (a venv made again at its path did, until
  2026-12-03);
- only a JVM kraftlake launches gets these options: under `spark-submit` (a cluster) the
  driver JVM is the launcher's and nothing here runs.

Each (java, Spark) pair has an archive of its own, about 220 MB, and every new virtual
environment is a new pair: a machine that ran a fresh clone per CI job kept one per clone
(2.9 GB in fourteen here). So every JVM that maps an archive touches it, and before a new one
is written the files of other pairs that no JVM used for `UNUSED_DAYS` are deleted (a JVM
still mapping one keeps its pages: only cutting a mapped file short would hurt it).
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import shutil
import time
from collections.abc import Sequence
from pathlib import Path

from . import _cache_dir

# Java 17's dynamic archive header begins with this 32-bit magic (native byte order)
DYNAMIC_MAGIC = 0xF00BABA8.to_bytes(4, "little")
QUIET = ("-Xshare:auto", "-Xlog:cds*=off")  # a JVM without a usable archive runs on, silently
UNUSED_DAYS = 7  # another pair's archive no JVM mapped for this long is deleted (module doc)


def archive_dir() -> Path:
    return _cache_dir() / "cds"


def _java() -> Path | None:
    """The `java` Spark's launcher runs: $JAVA_HOME/bin/java, else the one on PATH."""
    home = os.environ.get("JAVA_HOME")
    found = str(Path(home) / "bin" / "java") if home else shutil.which("java")
    return Path(found).resolve() if found and Path(found).exists() else None


def archive_key(spark_jars: Path, extra: Sequence[str] = ()) -> str | None:
    """A digest of what an archive is valid for (None: no java found, no archive). `extra`:
    the driver's class path before Spark's jars (`spark.driver.extraClassPath`, such as
    kraftlake's local file system, `jvm/localfs.py`)."""
    java = _java()
    if java is None or not spark_jars.is_dir():
        return None
    st = java.stat()
    digest = hashlib.sha256(f"{java}|{st.st_size}|{st.st_mtime_ns}|{spark_jars}".encode())
    for jar in sorted(spark_jars.iterdir()):
        # Java maps an archive only with every jar as it was when the archive was written,
        # by size and modification time: a pyspark installed again at the same path (a
        # virtual environment made anew) has the same names and new times
        js = jar.stat()
        digest.update(f"{jar.name}|{js.st_size}|{js.st_mtime_ns}".encode())
    for entry in extra:  # their paths too: they come first on the class path Java checks
        es = Path(entry).stat() if Path(entry).exists() else None
        digest.update(f"{entry}|{es and es.st_size}|{es and es.st_mtime_ns}".encode())
    return digest.hexdigest()[:16]


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # someone else's process
        return True
    return True


def is_archive(path: Path) -> bool:
    """Whether `path` looks like a whole dynamic archive (its magic; Java checks the rest)."""
    try:
        with open(path, "rb") as fh:
            return fh.read(4) == DYNAMIC_MAGIC
    except OSError:
        return False


class ClassArchive:
    """The archive of one (java, Spark) pair, and the jars the driver's class path puts
    before Spark's (`archive_key`): the JVM options that use it or write it."""

    def __init__(self, spark_jars: Path, directory: Path | None = None,
                 extra: Sequence[str] = ()) -> None:
        self.key = archive_key(spark_jars, extra)
        self.path = (directory or archive_dir()) / f"spark-{self.key}.jsa"
        self._claim: Path | None = None

    def _settle(self) -> bool:
        """Put in place an archive a JVM that ended wrote, delete what a killed one left;
        True while another JVM is still writing one."""
        writing = False
        for claim in self.path.parent.glob(f"{self.path.name}.*.jvm"):
            owner = claim.name.rsplit(".", 2)[-2]
            text = claim.read_text().strip() if claim.exists() else ""
            pid = int(text) if text.isdigit() else int(owner) if owner.isdigit() else 0
            if pid and _alive(pid):
                writing = True
                continue
            tmp = claim.with_suffix(".tmp")
            if is_archive(tmp):
                os.replace(tmp, self.path)
            tmp.unlink(missing_ok=True)
            claim.unlink(missing_ok=True)
        return writing

    def jvm_options(self, write: bool) -> list[str]:
        """Options for the next JVM: map the archive; else, when `write` and no other JVM is
        writing one, write it at exit (then `claim` names the JVM); [] when no java is
        found or the archive is being written."""
        if self.key is None:
            return []
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            writing = self._settle()
        except OSError:  # a read-only or full cache: run without
            return []
        if is_archive(self.path):
            with contextlib.suppress(OSError):  # its last use, for `_prune` elsewhere
                os.utime(self.path)
            return [f"-XX:SharedArchiveFile={self.path}", *QUIET]
        if writing or not write:
            return []
        self._prune()
        self._claim = self.path.with_name(f"{self.path.name}.{os.getpid()}.jvm")
        self._claim.write_text("")  # this process's pid (in the name) until the JVM's
        return [f"-XX:ArchiveClassesAtExit={self._claim.with_suffix('.tmp')}", *QUIET]

    def _prune(self) -> None:
        """Delete the files of other (java, Spark) pairs that no JVM used for
        `UNUSED_DAYS`: archives, and what a JVM killed while writing one left."""
        cutoff = time.time() - UNUSED_DAYS * 86400
        for other in self.path.parent.glob("spark-*"):
            if other.name.startswith(self.path.name):
                continue
            with contextlib.suppress(OSError):  # gone meanwhile: another process pruned it
                if other.stat().st_mtime < cutoff:
                    other.unlink()

    def claim(self, jvm_pid: int | None) -> None:
        """Record the pid of the JVM that writes the archive at its exit."""
        if self._claim is not None:
            if jvm_pid is None:
                self._claim.unlink(missing_ok=True)
            else:
                self._claim.write_text(str(jvm_pid))
