"""`kraftlake upgrade --lake DIR`: rewrite a lake an older kraftlake wrote into this layout.

A job that finds a table laid out otherwise stops before its first commit and names this
command (`lake.upgrade`). Exit status 0 when the lake is in this version's layout afterwards
(also when it already was), 1 when a table could not be rewritten. A lake already in this
layout is told so from its tables' Delta metadata (`lake.deltalog`), without starting Spark.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING

import click

from .group import lake_config, lake_option, main, spark_options
from .render import print_table

if TYPE_CHECKING:
    from ..lake.deltalog import LakeLog

CURRENT = "is in this version's layout already: nothing to do"


def _current(log: LakeLog) -> bool:
    """Every table of the lake is in this version's layout (or absent), as its Delta
    metadata says, read without a JVM; False also when that cannot be told here
    (`UnreadableError`): Spark's look at the tables (`lake.upgrade`) decides then."""
    from ..lake.deltalog import UnreadableError
    from ..lake.schema import table_names

    try:
        return all(log.layout_problem(name) is None for name in table_names())
    except UnreadableError:
        return False


@main.command(epilog="""\b
Examples:
  kraftlake upgrade --lake lake          # once, after installing a kraftlake whose jobs
                                         # refuse the lake; no job may write it meanwhile""")
@lake_option
@spark_options
def upgrade(lake: str | None, master: str | None, conf_file: str | None) -> None:
    """Rewrite the lake's tables into the layout this version of kraftlake writes."""
    cfg = lake_config(conf_file, lake)  # before pyspark is loaded
    from ..lake.deltalog import LakeLog

    log = LakeLog(cfg.lake)
    if _current(log):
        print(f"{log.root} {CURRENT}")
        return
    from ..lake.delta import Lake
    from ..lake.maintain import MaintenanceError
    from ..lake.upgrade import upgrade as run
    from ..spark import get_spark

    lk = Lake(cfg.lake, get_spark(cfg, master=master)).require()
    t0 = time.time()
    try:
        done = run(lk)
    except MaintenanceError as e:
        raise click.ClickException(str(e)) from None
    if not done:
        print(f"{lk.root} {CURRENT}")
        return
    print_table(("table", "partitioned by (before)", "partitioned by (now)", "rows"),
                [[u.table, ", ".join(u.before) or "-", ", ".join(u.after), str(u.rows)]
                 for u in done],
                title=f"upgraded {lk.root} in {time.time() - t0:.1f}s", right=("rows",))
