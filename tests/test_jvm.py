"""The pinned jar sets: resolved once, offline afterwards, and a failure is one clear line; the
s3a LogStore compiled once, found offline afterwards."""

from __future__ import annotations

import shutil
import zipfile
from pathlib import Path

import pytest

from kraftlake import jvm
from kraftlake.jvm import logstore

MISSING = """<?xml version="1.0" encoding="UTF-8"?>
<project xmlns="http://maven.apache.org/POM/4.0.0">
  <modelVersion>4.0.0</modelVersion>
  <groupId>kraftlake</groupId><artifactId>missing</artifactId><version>0</version>
  <packaging>pom</packaging>
  <dependencies>
    <dependency>
      <groupId>io.delta</groupId><artifactId>delta-spark_4.2_2.13</artifactId>
      <version>0.0.404</version>
    </dependency>
  </dependencies>
</project>
"""


def test_resolved_sets_need_no_maven_afterwards(tmp_path, monkeypatch) -> None:
    """After setup the jar list comes from the cache: no Maven, no network."""
    monkeypatch.setenv("KRAFTLAKE_JVM_CACHE", str(tmp_path))
    jars = jvm.resolve("delta")  # setup (Maven's local repository already has them)
    assert any(Path(j).name == "delta-spark_4.2_2.13-4.4.0.jar" for j in jars)
    monkeypatch.setenv("PATH", "/nonexistent")
    assert shutil.which("mvn") is None
    assert jvm.resolve("delta") == jars


def test_an_unresolvable_artifact_is_one_line_naming_it(tmp_path, monkeypatch) -> None:
    monkeypatch.setenv("KRAFTLAKE_JVM_CACHE", str(tmp_path / "cache"))
    pom = tmp_path / "missing.pom.xml"
    pom.write_text(MISSING)
    with pytest.raises(jvm.JarResolutionError) as err:
        jvm.resolve(pom)
    msg = str(err.value)
    assert "\n" not in msg
    assert "io.delta:delta-spark_4.2_2.13:0.0.404" in msg
    assert "spark.jars" in msg and "--packages" in msg


def test_the_s3a_log_store_is_compiled_once_and_found_offline(tmp_path, monkeypatch) -> None:
    """Setup compiles the s3a lake's LogStore and checkpoint file manager into the cache
    (their classes in the jar); later runs find it there with neither javac nor Maven on
    the PATH. (The jar lists resolved at setup are copied into the test's cache: resolving
    them again is Maven's work.)"""
    for listing in jvm._cache_dir().glob("*.classpath"):
        shutil.copy(listing, tmp_path)
    monkeypatch.setenv("KRAFTLAKE_JVM_CACHE", str(tmp_path))
    monkeypatch.delenv("JAVA_HOME", raising=False)
    jar = logstore.log_store_jar()
    assert Path(jar).parent == tmp_path
    for cls in (logstore.LOG_STORE_CLASS, logstore.CHECKPOINT_MANAGER_CLASS):
        assert f"{cls.replace('.', '/')}.class" in zipfile.ZipFile(jar).namelist(), cls
    monkeypatch.setenv("PATH", "/nonexistent")
    assert shutil.which("javac") is None
    assert logstore.log_store_jar() == jar
