"""kraftlake's own JVM classes (the `.java` sources beside this file), compiled once into a
jar in kraftlake's JVM cache.

A jar is compiled by the JDK's `javac` against the jars the session runs with (Spark's own,
Hadoop's among them, and the pinned sets a source needs) and named by a digest of its
sources and of those jars: setup (`python -m kraftlake.jvm`) builds it, and every later
run finds it there (no compiler, no network).
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import tempfile
import zipfile
from pathlib import Path

from . import JarResolutionError, _cache_dir


def spark_jars() -> Path:
    """Spark's own jar directory (its Hadoop client among them)."""
    from pyspark.find_spark_home import _find_spark_home

    return Path(_find_spark_home()) / "jars"


def _javac() -> str | None:
    """The JDK's compiler: $JAVA_HOME/bin/javac, else the one on the PATH."""
    home = os.environ.get("JAVA_HOME")
    if home and (Path(home) / "bin" / "javac").is_file():
        return str(Path(home) / "bin" / "javac")
    return shutil.which("javac")


def compiled_jar(name: str, sources: tuple[Path, ...], deps: list[str], no_javac: str) -> str:
    """The path of jar `name`-<digest> of `sources` compiled against `deps` and Spark's jars,
    built now if the cache has none for these sources and jars. A one-line
    `JarResolutionError` when it cannot be (`no_javac`: what to say when there is no
    compiler)."""
    jars = spark_jars()
    digest = hashlib.sha256(b"".join(source.read_bytes() for source in sources))
    for jar_name in sorted([*deps, *(p.name for p in jars.glob("hadoop-*.jar"))]):
        digest.update(jar_name.encode())
    jar = _cache_dir() / f"{name}-{digest.hexdigest()[:16]}.jar"
    if jar.is_file():
        return str(jar)
    javac = _javac()
    if javac is None:
        raise JarResolutionError(f"cannot build {sources[0].name}: no javac; {no_javac}")
    jar.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=jar.parent) as tmp:
        classpath = os.pathsep.join([*deps, str(jars / "*")])
        proc = subprocess.run([javac, "--release", "17", "-nowarn", "-d", tmp,
                               "-cp", classpath, *map(str, sources)],
                              capture_output=True, text=True)
        if proc.returncode != 0:
            why = next((ln for ln in proc.stderr.splitlines() if "error" in ln),
                       f"javac exited with {proc.returncode}")
            raise JarResolutionError(f"cannot build {sources[0].name}: {why.strip()[:300]}")
        part = Path(tmp) / jar.name
        with zipfile.ZipFile(part, "w", zipfile.ZIP_DEFLATED) as out:
            for cls in sorted(Path(tmp).rglob("*.class")):
                out.write(cls, cls.relative_to(tmp).as_posix())
        part.replace(jar)
    return str(jar)
