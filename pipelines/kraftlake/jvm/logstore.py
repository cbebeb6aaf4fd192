"""kraftlake's Delta LogStore and Spark checkpoint file manager for `s3a://` lakes, compiled
once from the sources beside this file.

delta-storage's default LogStore for s3a keeps two writers from creating the same commit
file only inside one JVM, so two processes writing one lake on S3 (`kraftlake ingest` of two
clusters at once) could lose a commit without an error. `S3ConditionalLogStore.java` creates
each commit file with S3's conditional PUT instead, which the store itself arbitrates (its
class comment says how). `S3CheckpointFileManager.java` writes the files Spark and Delta
write "atomically" (a stream's checkpoint, each commit's checksum) with one PUT instead of a
temporary file renamed, the same conditional PUT where a file must not be replaced. The
session factory (`kraftlake.spark`) puts their jar on the classpath and names them in
`spark.delta.logStore.s3a.impl` and `spark.sql.streaming.checkpointFileManagerClass`
whenever it adds the s3a jars.

It is compiled by the JDK's `javac` against the jars the session runs with (Spark's Hadoop,
the pinned delta-storage and hadoop-aws) into a jar in kraftlake's JVM cache, named by a
digest of the source and of those jars: `python -m kraftlake.jvm` builds it at setup, and
every later run finds it there (no compiler, no network). Under `spark-submit` the launcher's
jars rule: `python -m kraftlake.jvm s3-logstore` prints the jar to give it (README).
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import tempfile
import zipfile
from pathlib import Path

from . import POMS, JarResolutionError, _cache_dir, resolve

SOURCES = (POMS / "S3ConditionalLogStore.java", POMS / "S3CheckpointFileManager.java")
LOG_STORE_CLASS = "kraftlake.jvm.S3ConditionalLogStore"
LOG_STORE_CONF = "spark.delta.logStore.s3a.impl"
# Spark's `CheckpointFileManager.create` reads this key from the Hadoop configuration, into
# which the session copies its SQL settings: Delta's checksum writer asks the same factory
CHECKPOINT_MANAGER_CLASS = "kraftlake.jvm.S3CheckpointFileManager"
CHECKPOINT_MANAGER_CONF = "spark.sql.streaming.checkpointFileManagerClass"


def _spark_jars() -> Path:
    """Spark's own jar directory (its Hadoop client among them)."""
    from pyspark.find_spark_home import _find_spark_home

    return Path(_find_spark_home()) / "jars"


def _javac() -> str | None:
    """The JDK's compiler: $JAVA_HOME/bin/javac, else the one on the PATH."""
    home = os.environ.get("JAVA_HOME")
    if home and (Path(home) / "bin" / "javac").is_file():
        return str(Path(home) / "bin" / "javac")
    return shutil.which("javac")


def log_store_jar() -> str:
    """The path of the jar of the compiled LogStore and checkpoint file manager, built now
    if the cache has none for these sources and jars (a one-line `JarResolutionError` when
    it cannot be)."""
    deps = [*resolve("delta"), *resolve("s3")]
    spark_jars = _spark_jars()
    digest = hashlib.sha256(b"".join(source.read_bytes() for source in SOURCES))
    for name in sorted([*deps, *(p.name for p in spark_jars.glob("hadoop-*.jar"))]):
        digest.update(name.encode())
    jar = _cache_dir() / f"s3-logstore-{digest.hexdigest()[:16]}.jar"
    if jar.is_file():
        return str(jar)
    javac = _javac()
    if javac is None:
        raise JarResolutionError(
            f"cannot build {SOURCES[0].name} (the s3a lake's commit store): no javac; install a "
            f"JDK 17, or give Spark a LogStore yourself ({LOG_STORE_CONF} in the conf)")
    jar.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=jar.parent) as tmp:
        classpath = os.pathsep.join([*deps, str(spark_jars / "*")])
        proc = subprocess.run([javac, "--release", "17", "-nowarn", "-d", tmp,
                               "-cp", classpath, *map(str, SOURCES)],
                              capture_output=True, text=True)
        if proc.returncode != 0:
            why = next((ln for ln in proc.stderr.splitlines() if "error" in ln),
                       f"javac exited with {proc.returncode}")
            raise JarResolutionError(f"cannot build {SOURCES[0].name}: {why.strip()[:300]}")
        part = Path(tmp) / jar.name
        with zipfile.ZipFile(part, "w", zipfile.ZIP_DEFLATED) as out:
            for cls in sorted(Path(tmp).rglob("*.class")):
                out.write(cls, cls.relative_to(tmp).as_posix())
        part.replace(jar)
    return str(jar)
