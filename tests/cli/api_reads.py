"""The public API's reads of one cluster, as JSON: what `test_python_api.py` asks of a
Spark Connect session (this module run as a client process: `python -m tests.cli.api_reads
URL LAKE CLUSTER REPORT`) and of the test worker's local session, to compare the two.

Kept apart from the test module so the client process imports kraftlake and pyspark alone,
not the tests' fixtures and their settings."""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

from pyspark.sql import SparkSession

import kraftlake


def report_page(path: Path) -> str:
    """A report's HTML less the time it was generated."""
    return re.sub(r"Generated [^;<]* UTC", "", path.read_text(encoding="utf-8"))


def answers(spark: SparkSession, lake: str, cluster: str, report: Path | None) -> dict:
    """`lake_events`, `lake_current`, every table through `Lake.read` (row count and columns:
    a table the lake has not got is an empty frame of its schema) and, given a path, the page
    `write_report` writes there."""
    opened = kraftlake.Lake(lake, spark)
    tables = {}
    for name in kraftlake.table_names():
        frame = opened.read(spark, name)
        tables[name] = [frame.count(), frame.columns]
    events = kraftlake.lake_events(spark, lake, cluster)
    current = kraftlake.lake_current(spark, lake, cluster)
    out = {"tables": tables,
           "events": sorted(json.dumps(e, default=str, sort_keys=True) for e in events),
           "current": sorted(json.dumps([*k, v], default=str, sort_keys=True)
                             for k, v in current.items())}
    if report is not None:
        kraftlake.write_report(spark, opened, report, cluster_id=cluster)
        out["report"] = report_page(report)
    return out


if __name__ == "__main__":
    url, lake, cluster, out = sys.argv[1:5]
    session = SparkSession.builder.remote(url).getOrCreate()
    print(json.dumps(answers(session, lake, cluster, Path(out))))
