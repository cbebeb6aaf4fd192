"""`python -m kraftlake.jvm [SET...]`: resolve the pinned jar sets once (setup), and build the
s3a lake's LogStore (`jvm/logstore.py`) with them; `s3-logstore` alone builds it and prints
its jar (what to give `spark-submit --jars`). Setup without a JDK's javac says so in one line
and succeeds: only an `s3a://` lake needs the LogStore, and its first job says the same."""

import sys

from . import JarResolutionError, main
from .logstore import log_store_jar

LOG_STORE_SET = "s3-logstore"


def _main(argv: list[str]) -> int:
    sets = [a for a in argv if a != LOG_STORE_SET]
    if (sets or not argv) and main(sets) != 0:
        return 1
    if not argv or LOG_STORE_SET in argv or "s3" in sets:  # setup (LAKE_SETS), or asked
        try:
            jar = log_store_jar()
        except JarResolutionError as exc:
            print(f"kraftlake: {exc}", file=sys.stderr)
            return 1 if argv else 0
        print(jar if LOG_STORE_SET in argv else f"{LOG_STORE_SET}: {jar}")
    return 0


sys.exit(_main(sys.argv[1:]))
