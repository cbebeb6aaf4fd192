"""A user topic's partition directory is never read into the lake (issue 13, part 3).

The session's cluster produced messages to topic `orders` (scenario.py): broker 2's
`orders-0` holds real segment bytes of user data, written by Kafka. Given to `kraftlake
ingest` or `stream` (under its own name, or renamed to look like the metadata log), it is
refused before Spark starts and before anything is written; given after the cluster's real
metadata log in one run, the metadata log is ingested, `orders-0` is reported, and not one
byte of its payloads is in any table.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import deltalake
import pyarrow as pa
import pyarrow.compute as pc
import pytest
from click.testing import CliRunner

from kraftlake.cli import main
from kraftlake.codec.batch import Batch, scan_batches
from tests.conftest import cli_env

from .scenario import Incidents


def run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["kraftlake", *args], capture_output=True, text=True, timeout=600,
                          check=False, env=cli_env(COLUMNS="250"))


@pytest.fixture(scope="module")
def orders(incidents: Incidents, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A copy of broker 2's `orders-0` (its segments, indexes and checkpoint files)."""
    src = incidents.cluster.nodes[2].data / "orders-0"
    # the cluster stopped after the scenario (conftest): nothing renames files under the copy
    dest = Path(shutil.copytree(src, tmp_path_factory.mktemp("user-topic") / "orders-0"))
    assert any(f.stat().st_size for f in dest.glob("*.log")), "orders-0 holds no data"
    return dest


def payloads(partition_dir: Path) -> list[bytes]:
    """The user payloads Kafka wrote in a partition directory (record values)."""
    out = []
    for seg in sorted(partition_dir.glob("*.log")):
        for item in scan_batches(seg.read_bytes(), seg.name):
            if isinstance(item, Batch) and not item.is_control:
                out += [r.value for r in item.records if r.value]
    return out


def refused_alone(out: subprocess.CompletedProcess[str], lake: Path, *needles: str) -> None:
    assert out.returncode == 2, out
    assert out.stdout == "" and "Traceback" not in out.stderr
    lines = out.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("Error: "), out.stderr
    for n in needles:
        assert n in lines[0], lines[0]
    assert not lake.exists()  # refused before anything was written


def test_a_user_topic_partition_is_refused_by_ingest_and_stream(
        incidents: Incidents, orders: Path, tmp_path: Path) -> None:
    lake, cid = tmp_path / "lake", incidents.cluster.cluster_id
    refused_alone(run("ingest", str(orders), "--lake", str(lake), "--cluster-id", cid),
                  lake, str(orders), "topic 'orders'", "not the KRaft metadata log")
    refused_alone(run("stream", str(orders), "--lake", str(lake), "--cluster-id", cid,
                      "--available-now"), lake, "topic 'orders'")
    # the same bytes under the metadata log's name (and a meta.properties beside them)
    disguised = tmp_path / "copy" / "__cluster_metadata-0"
    shutil.copytree(orders, disguised)
    (disguised.parent / "meta.properties").write_text(f"cluster.id={cid}\n")
    refused_alone(run("ingest", str(disguised), "--lake", str(lake)), lake,
                  "are not KRaft metadata records")
    refused_alone(run("stream", str(disguised), "--lake", str(lake), "--available-now"),
                  lake, "are not KRaft metadata records")


def test_after_the_metadata_log_the_user_topic_is_reported_and_none_of_it_is_kept(
        spark, incidents: Incidents, orders: Path, tmp_path: Path) -> None:
    """In this process, on the worker's session (see test_incidents.kraftlake)."""
    lake, cid = tmp_path / "lake", incidents.cluster.cluster_id
    out = CliRunner().invoke(main, ["ingest", str(incidents.controller_log), str(orders),
                                    "--lake", str(lake), "--cluster-id", cid],
                             env={"COLUMNS": "250"})
    assert out.exit_code == 1, (out.exception, out.output)  # one refused, the other ingested
    assert "Traceback" not in out.stderr
    table = out.stdout
    assert str(incidents.controller_log) in table and str(orders) in table
    assert "refused" in table
    assert f"Error: refused {orders}: the directory of partition 0 of topic 'orders'" \
        in out.stderr

    every = {t.name: deltalake.DeltaTable(str(t)).to_pyarrow_table()
             for t in sorted(lake.iterdir()) if (t / "_delta_log").is_dir()}
    records = every["records"]
    # the cluster's real metadata log went in whole: up to the end of the copy
    end = max(int(p.stem) for p in incidents.controller_log.glob("*.log"))
    assert pc.max(records["offset"]).as_py() >= end
    assert "orders-0" not in " ".join(
        str(v) for t in every.values() if "source_file" in t.column_names
        for v in pc.unique(t["source_file"]).to_pylist())
    # not one user payload, in any column of any table
    values = payloads(orders)
    # scenario.produce wrote 300 records of 100 bytes to the three partitions in turn
    assert values, "orders-0 holds no user records"
    needles = {v[:40] for v in values}
    for name, t in every.items():
        for col in t.column_names:
            arr = t[col]
            if pa.types.is_binary(arr.type) or pa.types.is_string(arr.type):
                kept = [x if isinstance(x, bytes) else x.encode() for x in arr.to_pylist()
                        if x is not None]
                leaked = [n for n in needles for x in kept if n in x]
                assert not leaked, f"{name}.{col} holds a payload of orders-0"
