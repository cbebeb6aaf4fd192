"""Kafka's own `DumpLogSegments --cluster-metadata-decoder`, read back for comparison.

The harness runs Kafka's tool once over many files (one JVM start, not one per file) and
splits its output per file. This reader is deliberately independent of kraftlake's dump-text
parser (`kraftlake.codec.dumplog`): it keeps only what the comparison needs, each record's
offset and Kafka's JSON of it, so a mistake in kraftlake's parser cannot hide here.
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson

from .cluster import VERSIONS, run_tool

DUMP = "org.apache.kafka.tools.DumpLogSegments"
# the tool's class in each release the harness runs (3.x: the Scala tool in core)
DUMP_CLASSES = {VERSIONS[0]: DUMP, "3.9.1": "kafka.tools.DumpLogSegments"}
RECORD = re.compile(r"^\| offset: (\d+) .*? (payload|LeaderChange|SnapshotHeader|SnapshotFooter"
                    r"|KRaftVersion|KRaftVoters):? (\{.*)$")
# Kafka's names of control records -> the record type kraftlake names them by
CONTROL = {"LeaderChange": "LeaderChangeMessage", "SnapshotHeader": "SnapshotHeaderRecord",
           "SnapshotFooter": "SnapshotFooterRecord", "KRaftVersion": "KRaftVersionRecord",
           "KRaftVoters": "VotersRecord"}


@dataclass
class KafkaRecord:
    """One record as Kafka's tool printed it."""

    offset: int
    control: bool
    type: str  # kraftlake's spelling (PartitionChangeRecord, LeaderChangeMessage, ...)
    version: int | None  # None for control records (Kafka prints the version inside data)
    data: dict[str, Any]


@functools.cache
def type_name(kafka_type: str) -> str:
    """PARTITION_CHANGE_RECORD -> PartitionChangeRecord (Kafka's enum -> message name).
    Cached: a few dozen types name the real fixtures' 973,036 records (`parse` of their
    dump 4.4 -> 4.0 CPU s, 2026-12-02)."""
    return "".join(w.capitalize() for w in kafka_type.split("_")).replace("Kraft", "KRaft")


# Input from which Kafka's dump tool runs with C2 as well (tiered compilation): its 70 MB of
# real fixtures (973,036 records, 457 MB of text) took 12.7-14.0 CPU s so against 16.2-17.7
# with C1 alone (two runs each, 2026-11-27, loaded machine). The cluster's own files (under
# 1 MB) and the 3.9 picks (6 MB) keep C1 alone, like every other Kafka JVM here.
TIERED_FROM_BYTES = 32 * 1024 * 1024


def dump(files: list[Path], out: Path, version: str = VERSIONS[0]
         ) -> dict[Path, list[KafkaRecord]]:
    """Kafka's reading of `files`, per file; Kafka's text is kept in `out` (for the dump-text
    ingest test and for a human reading a failure)."""
    size = sum(f.stat().st_size for f in files)
    proc = run_tool(version, DUMP_CLASSES[version], "--cluster-metadata-decoder",
                    "--files", ",".join(str(f) for f in files), timeout=900,
                    c1_only=size < TIERED_FROM_BYTES)
    out.write_text(proc.stdout)
    return parse(proc.stdout)


def parse(text: str) -> dict[Path, list[KafkaRecord]]:
    per_file: dict[Path, list[KafkaRecord]] = {}
    current: list[KafkaRecord] = []
    for line in text.splitlines():
        if line.startswith("Dumping "):
            current = per_file.setdefault(Path(line.removeprefix("Dumping ").strip()), [])
            continue
        m = RECORD.match(line)
        if m is None:
            continue
        # orjson: the real fixtures' 973,036 JSON bodies in 1.8 CPU s, json's 3.2
        offset, kind, body = int(m.group(1)), m.group(2), orjson.loads(m.group(3))
        if kind == "payload":
            current.append(KafkaRecord(offset, False, type_name(body["type"]),
                                       body["version"], body["data"]))
        else:
            current.append(KafkaRecord(offset, True, CONTROL[kind], None, body))
    return per_file


def split_dump(text: str) -> dict[Path, str]:
    """Kafka's dump text of each file on its own (what a user would save as dump.txt)."""
    parts: dict[Path, list[str]] = {}
    name: Path | None = None
    for line in text.splitlines(keepends=True):
        if line.startswith("Dumping "):
            name = Path(line.removeprefix("Dumping ").strip())
            parts[name] = []
        if name is not None:
            parts[name].append(line)  # joined once: `+=` on a dict's string is quadratic
    return {n: "".join(lines) for n, lines in parts.items()}
