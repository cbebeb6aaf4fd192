"""Small files beside the tables (plans, stream state, work frames), through Hadoop's FileSystem.

The lake may be a local directory, `file://` or `s3a://`: whatever Spark writes the tables to,
these helpers reach with the same Hadoop configuration (credentials, endpoint), from the
driver. They are for bookkeeping, and for the data files of a small increment that the
driver wrote from Arrow (`lake.arrow_files`): a few hundred rows, never a large table.
"""

from __future__ import annotations

from py4j.protocol import Py4JJavaError
from pyspark.sql import SparkSession

from .jvmclass import java_class


class HadoopFS:
    """Hadoop FileSystem calls on the driver, for the URI scheme of `root`."""

    def __init__(self, spark: SparkSession, root: str) -> None:
        self._spark = spark
        self._path = java_class(spark, "org.apache.hadoop.fs.Path")
        self._conf = spark._jsparkSession.sessionState().newHadoopConf()
        self._fs = self._path(root).getFileSystem(self._conf)

    def _p(self, uri: str):
        return self._path(uri)

    def exists(self, uri: str) -> bool:
        return bool(self._fs.exists(self._p(uri)))

    def read_text(self, uri: str) -> str | None:
        """A file's whole content as UTF-8 text, or None when it does not exist (a plan or a
        stream's state not written yet). Opened without asking first whether it exists:
        on S3 that question is a request of its own (a HEAD, and a LIST when the answer is
        no), and the open asks the store anyway."""
        try:
            stream = self._fs.open(self._p(uri))
        except Py4JJavaError as exc:
            if exc.java_exception.getClass().getName() == "java.io.FileNotFoundException":
                return None
            raise
        try:
            data = java_class(self._spark, "org.apache.commons.io.IOUtils").toByteArray(stream)
        finally:
            stream.close()
        return bytes(data).decode()

    def write_text(self, uri: str, text: str) -> None:
        """Write `text` whole: a temp file renamed into place, so a reader never sees half."""
        tmp = uri + ".tmp"
        self.write_bytes(tmp, text.encode(), overwrite=True)
        self._fs.delete(self._p(uri), False)
        if not self._fs.rename(self._p(tmp), self._p(uri)):
            raise OSError(f"{uri}: could not move the written file into place")

    def write_bytes(self, uri: str, data: bytes, overwrite: bool = False) -> None:
        """Write a file whole (a data file: a new one, under a name no reader knows yet)."""
        out = self._fs.create(self._p(uri), overwrite)
        try:
            out.write(bytearray(data))
        finally:
            out.close()

    def delete(self, uri: str) -> None:
        self._fs.delete(self._p(uri), True)

    def list(self, uri: str) -> list[str]:
        """Names directly under `uri` (none if it does not exist)."""
        if not self.exists(uri):
            return []
        return [st.getPath().getName() for st in self._fs.listStatus(self._p(uri))]

    def oldest_file(self, uri: str) -> int | None:
        """The oldest modification time (ms since the epoch) of the files under `uri`,
        outside directories whose name starts with `_` or `.` (a Delta log, a checkpoint's
        staging); None when there is none."""
        if not self.exists(uri):
            return None
        root = self._fs.makeQualified(self._p(uri)).toString().rstrip("/") + "/"
        oldest = None
        files = self._fs.listFiles(self._p(uri), True)
        while files.hasNext():
            st = files.next()
            rel = st.getPath().toString()[len(root):]
            if any(part[:1] in "_." for part in rel.split("/")[:-1]):
                continue
            t = int(st.getModificationTime())
            oldest = t if oldest is None else min(oldest, t)
        return oldest
