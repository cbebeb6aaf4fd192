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

It is compiled once by the JDK's `javac` (`jvm/javac.py`) against the jars the session runs
with (Spark's Hadoop, the pinned delta-storage and hadoop-aws). Under `spark-submit` the
launcher's jars rule: `python -m kraftlake.jvm s3-logstore` prints the jar to give it (README).
"""

from __future__ import annotations

from . import POMS, resolve
from .javac import compiled_jar

SOURCES = (POMS / "S3ConditionalLogStore.java", POMS / "S3CheckpointFileManager.java")
LOG_STORE_CLASS = "kraftlake.jvm.S3ConditionalLogStore"
LOG_STORE_CONF = "spark.delta.logStore.s3a.impl"
# Spark's `CheckpointFileManager.create` reads this key from the Hadoop configuration, into
# which the session copies its SQL settings: Delta's checksum writer asks the same factory
CHECKPOINT_MANAGER_CLASS = "kraftlake.jvm.S3CheckpointFileManager"
CHECKPOINT_MANAGER_CONF = "spark.sql.streaming.checkpointFileManagerClass"


def log_store_jar() -> str:
    """The path of the jar of the compiled LogStore and checkpoint file manager, built now
    if the cache has none for these sources and jars (a one-line `JarResolutionError` when
    it cannot be)."""
    return compiled_jar("s3-logstore", SOURCES, [*resolve("delta"), *resolve("s3")],
                        f"install a JDK 17, or give Spark a LogStore yourself ({LOG_STORE_CONF} "
                        f"in the conf)")
