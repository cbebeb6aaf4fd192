"""kraftlake's file:// file system (`jvm/LocalFiles.java`) against Hadoop's own: a local
session writes its lake through it, and the two calls it does with java.nio instead of a shell
command (a permission set, a path's link status) leave what Hadoop's own leaves, asked of
both on the same files."""

from __future__ import annotations

import os
import stat

import pytest
from py4j.protocol import Py4JJavaError

from kraftlake.jvm.localfs import CONF as LOCAL_FS
from kraftlake.jvm.localfs import local_fs_jar
from kraftlake.lake.jvmclass import java_class
from kraftlake.spark import _local_fs
from tests.conftest import SESSION_RAW_LOCAL_FILES

MODES = (0o644, 0o600, 0o755, 0o700, 0o444, 0o000, 0o1777)


def _file_systems(spark):
    """(Hadoop's RawLocalFileSystem, kraftlake's), each initialized as a session's is."""
    conf = spark._jsc.hadoopConfiguration()
    root = java_class(spark, "java.net.URI")("file:///")
    out = []
    for name in ("org.apache.hadoop.fs.RawLocalFileSystem", "kraftlake.jvm.LocalFiles$Raw"):
        fs = java_class(spark, name)()
        fs.initialize(root, conf)
        out.append(fs)
    return out


def _path(spark, p, qualified: bool = True):
    return java_class(spark, "org.apache.hadoop.fs.Path")(f"file:{p}" if qualified else str(p))


def test_a_local_session_is_given_kraftlakes_file_system() -> None:
    """Its jar on the driver's class path (the launcher opens file:// before `spark.jars`
    load), its classes named, unless the conf names another file system; one of
    LocalFiles' (the suite's raw pair) gets the jar and keeps its names."""
    conf = {"spark.driver.extraClassPath": "/opt/x.jar"}
    _local_fs(conf)
    jar = local_fs_jar()
    assert conf == {"spark.driver.extraClassPath": f"/opt/x.jar{os.pathsep}{jar}", **LOCAL_FS}
    theirs = {"spark.hadoop.fs.file.impl": "org.apache.hadoop.fs.RawLocalFileSystem"}
    _local_fs(theirs)
    assert theirs == {"spark.hadoop.fs.file.impl": "org.apache.hadoop.fs.RawLocalFileSystem"}
    raw = dict(SESSION_RAW_LOCAL_FILES)
    _local_fs(raw)
    assert raw == {**SESSION_RAW_LOCAL_FILES, "spark.driver.extraClassPath": jar}


def test_the_suites_sessions_open_local_files_through_it(spark) -> None:
    conf = spark._jsc.hadoopConfiguration()
    root = java_class(spark, "java.net.URI")("file:///")
    fs = java_class(spark, "org.apache.hadoop.fs.FileSystem").get(root, conf)
    assert fs.getClass().getName() == "kraftlake.jvm.LocalFiles$Raw"
    fc = java_class(spark, "org.apache.hadoop.fs.FileContext").getFileContext(root, conf)
    assert fc.getDefaultFileSystem().getClass().getName() == "kraftlake.jvm.LocalFiles$RawFs"


def test_a_permission_set_is_the_one_hadoops_own_sets(spark, tmp_path) -> None:
    """Files and directories, a sticky bit (handed to Hadoop's own) included."""
    perm = java_class(spark, "org.apache.hadoop.fs.permission.FsPermission")
    got: dict[str, list[int]] = {}
    for fs in _file_systems(spark):
        name = fs.getClass().getSimpleName()
        for mode in MODES:
            for kind in ("file", "dir"):
                p = tmp_path / f"{name}-{kind}-{mode:o}"
                p.write_text("x") if kind == "file" else p.mkdir()
                fs.setPermission(_path(spark, p), perm(mode))
                got.setdefault(name, []).append(stat.S_IMODE(os.stat(p).st_mode))
            made = tmp_path / f"{name}-made-{mode:o}"
            fs.mkdirs(_path(spark, made), perm(mode))
            got[name].append(stat.S_IMODE(os.stat(made).st_mode))
        for p in tmp_path.iterdir():
            p.chmod(0o700)  # so the test's directory can go
    assert got["Raw"] == got["RawLocalFileSystem"]
    assert got["Raw"][:2] == [0o644, 0o644]


def test_files_created_get_the_modes_hadoops_own_gives(spark, tmp_path) -> None:
    """A file and its checksum file created through each file system (umask applied)."""
    conf = spark._jsc.hadoopConfiguration()
    root = java_class(spark, "java.net.URI")("file:///")
    modes = {}
    for name in ("org.apache.hadoop.fs.LocalFileSystem", "kraftlake.jvm.LocalFiles$FileSystem"):
        fs = java_class(spark, name)()
        fs.initialize(root, conf)
        d = tmp_path / name
        out = fs.create(_path(spark, d / "part-0"), True)
        out.write(bytearray(b"rows"))
        out.close()
        modes[name] = sorted((p.name, stat.S_IMODE(os.stat(p).st_mode)) for p in d.iterdir())
    assert modes["kraftlake.jvm.LocalFiles$FileSystem"] == \
        modes["org.apache.hadoop.fs.LocalFileSystem"]
    assert [n for n, _m in modes["org.apache.hadoop.fs.LocalFileSystem"]] == \
        [".part-0.crc", "part-0"]


@pytest.mark.parametrize("qualified", [True, False], ids=["file-uri", "bare-path"])
def test_a_link_status_is_the_one_hadoops_own_gives(spark, tmp_path, qualified) -> None:
    """A file, a directory, a symbolic link to each, and a missing path (both refuse it)."""
    (tmp_path / "file").write_text("rows")
    (tmp_path / "dir").mkdir()
    (tmp_path / "to-file").symlink_to(tmp_path / "file")
    (tmp_path / "to-dir").symlink_to(tmp_path / "dir")
    hadoops, ours = _file_systems(spark)

    def status(fs, name: str):
        try:
            s = fs.getFileLinkStatus(_path(spark, tmp_path / name, qualified))
        except Py4JJavaError as exc:
            return exc.java_exception.getClass().getName()
        return (s.isFile(), s.isDirectory(), s.isSymlink(), s.getLen(), s.getPath().toString(),
                s.getSymlink().toString() if s.isSymlink() else None,
                s.getModificationTime(), s.getPermission().toString())

    names = ("file", "dir", "to-file", "to-dir", "missing")
    theirs = [status(hadoops, n) for n in names]
    assert [status(ours, n) for n in names] == theirs
    assert theirs[0][:3] == (True, False, False)
    assert theirs[-1] == "java.io.FileNotFoundException"
