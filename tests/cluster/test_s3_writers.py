"""Two writer processes committing to one `s3a://` lake at the same moment (moto's server on
loopback): two real logs of two clusters, each ingested in two increments by a
`kraftlake` process of its own, both processes started together. No commit is lost: every
increment's progress row is in the lake, every table's Delta log runs 0..N without a hole,
and each cluster's rows equal its own one-shot ingest into a local lake, in every table.

Left to chance, the two processes rarely create the same commit file in the same few
milliseconds; `CommitRace` makes them: a proxy in front of the store holds one process's PUT
of an `ingest_progress` commit until the other process PUTs the same version, as two
writers that both found it free do. With delta-storage's default s3a LogStore both PUTs
succeed, the second replaces the first, and a commit is lost (the test fails: run it with
KRAFTLAKE_TEST_S3_LOG_STORE=io.delta.storage.S3SingleDriverLogStore to see it); with
kraftlake's (`jvm/logstore.py`) the store refuses the second with 412 and Delta commits it
again as the next version.

Its time: the two processes 104-135 s of wall time, the reference ingests 10-40 s (two
cores shared with other work, load 4-12, 2026-12-02), most of it the JVMs' starts and the
ingests' requests to the store; no held PUT waited out its 30 s."""

from __future__ import annotations

import json
import os
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import deltalake
import pyarrow.fs as pafs
import pytest
import yaml

from kraftlake.lake.delta import Lake
from kraftlake.lake.schema import table_names
from kraftlake.sources.files import find_log_dirs, read_cluster_id
from tests.cluster.conftest import cli_commands
from tests.cluster.servers import CommitRace, s3_server, store_fs
from tests.conftest import cli_env
from tests.lake_rows import comparable, table_rows
from tests.lakes import ingested_once
from tests.logs import BUSY, BUSY_CUTS, TINY, growing_copy

# two clusters (two cluster ids), each cut before this batch: two increments each
LOGS = {BUSY: BUSY_CUTS[:1], TINY: (3,)}
TABLES = [n for n in table_names() if n != "ingest_progress"]
LAKE = "s3a://kraftlake/lake"
# a LogStore class the processes are given instead of the one the session factory names
# (the test's own demonstration that it can fail; see the module's docstring)
LOG_STORE_ENV = "KRAFTLAKE_TEST_S3_LOG_STORE"


@pytest.fixture(scope="module")
def store(tmp_path_factory):
    """moto's S3 server with an empty bucket; yields its AWS environment."""
    with s3_server(tmp_path_factory.mktemp("s3-writers")) as env:
        fs = store_fs(env)
        fs.create_dir("kraftlake")
        yield env


def _increments(log: Path, cuts: tuple[int, ...], dest: Path) -> list[Path]:
    """Copies of `log` as it stood before each cut batch and at its end, one directory
    each: the log as scheduled runs saw it grow."""
    grown, seg, full, batches = growing_copy(log, dest / "full")
    out = []
    for k, end in enumerate([batches[i].position for i in cuts] + [len(full)]):
        seg.write_bytes(full[:end])
        out.append(growing_copy(grown, dest / f"run-{k}")[0])
    return out


def _s3_dicts(env: dict[str, str], name: str) -> list[dict]:
    """The rows of table `name` of the lake on the store, read by delta-rs."""
    uri = f"{LAKE.replace('s3a://', 's3://')}/{name}"
    options = {**{k: v for k, v in env.items() if k.startswith("AWS_")},
               "AWS_ALLOW_HTTP": "true"}
    if not deltalake.DeltaTable.is_deltatable(uri, options):
        return []
    return deltalake.DeltaTable(uri, storage_options=options).to_pyarrow_table().to_pylist(
        maps_as_pydicts="strict")


def _versions(env: dict[str, str], name: str) -> list[int]:
    """The versions of the commit files in table `name`'s Delta log on the store."""
    infos = store_fs(env).get_file_info(
        pafs.FileSelector(f"kraftlake/lake/{name}/_delta_log", allow_not_found=True))
    return sorted(int(Path(i.path).stem) for i in infos if i.path.endswith(".json"))


def _log_store_env(env: dict[str, str], work: Path) -> dict[str, str]:
    """`env` with its configuration naming the LogStore of $KRAFTLAKE_TEST_S3_LOG_STORE,
    if set (the processes' own configuration file otherwise)."""
    named = os.environ.get(LOG_STORE_ENV)
    if not named:
        return env
    conf = yaml.safe_load(Path(env["KRAFTLAKE_CONF"]).read_text()) or {}
    conf.setdefault("spark", {}).setdefault("conf", {})["spark.delta.logStore.s3a.impl"] = named
    (work / "log-store.yaml").write_text(yaml.safe_dump(conf))
    return {**env, "KRAFTLAKE_CONF": str(work / "log-store.yaml")}


def test_two_writer_processes_lose_no_commit(store, spark, cfg_factory, tmp_path,
                                             tmp_path_factory) -> None:
    """Both processes complete, the proxy raced at least one commit between them, and the
    lake holds every increment of both clusters (see the module's docstring)."""
    runs = {read_cluster_id(find_log_dirs(str(log))[0]):
            _increments(log, cuts, tmp_path / f"log-{n}")
            for n, (log, cuts) in enumerate(LOGS.items())}
    # each log whole, ingested alone (the last of its copies holds all of it)
    own = {read_cluster_id(find_log_dirs(str(log))[0]):
           Lake(ingested_once(spark, cfg_factory, tmp_path_factory, log)) for log in LOGS}
    assert list(own) == list(runs)

    started = time.monotonic()
    with CommitRace(store["AWS_ENDPOINT_URL"], "ingest_progress") as race, \
            ThreadPoolExecutor(len(runs)) as pool:
        env = _log_store_env(cli_env(**{**store, "AWS_ENDPOINT_URL": race.url}), tmp_path)
        jobs = []
        for n, dirs in enumerate(runs.values()):
            (tmp_path / f"proc-{n}").mkdir()
            jobs.append(pool.submit(cli_commands, [
                ["ingest", str(d), "--lake", LAKE, "--master", "local[2]"] for d in dirs],
                tmp_path / f"proc-{n}", env))
        done = []
        for job in jobs:
            done.append(job.result())
            print(f"writer process {len(done)}: {time.monotonic() - started:.1f} s")
    print(f"raced {race.raced}, waited alone {race.alone}")

    for runs_of_one in done:
        for r in runs_of_one:
            assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-3000:]
    assert race.raced, f"no commit was raced (waited alone: {race.alone})"
    progress = _s3_dicts(store, "ingest_progress")
    for cid in runs:
        assert sum(p["cluster_id"] == cid for p in progress) == len(runs[cid]), (cid, progress)
    for name in [*TABLES, "ingest_progress"]:
        versions = _versions(store, name)
        assert versions == list(range(len(versions))), (name, versions)
    for name in TABLES:
        rows = _s3_dicts(store, name)
        for cid, lake in own.items():
            mine = sorted(json.dumps(comparable(name, r), default=str, sort_keys=True)
                          for r in rows if r.get("cluster_id") == cid)
            assert mine == table_rows(lake, name), (name, cid)
