"""The public Python API (`kraftlake/__init__.py`) on both kinds of Spark session, over the
read commands' simulated lake (`sim_lake`):

* examples/kraftlake-api.ipynb run in a Jupyter kernel (nbclient), once with a local
  SparkSession the notebook starts and once as a Spark Connect client of `kraftlake serve`
  (`server`), as a notebook user connects; what it computed is held against the lake as
  delta-rs reads it;
* `lake_events` and `lake_current` through a Connect session equal the same calls on the
  test worker's local session, `write_report`'s page equals `kraftlake report --lake`'s, and
  `Lake.read` of a table the lake has not got is an empty frame of its columns.

Connect clients run as processes of their own (the kernel, `api_reads.py`): a Connect
session in the test process would switch pyspark into Connect mode for the worker's later
tests (test_serve.py).
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from collections import Counter
from pathlib import Path

import nbformat
from nbclient import NotebookClient

from kraftlake.lake.delta import Lake
from kraftlake.lake.schema import table_names, table_schema
from tests.cli.api_reads import answers
from tests.conftest import REPO, cli_env
from tests.lake_rows import row_count, table_dicts

NOTEBOOK = REPO / "examples" / "kraftlake-api.ipynb"

# Appended to the notebook's cells when a test runs it: what it computed, as one JSON line,
# and whether a JVM runs in the kernel (py4j's gateway is what a local session launches)
_SUMMARY = textwrap.dedent("""
    import json
    from pyspark import SparkContext
    print(json.dumps({
        "cluster": CLUSTER, "incidents": incidents.incident_id.tolist(),
        "events": dict(Counter(e["event_type"] for e in events)),
        "partition": [topic, partition], "timeline": timeline.valid_from_offset.tolist(),
        "leader": int(current["leader"]), "traces": [t.name for t in fig.data],
        "marked": len(fig.data[-1].x), "jvm": SparkContext._gateway is not None}))
""")


def _cluster(lake: Path) -> str:
    (cluster,) = {r["cluster_id"] for r in table_dicts(lake / "ingest_progress", ["cluster_id"])}
    return cluster


def _run_notebook(cwd: Path, **env: str) -> dict:
    """The notebook run in a new kernel in `cwd`, `env` added to its environment; its
    summary."""
    nb = nbformat.read(NOTEBOOK, as_version=4)
    nb.cells.append(nbformat.v4.new_code_cell(_SUMMARY))
    NotebookClient(nb, timeout=600, kernel_name="python3").execute(cwd=str(cwd),
                                                                   env=cli_env(**env))
    # the summary is what the cell prints on stdout (one JSON document, which the kernel
    # may hand over in more than one stream message); stderr (a warning of Spark's) is not
    outputs = nb.cells[-1].outputs
    text = "".join(o.text for o in outputs if o.output_type == "stream" and o.name == "stdout")
    assert text.strip(), outputs
    return json.loads(text)


def test_the_example_notebook_on_a_local_session(sim_lake, tmp_path) -> None:
    got = _run_notebook(tmp_path, KRAFTLAKE_LAKE=str(sim_lake[0]))
    assert got["jvm"]
    _check_notebook(got, sim_lake[0])


def test_the_example_notebook_through_spark_connect(server, sim_lake, tmp_path) -> None:
    got = _run_notebook(tmp_path, KRAFTLAKE_LAKE=str(sim_lake[0]), SPARK_REMOTE=server)
    assert not got["jvm"]
    _check_notebook(got, sim_lake[0])


def _check_notebook(got: dict, lake: Path) -> None:
    """What the notebook computed is what delta-rs reads in the lake."""
    cluster = _cluster(lake)
    of_cluster = [("cluster_id", "=", cluster)]
    incidents = table_dicts(lake / "incidents", ["incident_id", "start_offset"], of_cluster)
    events = table_dicts(lake / "partition_events",
                         ["event_type", "topic_name", "partition_id"], of_cluster)
    assert got["cluster"] == cluster
    assert len(incidents) > 1 and got["incidents"] == [
        i["incident_id"] for i in sorted(incidents, key=lambda i: i["start_offset"])]
    assert got["events"] == dict(Counter(e["event_type"] for e in events))

    # the partition with the most events, its states oldest first, its leader now
    topic, partition = got["partition"]
    per_partition = Counter((e["topic_name"], e["partition_id"]) for e in events)
    assert per_partition[(topic, partition)] == max(per_partition.values())
    states = table_dicts(lake / "partition_timeline", ["valid_from_offset", "seq"],
                         [*of_cluster, ("topic_name", "=", topic),
                          ("partition_id", "=", partition)])
    assert len(states) > 2 and got["timeline"] == [
        s["valid_from_offset"] for s in sorted(states, key=lambda s: (s["valid_from_offset"],
                                                                      s["seq"]))]
    (now,) = table_dicts(lake / "partition_current", ["leader"],
                         [*of_cluster, ("topic_name", "=", topic),
                          ("partition_id", "=", partition)])
    assert got["leader"] == now["leader"]
    assert got["traces"] == ["ISR", "ELR", "unclean election"]
    assert got["marked"] == sum(1 for e in events if e["event_type"] == "unclean_election"
                                and (e["topic_name"], e["partition_id"]) == (topic, partition))


def test_the_public_reads_through_spark_connect_equal_a_local_session(
        server, sim_lake, spark, local_report, tmp_path) -> None:
    lake = sim_lake[0]
    cluster = _cluster(lake)
    absent = [n for n in table_names() if not Lake(lake, spark).exists(n)]
    assert absent, "every table exists: the empty frame of a missing one is not exercised"
    client = subprocess.run(
        [sys.executable, "-m", "tests.cli.api_reads", server, str(lake), cluster,
         str(tmp_path / "report.html"), *absent],
        cwd=REPO, capture_output=True, text=True, env=cli_env(), timeout=600)
    assert client.returncode == 0, client.stderr[-3000:]
    remote = json.loads(client.stdout)

    assert remote.pop("report") == local_report  # `kraftlake report --lake`'s page
    assert "unclean" in local_report
    assert remote.pop("absent") == {n: [0, table_schema(n).names] for n in absent}
    assert remote == answers(spark, str(lake), cluster)
    assert len(remote["events"]) == row_count(lake / "partition_events") > 0
    assert len(remote["current"]) == row_count(lake / "partition_current") > 0
