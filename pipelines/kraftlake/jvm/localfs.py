"""Hadoop's local file system without a shell command per file written (`LocalFiles.java`),
for the sessions of a local master.

Without Hadoop's native library, which no Maven artifact carries, Hadoop's file:// file system
runs `chmod` for each file it creates and `readlink` for each rename: a Delta commit on a
local lake (its commit file and checksum, each a temporary file renamed, and their .crc
files) started about twenty processes, 4-5 ms each from the driver's JVM, and a streamed
micro-batch about 180. `LocalFiles.java` does the same two calls with java.nio and leaves
every other call to Hadoop. The session factory (`kraftlake.spark`) adds its jar and names
its classes (`CONF`) for a local master, unless the conf names another file:// file system;
without a JDK's javac the session keeps Hadoop's.
"""

from __future__ import annotations

from . import POMS
from .javac import compiled_jar

SOURCES = (POMS / "LocalFiles.java",)
CLASSES = "kraftlake.jvm.LocalFiles$"  # the prefix of its classes' names
# the FileSystem (Spark's readers and writers, kraftlake's `HadoopFS`) and the
# AbstractFileSystem (FileContext: Delta's log store, Spark's checkpoint files) of file://
# (with checksum files, as Hadoop's LocalFileSystem and LocalFs; `LocalFiles$Raw` and
# `LocalFiles$RawFs` are the two without, as RawLocalFileSystem and RawLocalFs)
CONF = {"spark.hadoop.fs.file.impl": f"{CLASSES}FileSystem",
        "spark.hadoop.fs.AbstractFileSystem.file.impl": f"{CLASSES}Fs"}


def local_fs_jar() -> str:
    """The path of the jar of `LocalFiles.java`, built now if the cache has none for this
    source and Spark's jars (a one-line `JarResolutionError` when it cannot be)."""
    return compiled_jar("local-fs", SOURCES, [],
                        "install a JDK 17 to write local lakes without a process per file")
