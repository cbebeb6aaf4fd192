"""The public API's reads of one cluster, as JSON: what `test_python_api.py` asks of a
Spark Connect session (this module run as a client process: `python -m tests.cli.api_reads
URL LAKE CLUSTER REPORT ABSENT_TABLE...`) and of the test worker's local session, to
compare the two.

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


def answers(spark: SparkSession, lake: str, cluster: str) -> dict:
    """`lake_events` and `lake_current` of `cluster`, as sorted JSON lines."""
    events = kraftlake.lake_events(spark, lake, cluster)
    current = kraftlake.lake_current(spark, lake, cluster)
    return {"events": sorted(json.dumps(e, default=str, sort_keys=True) for e in events),
            "current": sorted(json.dumps([*k, v], default=str, sort_keys=True)
                              for k, v in current.items())}


def served_answers(spark: SparkSession, lake: str, cluster: str, report: Path,
                   absent: list[str]) -> dict:
    """`answers`, the tables `absent` from the lake through `Lake.read` (row count and
    columns), and the page `write_report` writes to `report`."""
    opened = kraftlake.Lake(lake, spark)
    kraftlake.write_report(spark, opened, report, cluster_id=cluster)
    return {**answers(spark, lake, cluster), "report": report_page(report),
            "absent": {n: [(f := opened.read(spark, n)).count(), f.columns] for n in absent}}


if __name__ == "__main__":
    url, lake, cluster, out, *missing = sys.argv[1:]
    session = SparkSession.builder.remote(url).getOrCreate()
    print(json.dumps(served_answers(session, lake, cluster, Path(out), missing)))
