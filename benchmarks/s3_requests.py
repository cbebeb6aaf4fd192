"""Requests each command sends to an S3-compatible store for an `s3a://` lake, by kind.

    .venv/bin/python benchmarks/s3_requests.py [--before DIR]

On a real object store every request is a round trip of tens of milliseconds, and a LIST or
a copy costs more than a GET, so the number of requests is what an increment's fixed cost
on S3 is made of; the local store counts them exactly where timing it would not. moto's
server (the one the suite's S3 tests start) runs on loopback; `examples/real-3-broker` is
uploaded to it, and each command runs in a new `kraftlake` process with the suite's Spark
settings (`tests/conftest.py` SHORT_JOB_CONF), one after the other:

1. `ingest` of the log into a new lake;
2. `ingest` of the same log again (nothing new);
3. `stream --available-now` of the log into a second new lake;
4. `sql` of one statement on the first lake.

For each, moto's log gives the requests it served: HEADs and GETs of objects, LISTs (the
`max-keys=2` ones are S3A's probes of whether a path is a directory), PUTs (a rename's copy
is one too) and DELETEs. `--before DIR`: the `pipelines/` of an
earlier commit (`git archive COMMIT pipelines | tar -x -C DIR`), run through PYTHONPATH in
the same virtual environment against a store of its own, after this checkout's run. Prints
figures; asserts nothing.
"""

from __future__ import annotations

import argparse
import collections
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

import pyarrow.fs as pafs
import yaml

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))  # the suite's S3 server and Spark settings

from tests.cluster.servers import s3_server, store_fs  # noqa: E402
from tests.conftest import SHORT_JOB_CONF  # noqa: E402

LOG = REPO / "examples" / "real-3-broker"
SQL = "SELECT count(*) FROM partition_events"
COMMANDS = {
    "ingest (first)": ["ingest", "s3a://kraftlake/logs/real-3-broker", "--lake",
                       "s3a://kraftlake/lake"],
    "ingest (nothing new)": ["ingest", "s3a://kraftlake/logs/real-3-broker", "--lake",
                             "s3a://kraftlake/lake"],
    "stream --available-now": ["stream", "s3a://kraftlake/logs/real-3-broker", "--lake",
                               "s3a://kraftlake/streamed", "--available-now"],
    "sql": ["sql", SQL, "--lake", "s3a://kraftlake/lake"],
}
_REQUEST = re.compile(r'"(GET|HEAD|PUT|POST|DELETE) (\S+) HTTP/1\.1" (\d+)')


def kind(method: str, target: str) -> str:
    """A request's kind: LIST (with its max-keys), an object's HEAD / GET / PUT / DELETE."""
    if "list-type=" in target:
        keys = re.search(r"max-keys=(\d+)", target)
        return f"LIST (max-keys={keys[1] if keys else 'default'})"
    return method


def served(log: Path, start: int) -> tuple[collections.Counter, int]:
    """The requests moto's log holds after byte `start`, by kind, and the log's end."""
    data = log.read_bytes()
    text = re.sub(r"\x1b\[[0-9;]*m", "", data[start:].decode(errors="replace"))
    return collections.Counter(kind(m[1], m[2]) for m in _REQUEST.finditer(text)), len(data)


def run(code: Path | None, work: Path) -> dict[str, collections.Counter]:
    """Each command's requests, with this checkout (`code` None) or the `pipelines/` `code`."""
    conf = work / "conf.yaml"
    conf.write_text(yaml.safe_dump({"spark": {"master": "local[2]", "conf": SHORT_JOB_CONF},
                                    "stream": {"noop_every": 0}}))
    out: dict[str, collections.Counter] = {}
    with s3_server(work) as env:
        fs = store_fs(env)
        fs.create_dir("kraftlake")
        pafs.copy_files(str(LOG), "kraftlake/logs/real-3-broker", destination_filesystem=fs)
        full = {**os.environ, **env, "KRAFTLAKE_CONF": str(conf),
                "KRAFTLAKE_STATE_DIR": str(work / "state")}
        if code is not None:
            full["PYTHONPATH"] = os.pathsep.join(filter(None, [str(code),
                                                               full.get("PYTHONPATH")]))
        _, end = served(work / "moto.log", 0)
        for name, args in COMMANDS.items():
            proc = subprocess.run([sys.executable, "-m", "kraftlake", *args], env=full,
                                  capture_output=True, text=True, check=False)
            if proc.returncode != 0:
                raise SystemExit(f"{name} exited with {proc.returncode}:\n{proc.stderr[-2000:]}")
            out[name], end = served(work / "moto.log", end)
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--before", type=Path, help="pipelines/ of the commit to compare with")
    args = ap.parse_args()
    runs = {"this checkout": None}
    if args.before is not None:
        runs["before"] = args.before.resolve()
    for label, code in runs.items():
        with tempfile.TemporaryDirectory(prefix="s3-requests-") as tmp:
            counts = run(code, Path(tmp))
        print(f"{label}:")
        for name, c in counts.items():
            detail = ", ".join(f"{k} {n}" for k, n in c.most_common())
            print(f"  {name:24} {sum(c.values()):5d} requests: {detail}")


if __name__ == "__main__":
    main()
