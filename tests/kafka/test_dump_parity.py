"""Every record kraftlake decodes equals what Kafka's own `kafka-dump-log` prints.

Two sets of files: everything the test cluster's controller wrote (segments and snapshots,
after the incident scenario) and every real file (`tests/data/kraft-real/` and, when present,
its extension: tests/conftest.py). Kafka's `DumpLogSegments --cluster-metadata-decoder`
reads each set in one JVM; kraftlake's codec reads each file as `kraftlake decode --jsonl`
does. Compared per record: offset, control flag, record type, version and every payload
field Kafka prints (Kafka's camelCase names against kraftlake's snake_case ones). Kafka
omits tagged fields that hold their default; kraftlake keeps them, so a field only kraftlake
has must hold the default of kraftlake's schema and be tagged there. Secrets kraftlake
redacts are counted, not compared.

Then the dump-text ingest: kraftlake reading Kafka's own dump text of a file gives the same
records as kraftlake reading the file's bytes.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

from kraftlake.codec.logfiles import iter_path
from kraftlake.codec.records import Record
from kraftlake.codec.schema import registry
from tests.codec.test_dumplog import SEGMENTS
from tests.conftest import ROOTS, real, real_files, rel

from .dumplog import KafkaRecord, dump, split_dump
from .scenario import Incidents

REDACTED = "[redacted]"


def snake(name: str) -> str:
    return re.sub(r"(?<=[a-z0-9])(?=[A-Z])", "_", name).lower()


def kraftlake_records(path: Path) -> list[Record]:
    problems: list[Any] = []
    return list(iter_path(path, problems))


# Kafka's defaults of a field whose schema names none (its generator's rule)
TYPE_DEFAULTS = {"int8": 0, "int16": 0, "uint16": 0, "int32": 0, "int64": 0, "float64": 0.0,
                 "bool": False, "string": "", "uuid": "AAAAAAAAAAAAAAAAAAAAAA"}


def _tagged_default(rtype: str, field: str, value: Any) -> bool:
    """Is `field` tagged and `value` its default, i.e. may Kafka's JSON leave it out?"""
    schema = registry().by_name.get(rtype)
    for f in schema.fields if schema else ():
        if f.key == field:
            default = f.default if f.has_default else TYPE_DEFAULTS.get(f.type)
            return f.tagged is not None and value == default
    return False


def diff(kafka: Any, ours: Any, where: str, rtype: str, version: int | None,
         redacted: list[str]) -> list[str]:
    """Differences between Kafka's JSON of a value and kraftlake's, as readable lines."""
    if isinstance(kafka, dict) and isinstance(ours, dict):
        out = []
        for key, value in kafka.items():
            name = snake(key)
            if name not in ours:
                out.append(f"{where}.{name}: Kafka {value!r}, kraftlake has no such field")
                continue
            out += diff(value, ours[name], f"{where}.{name}", rtype, version, redacted)
        seen = {snake(k) for k in kafka}
        for name, value in ours.items():
            if name not in seen and value is not None and not (
                    where == "data" and _tagged_default(rtype, name, value)):
                out.append(f"{where}.{name}: kraftlake {value!r}, Kafka prints nothing")
        return out
    if isinstance(kafka, list) and isinstance(ours, list) and len(kafka) == len(ours):
        return [d for i, (k, o) in enumerate(zip(kafka, ours, strict=True))
                for d in diff(k, o, f"{where}[{i}]", rtype, version, redacted)]
    if kafka != ours:
        if ours in (REDACTED, "") and kafka not in (REDACTED, ""):
            redacted.append(where)
            return []
        return [f"{where}: Kafka {kafka!r}, kraftlake {ours!r}"]
    return []


def compare(path: Path, theirs: list[KafkaRecord], redacted: list[str]) -> list[str]:
    ours = kraftlake_records(path)
    problems = []
    if [r.offset for r in ours] != [r.offset for r in theirs]:
        return [f"{path}: offsets differ: kraftlake {len(ours)} records "
                f"{[r.offset for r in ours][:5]}..., Kafka {len(theirs)} "
                f"{[r.offset for r in theirs][:5]}..."]
    for mine, k in zip(ours, theirs, strict=True):
        at = f"{path.name}@{mine.offset}"
        if (mine.control, mine.type) != (k.control, k.type):
            problems.append(f"{at}: Kafka {k.type} control={k.control}, "
                            f"kraftlake {mine.type} control={mine.control}")
            continue
        if not k.control and mine.version != k.version:
            problems.append(f"{at}: {k.type} version Kafka {k.version} kraftlake {mine.version}")
        data = dict(mine.data or {})
        if k.control:  # Kafka prints a control record's own version inside its JSON
            data.setdefault("version", mine.version)
        problems += [f"{at} {k.type}: {d}"
                     for d in diff(k.data, data, "data", k.type, mine.version, redacted)]
    return problems


def check_all(files: list[Path], kafka_view: dict[Path, list[KafkaRecord]]) -> tuple[int, int]:
    """Compares every file; returns (files, records) compared. Fails listing differences."""
    redacted: list[str] = []
    problems: list[str] = []
    records = 0
    for f in files:
        theirs = kafka_view.get(f)
        assert theirs is not None, f"Kafka printed nothing for {f}"
        records += len(theirs)
        problems += compare(f, theirs, redacted)
    assert not problems, f"{len(problems)} differences, first ones:\n" + "\n".join(problems[:40])
    print(f"\n{len(files)} files, {records} records equal to kafka-dump-log "
          f"({len(redacted)} redacted fields)")
    return len(files), records


@pytest.fixture(scope="package")
def cluster_dump(incidents: Incidents, tmp_path_factory: pytest.TempPathFactory
                 ) -> tuple[list[Path], dict[Path, list[KafkaRecord]], Path]:
    files = sorted(incidents.controller_log.iterdir())
    out = tmp_path_factory.mktemp("dump") / "cluster.txt"
    return files, dump(files, out, incidents.cluster.version), out


@pytest.fixture(scope="session")
def real_dump(tmp_path_factory: pytest.TempPathFactory
              ) -> tuple[list[Path], dict[Path, list[KafkaRecord]], Path]:
    files = real_files("segment") + real_files("snapshot") + real_files("bootstrap")
    every = {rel(p) for root in ROOTS for p in root.rglob("*")
             if p.suffix in (".log", ".checkpoint")}
    assert files and len(files) == len(every), "a real metadata file would go unchecked"
    out = tmp_path_factory.mktemp("dump") / "real.txt"
    return files, dump(files, out), out


def test_cluster_files_equal_kafka_dump_log(cluster_dump) -> None:
    files, view, _ = cluster_dump
    assert any(f.suffix == ".checkpoint" for f in files) and len(files) >= 3
    _, records = check_all(files, view)
    assert records > 100


def test_real_fixtures_equal_kafka_dump_log(real_dump) -> None:
    files, view, _ = real_dump
    check_all(files, view)


# The text path on the real fixtures: every snapshot and bootstrap file and every segment
# below this size (52 of 95 segments, 7.5 of 70 MB). The 43 larger segments are long runs of
# NoOp records whose text costs minutes to parse twice on 2 cores and adds no record kind the
# others lack; their bytes are compared with Kafka's dump above, every one of them.
TEXT_MAX_BYTES = 512 * 1024


@pytest.mark.parametrize("which", ["cluster_dump", "real_dump"])
def test_dump_text_ingest_of_kafkas_own_output(which: str, request: pytest.FixtureRequest,
                                               tmp_path: Path) -> None:
    """kraftlake reading Kafka's dump text == kraftlake reading the same file's bytes."""
    files, _, text = request.getfixturevalue(which)
    problems = []
    parts = split_dump(text.read_text())
    if which == "real_dump":
        parts = {n: p for n, p in parts.items() if Path(n).stat().st_size <= TEXT_MAX_BYTES}
        assert len(parts) == sum(f.stat().st_size <= TEXT_MAX_BYTES for f in files)
    for i, (name, part) in enumerate(parts.items()):
        dump_txt = tmp_path / f"{i}.txt"
        dump_txt.write_text(part)
        from_text = [(r.offset, r.type, r.version, r.data) for r in kraftlake_records(dump_txt)]
        from_bytes = [(r.offset, r.type, r.version, r.data) for r in kraftlake_records(name)]
        if from_text != from_bytes:
            first = next((a, b) for a, b in zip(from_text + [None] * len(from_bytes),
                                                from_bytes + [None] * len(from_text),
                                                strict=False) if a != b)
            problems.append(f"{name}: {len(from_text)} records from text, "
                            f"{len(from_bytes)} from bytes; first difference {first}")
    assert not problems, "\n".join(problems[:20])


@pytest.fixture(scope="session")
def real_dump_39(tmp_path_factory: pytest.TempPathFactory) -> dict[Path, str]:
    """Kafka 3.9.1's own dump text of the real files tests/codec/test_dumplog.py picked
    (segments of 3.0- to 4.1-era clusters, a snapshot, a bootstrap file), per file."""
    files = [real(p) for p in SEGMENTS.values()]
    out = tmp_path_factory.mktemp("dump39") / "real.txt"
    dump(files, out, "3.9.1")
    return split_dump(out.read_text())


def test_dump_text_of_kafka_39_parses_to_the_bytes(real_dump_39, tmp_path: Path) -> None:
    """The 3.9 line's text (Scala DumpLogSegments: no LeaderChange contents before 4.1,
    SnapshotHeader/Footer and KRaftVersion/Voters printed) as kraftlake parses it == the
    same file's bytes; a LeaderChange keeps its offset and type, without contents. (The 4.x
    text is held against the bytes by test_dump_text_ingest_of_kafkas_own_output.)"""
    assert len(real_dump_39) == len(SEGMENTS)
    leader_changes = 0
    for i, (name, part) in enumerate(real_dump_39.items()):
        text = tmp_path / f"{i}.txt"
        text.write_text(part)
        from_text, from_bytes = kraftlake_records(text), kraftlake_records(name)
        assert [(r.offset, r.type, r.control) for r in from_text] == \
            [(r.offset, r.type, r.control) for r in from_bytes], name
        for t, b in zip(from_text, from_bytes, strict=True):
            if t.type == "LeaderChangeMessage":
                assert t.data is None and t.error, (name, t.offset)
                leader_changes += 1
                continue
            assert (t.version, t.data) == (b.version, b.data), (name, t.offset)
    assert leader_changes > 0
