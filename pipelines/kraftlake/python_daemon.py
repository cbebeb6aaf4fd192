"""Spark's Python daemon for the JVMs kraftlake launches, with pyspark imported from the
installed package instead of from the zip Spark puts first on the daemon's path.

Spark forks the Python workers that decode segments and run the kernel from a daemon, which
it starts with `$SPARK_HOME/python/lib/pyspark.zip` and `py4j-*-src.zip` first on
`PYTHONPATH`. Python cannot write bytecode beside modules it imports from a zip, so the
daemon compiled the pyspark modules it needs from source at every start, and each worker the
rest: importing `pyspark.daemon` took 0.61 CPU s from the zip against 0.11 s from the
installed package (whose bytecode pip writes at install, and `scripts/venv.sh` after uv's).
With this module a daemon took 0.13 CPU s instead of 0.58, a worker 0.13 instead of 0.26.
The daemons of Spark's data-source planning workers are not this setting's: Spark names
`pyspark.daemon` for them itself.

A pip-installed pyspark is its own `SPARK_HOME`: the zip inside it holds the same pyspark as
the package around it. Only then are the zips moved behind the installed packages; another
Spark distribution (`$SPARK_HOME` elsewhere) keeps its own order. Then pyspark's own daemon
runs, unchanged. `kraftlake.spark` names this module as `spark.python.daemon.module` for
local masters only: the executors of a cluster may run a Python without kraftlake installed
until a task ships it, and this module has to be importable before any task runs.
"""

from __future__ import annotations

import sys
from importlib.machinery import PathFinder
from pathlib import Path


def installed_first(path: list[str]) -> list[str]:
    """`path` with Spark's zips of the installed pyspark moved behind the installed packages
    (unchanged when pyspark is not installed, or its zips belong to another Spark)."""
    zips = [p for p in path if p.endswith(".zip")]
    rest = [p for p in path if p not in zips]
    spec = PathFinder.find_spec("pyspark", rest)
    if spec is None or spec.origin is None:
        return path
    home = Path(spec.origin).parent  # the installed package, a pip install's SPARK_HOME
    ours = [z for z in zips if Path(z).is_relative_to(home)]
    return [*[p for p in path if p not in ours], *ours] if ours else path


if __name__ == "__main__":
    sys.path[:] = installed_first(sys.path)
    from pyspark import daemon

    daemon.manager()
