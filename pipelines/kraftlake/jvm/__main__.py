"""`python -m kraftlake.jvm [SET...]`: resolve the pinned jar sets once (setup), and build
kraftlake's own classes with them: the s3a lake's LogStore (`jvm/logstore.py`) and the local
file system (`jvm/localfs.py`). `s3-logstore` or `local-fs` alone builds that jar and prints
it (what to give `spark-submit`: `--jars` for the LogStore, `--driver-class-path` with the
two settings `jvm/localfs.py` names for the file system). Setup without a JDK's javac says
so in one line and succeeds: only an `s3a://` lake needs the LogStore, and its first job
says the same; a session without the local file system's jar uses Hadoop's own."""

import sys
from collections.abc import Callable

from . import JarResolutionError, main
from .localfs import local_fs_jar
from .logstore import log_store_jar

BUILT: dict[str, Callable[[], str]] = {"s3-logstore": log_store_jar, "local-fs": local_fs_jar}


def _main(argv: list[str]) -> int:
    sets = [a for a in argv if a not in BUILT]
    if (sets or not argv) and main(sets) != 0:
        return 1
    asked = [a for a in argv if a in BUILT]
    if not argv:  # setup: the LAKE_SETS resolved, every jar built
        asked = list(BUILT)
    elif "s3" in sets and "s3-logstore" not in asked:
        asked.append("s3-logstore")
    for name in asked:
        try:
            jar = BUILT[name]()
        except JarResolutionError as exc:
            print(f"kraftlake: {exc}", file=sys.stderr)
            if argv:
                return 1
            continue
        print(jar if name in argv else f"{name}: {jar}")
    return 0


sys.exit(_main(sys.argv[1:]))
