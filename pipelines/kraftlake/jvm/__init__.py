"""JVM jars kraftlake needs, pinned in small poms and resolved once from Maven Central.

A pom (`<name>.pom.xml` beside this file, or any pom a test brings) names the artifacts;
`resolve` asks the machine's Maven for their classpath, which downloads them into Maven's
local repository (`~/.m2`) the first time, and keeps the list of jar paths under
`~/.cache/kraftlake/jvm/` keyed by the pom's hash. Every later call reads that list: a run
after setup needs no network and no Maven. `python -m kraftlake.jvm` resolves the sets the
lake needs (demo.sh and test.sh run it at setup).

Under `spark-submit --packages io.delta:...` (a cluster) Spark brings the jars itself and
the session factory adds none.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
from pathlib import Path

POMS = Path(__file__).resolve().parent
LAKE_SETS = ("delta", "s3")  # what `python -m kraftlake.jvm` resolves


class JarResolutionError(RuntimeError):
    """A pinned jar set could not be resolved; the message is one line naming the remedy."""


def _cache_dir() -> Path:
    base = os.environ.get("KRAFTLAKE_JVM_CACHE") or Path.home() / ".cache" / "kraftlake" / "jvm"
    return Path(base)


def _pom_path(name: str) -> Path:
    return POMS / f"{name}.pom.xml"


def _artifacts(pom: Path) -> str:
    """`group:artifact:version` of each dependency the pom names (for error messages)."""
    import xml.etree.ElementTree as ET

    ns = {"m": "http://maven.apache.org/POM/4.0.0"}
    out = []
    for d in ET.parse(pom).getroot().findall("m:dependencies/m:dependency", ns):
        out.append(":".join(d.findtext(f"m:{k}", "", ns) for k in
                            ("groupId", "artifactId", "version")))
    return ", ".join(out)


def resolve(pom: str | Path) -> list[str]:
    """Absolute paths of the jars of `pom` (a set name like "delta", or a pom file)."""
    pom = Path(pom) if str(pom).endswith(".xml") else _pom_path(str(pom))
    digest = hashlib.sha256(pom.read_bytes()).hexdigest()[:16]
    listing = _cache_dir() / f"{pom.name.removesuffix('.xml')}-{digest}.classpath"
    if listing.is_file():
        jars = listing.read_text().split(os.pathsep)
        if all(Path(j).is_file() for j in jars):
            return jars
    mvn = shutil.which("mvn")
    if mvn is None:
        raise JarResolutionError(
            f"cannot resolve {_artifacts(pom)}: Maven (mvn) is not on the PATH; install it, "
            f"or give Spark the jars yourself (spark.jars in the conf, or spark-submit "
            f"--packages)")
    listing.parent.mkdir(parents=True, exist_ok=True)
    tmp = listing.with_suffix(".tmp")
    proc = subprocess.run(
        [mvn, "-q", "-B", "-f", str(pom), "dependency:build-classpath",
         "-Dmdep.includeScope=runtime", f"-Dmdep.outputFile={tmp}"],
        capture_output=True, text=True)
    if proc.returncode != 0 or not tmp.is_file():
        lines = (proc.stdout + proc.stderr).splitlines()
        why = next((ln.strip() for ln in lines if "Could not" in ln or "ERROR" in ln),
                   f"mvn exited with {proc.returncode}")
        raise JarResolutionError(
            f"cannot resolve {_artifacts(pom)} from Maven Central: {why[:300]} "
            f"(offline: give Spark the jars with spark.jars in the conf, or spark-submit "
            f"--packages)")
    tmp.replace(listing)
    return listing.read_text().split(os.pathsep)


def main(argv: list[str]) -> int:
    """`python -m kraftlake.jvm`: resolve the jar sets named (none: `LAKE_SETS`), a line per set
    with its number of jars. Returns the exit status: 1, with the error on stderr, at the first set
    that cannot be resolved, else 0."""
    for name in argv or LAKE_SETS:
        try:
            jars = resolve(name)
        except JarResolutionError as exc:
            print(f"kraftlake: {exc}", file=sys.stderr)
            return 1
        print(f"{name}: {len(jars)} jars resolved")
    return 0
