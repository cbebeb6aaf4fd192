"""Records from the text that `kafka-dump-log.sh --cluster-metadata-decoder` prints.

Some users only have a text dump of their metadata log, not the segment files. This module
turns that text back into the same `Record` objects the binary reader produces, so every
later layer (bronze table, replay, DQ checks) cannot tell the two sources apart.

The format, as printed by Kafka's `DumpLogSegments` (`core/.../kafka/tools/DumpLogSegments.scala`
in 3.x-4.1, `tools/.../DumpLogSegments.java` later), one line per batch and per record:

    Dumping <file>
    Log starting offset: 0                      (segments; snapshots: "Snapshot end offset:
                                                  N, epoch: E"; bootstrap: "KRaft bootstrap
                                                  snapshot")
    baseOffset: 0 lastOffset: 2 count: 3 baseSequence: -1 lastSequence: -1 producerId: -1
      producerEpoch: -1 partitionLeaderEpoch: 1 isTransactional: false isControl: false
      deleteHorizonMs: OptionalLong.empty position: 0 CreateTime: 1700000000000 size: 80
      magic: 2 compresscodec: none crc: 123 isvalid: true         (one line; deleteHorizonMs
                                                                    only from 3.2)
    | offset: 0 CreateTime: 1700000000000 keySize: -1 valueSize: 21 sequence: -1
      headerKeys: [] payload: {"type":"TOPIC_RECORD","version":0,"data":{...}}
    | offset: 5 CreateTime: ... keySize: 4 valueSize: 19 sequence: -1 headerKeys: []
      LeaderChange: {...}            (control records: "SnapshotHeader {...}",
                                      "SnapshotFooter {...}" from 3.3, "KRaftVersion {...}",
                                      "KRaftVoters {...}" from 3.9, "LeaderChange: {...}"
                                      from 4.1; before that "controlType: LEADER_CHANGE(2)")
    Found 17 invalid bytes at the end of 00000000000000000000.log

The payload is `{"type": MetadataRecordType name, "version": N, "data": <generated
*JsonConverter output>}`; the converter writes fields in schema order, camelCase, only those
present in that version, tagged fields only when they differ from their default, uuids as
Kafka's base64 string, bytes as standard base64, nulls as JSON null. A payload Kafka could not
decode is printed as `Error at <offset>, skipping. <message>`. With `--skip-record-metadata`
the per-record prefix is dropped (`| payload: {...}`, or ` payload: {...}` in the Scala tool)
and control records print empty lines; offsets are then counted from the batch header.

Timestamps: the batch line prints the batch's max timestamp, which is what the binary reader
reports as `Record.timestamp`; record lines print base timestamp + delta (equal in KRaft,
where the delta is always 0). The batch's value is used and the record's is only a fallback.
"""

from __future__ import annotations

import base64
import binascii
import json
import os
import re
import struct
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any

from ..kraft.records import UNKNOWN_RECORD as UNKNOWN
from .errors import KraftCodecError
from .message import field_default
from .records import Record, encode_control_value, encode_metadata_value
from .redact import redact_in_place
from .schema import Field, RecordSchema, in_range, registry
from .wire import uuid_from_str


class DumpLogError(KraftCodecError):
    """A dump-log text that cannot be read at all (unreadable file, not text)."""


class _LineError(Exception):
    """Internal: why one line could not be turned into a record (becomes a DumpProblem)."""


@dataclass(frozen=True, slots=True)
class DumpProblem:
    """A line of a dump that was not turned into a record, and why; parsing went on."""

    source: str
    line: int  # 1-based line number in the text
    reason: str
    text: str = ""  # the start of the offending line, for the report

    def __str__(self) -> str:
        return f"{self.source or '<text>'}:{self.line}: {self.reason}"


@dataclass(slots=True)
class DumpResult:
    """Everything `read_dump_log` found in one text."""

    records: list[Record] = field(default_factory=list)
    problems: list[DumpProblem] = field(default_factory=list)


# ---------------------------------------------------------------- sniffing

_SNIFF_BYTES = 16 * 1024
_SNIFF_LINES = 40
_HEADER_STARTS = ("Dumping ", "Log starting offset: ", "Snapshot end offset: ",
                  "KRaft bootstrap snapshot")


def looks_like_dump_log(path_or_text: str | os.PathLike[str]) -> bool:
    """Whether a file (or a text) is kafka-dump-log output, judged from its first lines.

    Cheap on purpose: the CLI calls it on every input that is not a segment or snapshot.
    A `str` containing a newline is taken as the text itself, otherwise as a path.
    """
    if isinstance(path_or_text, str) and "\n" in path_or_text:
        head = path_or_text[:_SNIFF_BYTES]
    else:
        try:
            with open(path_or_text, "rb") as fh:
                raw = fh.read(_SNIFF_BYTES)
        except (OSError, ValueError):
            return False
        if b"\x00" in raw:  # segments and snapshots are binary; dumps never hold NULs
            return False
        head = raw.decode("utf-8", errors="replace")
    lines = [ln.strip("\r") for ln in head.splitlines()[:_SNIFF_LINES]]
    preamble = any(ln.startswith(_HEADER_STARTS) for ln in lines)
    batch = any(_BATCH_START.match(ln) and "isControl: " in ln for ln in lines)
    record = any(ln.startswith("| offset: ") for ln in lines)
    # Kafka's dump of an empty segment is its two preamble lines alone: a dump of no records
    empty = (len(lines) >= 2 and lines[0].startswith("Dumping ")
             and lines[1].startswith(_HEADER_STARTS[1:]) and not any(lines[2:]))
    return batch or (preamble and record) or empty


# ---------------------------------------------------------------- schemas


def _camel(name: str) -> str:
    """Kafka's `FieldSpec.camelCaseName()`: the schema name with its first letter lowered."""
    return name[:1].lower() + name[1:]


@cache
def _metadata_types() -> dict[str, RecordSchema]:
    """MetadataRecordType names (PARTITION_CHANGE_RECORD) -> schema, compared without `_`."""
    return {s.name.lower(): s for s in registry().by_api_key.values()}


def _schema_for_type(type_name: str) -> RecordSchema | None:
    return _metadata_types().get(type_name.replace("_", "").lower())


# Labels the dump tool prints before a control record's JSON, by control type id.
_CONTROL_LABELS = {"LeaderChange": 2, "SnapshotHeader": 3, "SnapshotFooter": 4,
                   "KRaftVersion": 5, "KRaftVoters": 6}
_END_TXN_TYPES = {"ABORT": 0, "COMMIT": 1}

# ---------------------------------------------------------------- JSON -> data

_INT_RANGES = {
    "int8": (-(1 << 7), (1 << 7) - 1), "int16": (-(1 << 15), (1 << 15) - 1),
    "int32": (-(1 << 31), (1 << 31) - 1), "int64": (-(1 << 63), (1 << 63) - 1),
    "uint16": (0, (1 << 16) - 1), "uint32": (0, (1 << 32) - 1),
}


def _scalar(f: Field, v: Any, where: str) -> Any:
    t = f.element_type
    if t in _INT_RANGES:
        if isinstance(v, bool) or not isinstance(v, int):
            raise _LineError(f"{where}: expected an integer, got {v!r}")
        lo, hi = _INT_RANGES[t]
        if not lo <= v <= hi:
            raise _LineError(f"{where}: {v} does not fit in {t}")
        return v
    if t == "bool":
        if not isinstance(v, bool):
            raise _LineError(f"{where}: expected true/false, got {v!r}")
        return v
    if t == "float64":
        if isinstance(v, bool) or not isinstance(v, int | float):
            raise _LineError(f"{where}: expected a number, got {v!r}")
        return float(v)
    if not isinstance(v, str):
        raise _LineError(f"{where}: expected a JSON string, got {v!r}")
    if t == "string":
        return v
    if t == "uuid":
        try:
            uuid_from_str(v)
        except (ValueError, binascii.Error):
            raise _LineError(f"{where}: {v!r} is not a Kafka uuid") from None
        return v
    # bytes / records: Jackson writes BinaryNode as standard base64 with padding
    try:
        return base64.b64decode(v, validate=True)
    except (ValueError, binascii.Error):
        raise _LineError(f"{where}: {v[:40]!r} is not base64") from None


def _value(f: Field, v: Any, version: int, where: str, extra: list[str]) -> Any:
    if v is None:
        if in_range(version, f.nullable):
            return None
        raise _LineError(f"{where}: null in a field that is not nullable at version {version}")
    if f.is_array:
        if not isinstance(v, list):
            raise _LineError(f"{where}: expected a JSON array, got {type(v).__name__}")
        if f.is_struct:
            return [_struct(f.fields or (), item, version, f"{where}[{i}]", extra)
                    for i, item in enumerate(v)]
        return [_scalar(f, item, f"{where}[{i}]") for i, item in enumerate(v)]
    if f.is_struct:
        return _struct(f.fields or (), v, version, where, extra)
    return _scalar(f, v, where)


def _struct(fields: tuple[Field, ...], obj: Any, version: int, where: str,
            extra: list[str]) -> dict[str, Any]:
    """Kafka's camelCase JSON object -> our snake_case dict, exactly as the binary decoder
    would have produced it: fields of other versions absent, absent tagged fields at their
    default (None for arrays and structs). Keys we have no field for go to `extra`."""
    if not isinstance(obj, dict):
        raise _LineError(f"{where}: expected a JSON object, got {type(obj).__name__}")
    out: dict[str, Any] = {}
    used: set[str] = set()
    for f in fields:
        if not in_range(version, f.versions):
            continue
        key = _camel(f.name)
        here = f"{where}.{key}" if where else key
        if key not in obj:
            if in_range(version, f.tagged):
                out[f.key] = field_default(f)
                continue
            raise _LineError(f"{here}: missing (it is not a tagged field at version {version})")
        used.add(key)
        out[f.key] = _value(f, obj[key], version, here, extra)
    extra.extend(f"{where}.{k}" if where else k for k in obj if k not in used)
    return out


# ---------------------------------------------------------------- line shapes

_BATCH_START = re.compile(r"^baseOffset: -?\d+ ")
_TOKEN = re.compile(r"(\w+): (\S+)")
_RECORD = re.compile(
    r"^\| offset: (?P<offset>-?\d+) (?P<tstype>\w+): (?P<ts>-?\d+) keySize: (?P<ks>-?\d+) "
    r"valueSize: (?P<vs>-?\d+)(?: sequence: -?\d+ headerKeys: \[[^\]]*\])?"
    r"(?: isValid: \w+ crc: \S+)?(?P<rest>.*)$")
_SKIP_META_PAYLOAD = re.compile(r"^(?:\| | )payload: (?P<payload>.*)$")
_CONTROL_TYPE = re.compile(r"^ controlType: (?P<name>\w+)\((?P<id>-?\d+)\)$")
_END_TXN = re.compile(r"^ endTxnMarker: (?P<kind>\w+) coordinatorEpoch: (?P<epoch>-?\d+)$")
_CONTROL_JSON = re.compile(r"^ (?P<label>[A-Za-z]+):? (?P<json>\{.*)$")
_ERROR_AT = re.compile(r"^Error at (?:offset )?(?P<offset>-?\d+), skipping\. ?(?P<msg>.*)$")
_TRAILING = re.compile(r"^Found (?P<n>\d+) invalid bytes at the end of (?P<name>.+)$")
_TIMESTAMP_KEYS = ("CreateTime", "LogAppendTime", "NoTimestampType")
_IGNORED = ("Dumping ", "Log starting offset: ", "Snapshot end offset: ",
            "KRaft bootstrap snapshot", "Ignoring unknown file ", "Non-consecutive offsets in ",
            "Mismatches in :", "  ")


@dataclass(slots=True)
class _Batch:
    base_offset: int
    last_offset: int
    count: int | None
    epoch: int
    control: bool
    timestamp: int | None
    valid: bool
    line: int
    seen: int = 0  # record lines read so far


def _batch_header(line: str) -> tuple[_Batch | None, str | None]:
    """Parse a batch line; (None, reason) if it lacks what a Record needs (e.g. cut short)."""
    tok = dict(_TOKEN.findall(line))
    try:
        base = int(tok["baseOffset"])
        epoch = int(tok["partitionLeaderEpoch"])
        control = tok["isControl"]
    except KeyError as exc:
        return None, f"batch line lacks {exc.args[0]} (cut short?)"
    except ValueError as exc:
        return None, f"batch line has a malformed number: {exc}"
    if control not in ("true", "false"):
        return None, f"batch line has isControl: {control!r}"
    ts = next((tok[k] for k in _TIMESTAMP_KEYS if k in tok), None)
    count = tok.get("count")
    try:
        last = int(tok.get("lastOffset", base))
        timestamp = int(ts) if ts is not None else None
        n = int(count) if count is not None and count != "null" else None
    except ValueError as exc:
        return None, f"batch line has a malformed number: {exc}"
    return _Batch(base, last, n, epoch, control == "true", timestamp,
                  tok.get("isvalid", "true") == "true", 0), None


# ---------------------------------------------------------------- the parser


class _Parser:
    """Line-by-line state machine; one instance per text."""

    def __init__(self, source: str, redact: bool) -> None:
        self.source = source
        self.redact = redact
        self.batch: _Batch | None = None
        self.skip_batch = False  # the header was unreadable or Kafka said the CRC is bad

    def problem(self, lineno: int, reason: str, text: str) -> DumpProblem:
        return DumpProblem(self.source, lineno, reason, text[:200])

    def close_batch(self) -> Iterator[DumpProblem]:
        """End the batch being read: a problem when fewer record lines followed its header than it
        announced (a dump cut short, or made without --deep-iteration); a skipped batch, or one that
        announces no count, yields none."""
        b = self.batch
        if b is not None and not self.skip_batch and b.count is not None and b.seen < b.count:
            yield self.problem(
                b.line, f"batch at base offset {b.base_offset} announces {b.count} records "
                f"but only {b.seen} record lines follow (dump cut short, or made without "
                f"--deep-iteration)", "")
        self.batch = None
        self.skip_batch = False

    def feed(self, lineno: int, line: str) -> Iterator[Record | DumpProblem]:
        """One line of the text: a batch line opens a batch (its records skipped when the header is
        unreadable or marked invalid), record and payload lines give Records, and a line that is no
        kafka-dump-log output gives a DumpProblem rather than an exception."""
        if _BATCH_START.match(line):
            yield from self.close_batch()
            batch, why = _batch_header(line)
            self.batch = batch
            if batch is None:
                self.skip_batch = True
                yield self.problem(lineno, f"{why}; its records are skipped", line)
            else:
                batch.line = lineno
                if not batch.valid:
                    self.skip_batch = True
                    yield self.problem(lineno, f"batch at base offset {batch.base_offset} is "
                                       "marked isvalid: false (bad CRC); its records are "
                                       "skipped, as the binary reader does", line)
            return
        if line.startswith("| offset: "):
            yield from self.record_line(lineno, line)
            return
        m = _SKIP_META_PAYLOAD.match(line)
        if m and self.batch is not None:
            yield from self.bare_payload(lineno, line, m.group("payload"))
            return
        if not line.strip():
            if self.batch is not None and self.batch.control and not self.skip_batch:
                self.batch.seen += 1  # --skip-record-metadata prints control records empty
            return
        if m := _TRAILING.match(line):
            yield from self.close_batch()
            yield self.problem(lineno, f"Kafka found {m.group('n')} bytes it could not read as "
                               f"batches at the end of {m.group('name')}", line)
            return
        if line.startswith(_IGNORED):
            if line.startswith("Dumping "):
                yield from self.close_batch()
            return
        yield self.problem(lineno, "line is not part of kafka-dump-log output", line)

    # -- records

    def record_line(self, lineno: int, line: str) -> Iterator[Record | DumpProblem]:
        """A `| offset: ...` line: its Record, with the batch's epoch and timestamp, or a problem
        when the line is malformed, lies outside any batch or its batch's offsets, or its payload
        cannot be used; nothing for a record of a skipped batch."""
        m = _RECORD.match(line)
        if m is None:
            yield self.problem(lineno, "record line is cut short or malformed", line)
            return
        b = self.batch
        if self.skip_batch:
            return
        if b is None:
            yield self.problem(lineno, "record line outside any batch (the batch line is "
                               "missing, so the Raft epoch is unknown)", line)
            return
        b.seen += 1
        offset = int(m.group("offset"))
        if not b.base_offset <= offset <= b.last_offset:
            yield self.problem(lineno, f"record offset {offset} lies outside its batch "
                               f"{b.base_offset}..{b.last_offset}", line)
            return
        ts = b.timestamp if b.timestamp is not None else int(m.group("ts"))
        rest = m.group("rest")
        try:
            if b.control:
                rec = self.control_record(offset, ts, b.epoch, rest)
            else:
                if not rest.startswith(" payload: "):
                    raise _LineError("record has no payload (dump made without "
                                     "--cluster-metadata-decoder?)")
                rec = self.metadata_record(offset, ts, b.epoch, rest[len(" payload: "):])
        except _LineError as exc:
            yield self.problem(lineno, f"offset {offset}: {exc}", line)
            return
        yield from self.emit(lineno, line, rec)

    def bare_payload(self, lineno: int, line: str, payload: str
                     ) -> Iterator[Record | DumpProblem]:
        """--skip-record-metadata: no offset on the line; count it from the batch header."""
        b = self.batch
        if b is None or self.skip_batch:
            return
        offset = b.base_offset + b.seen
        b.seen += 1
        ts = b.timestamp if b.timestamp is not None else -1
        try:
            rec = self.metadata_record(offset, ts, b.epoch, payload)
        except _LineError as exc:
            yield self.problem(lineno, f"offset {offset} (counted): {exc}", line)
            return
        yield from self.emit(lineno, line, rec)

    def emit(self, lineno: int, line: str, rec: tuple[Record, list[str]]
             ) -> Iterator[Record | DumpProblem]:
        record, extra = rec
        if extra:
            yield self.problem(lineno, f"offset {record.offset}: {record.type} fields this "
                               f"build has no schema for were dropped: {', '.join(extra)}", line)
        yield record

    def metadata_record(self, offset: int, ts: int, epoch: int, payload: str
                        ) -> tuple[Record, list[str]]:
        """A metadata payload (`{"type", "version", "data"}`) as the Record the binary reader gives,
        its value re-encoded from the data after redaction, and the fields dropped for want of a
        schema; `_LineError` when the payload cannot be used. Kafka's own `Error at` line keeps its
        offset as an Unknown record without data."""
        if m := _ERROR_AT.match(payload):
            # Kafka itself could not decode the value; keep the offset, like the binary
            # reader keeps undecodable values.
            return Record(offset, ts, epoch, False, UNKNOWN, -1, -1, None, None,
                          f"kafka-dump-log could not decode this record: {m.group('msg')}"), []
        if not payload.startswith("{"):
            raise _LineError("payload is not JSON (dump made without "
                             "--cluster-metadata-decoder?)")
        try:
            obj = json.loads(payload)
        except json.JSONDecodeError as exc:
            raise _LineError(f"payload is not valid JSON ({exc.msg} at column "
                             f"{exc.colno}; line cut short?)") from None
        if not isinstance(obj, dict) or not {"type", "version", "data"} <= obj.keys():
            raise _LineError("payload lacks type, version or data")
        type_name, version = obj["type"], obj["version"]
        if not isinstance(type_name, str) or isinstance(version, bool) \
                or not isinstance(version, int):
            raise _LineError(f"payload has type {type_name!r} and version {version!r}")
        schema = _schema_for_type(type_name)
        if schema is None:
            raise _LineError(f"unknown metadata record type {type_name}")
        if not schema.has_version(version):
            raise _LineError(f"{schema.name} version {version} is not one this build knows")
        extra: list[str] = []
        data = _struct(schema.fields, obj["data"], version, "", extra)
        if self.redact:
            redact_in_place(schema.name, data)
        try:
            value = encode_metadata_value(schema.name, version, data)
        except (struct.error, ValueError, TypeError, OverflowError, KeyError) as exc:
            raise _LineError(f"{schema.name} v{version} cannot be re-encoded: {exc}") from None
        return Record(offset, ts, epoch, False, schema.name, schema.api_key or 0, version,
                      data, value), extra

    def control_record(self, offset: int, ts: int, epoch: int, rest: str
                       ) -> tuple[Record, list[str]]:
        """A control record's printed form (a JSON body under its label, an end-transaction marker,
        or the control type alone) as a Record and the fields dropped; `_LineError` for a form not
        known. One printed by type alone (older Kafka) keeps its offset, with no data and an error
        saying so."""
        reg = registry()
        if m := _CONTROL_TYPE.match(rest):
            # Printed without contents (LeaderChange before 4.1, snapshot markers before 3.3,
            # KRaft version/voters before 3.9): the record exists but its data is lost.
            ctype = int(m.group("id"))
            schema = reg.by_control_type.get(ctype)
            name = schema.name if schema is not None else UNKNOWN
            return Record(offset, ts, epoch, True, name, ctype, 0, None, None,
                          f"kafka-dump-log printed only the control type {m.group('name')}, "
                          "not its contents"), []
        if m := _END_TXN.match(rest):
            ctype = _END_TXN_TYPES.get(m.group("kind"), -1)
            schema = reg.by_control_type.get(ctype)
            if schema is None:
                raise _LineError(f"unknown end-transaction marker {m.group('kind')}")
            data = {"version": 0, "coordinator_epoch": int(m.group("epoch"))}
            return self._control(offset, ts, epoch, schema, ctype, data), []
        if m := _CONTROL_JSON.match(rest):
            ctype = _CONTROL_LABELS.get(m.group("label"), -1)
            schema = reg.by_control_type.get(ctype)
            if schema is None:
                raise _LineError(f"unknown control record label {m.group('label')}")
            try:
                obj = json.loads(m.group("json"))
            except json.JSONDecodeError as exc:
                raise _LineError(f"control record is not valid JSON ({exc.msg} at column "
                                 f"{exc.colno}; line cut short?)") from None
            extra: list[str] = []
            # The binary reader decodes control bodies at version 0 whatever their Version
            # field says; do the same so both paths yield the same fields.
            data = _struct(schema.fields, obj, 0, "", extra)
            return self._control(offset, ts, epoch, schema, ctype, data), extra
        if rest.startswith(" payload: "):
            raise _LineError("payload printed for a control record (dump of a Kafka version "
                             "that decoded control records as metadata); contents lost")
        raise _LineError(f"control record in a form this parser does not know: {rest[:60]!r}")

    def _control(self, offset: int, ts: int, epoch: int, schema: RecordSchema, ctype: int,
                 data: dict[str, Any]) -> Record:
        try:
            value = encode_control_value(schema.name, data)
        except (struct.error, ValueError, TypeError, OverflowError, KeyError) as exc:
            raise _LineError(f"{schema.name} cannot be re-encoded: {exc}") from None
        return Record(offset, ts, epoch, True, schema.name, ctype, 0, data, value)


def parse_dump_log(lines: Iterable[str | bytes], source: str = "", *,
                   redact: bool = True) -> Iterator[Record | DumpProblem]:
    """Yield a Record for every record of a kafka-dump-log text and a DumpProblem for every
    line that could not be used, in text order; one bad line never stops the rest.

    Records carry the batch's max timestamp and Raft epoch, Kafka's record type name and
    version, data keyed like the binary reader's, and the value re-encoded from that data
    (after redaction, so secrets printed in the dump never reach the lake).
    """
    parser = _Parser(source, redact)
    lineno = 0
    try:
        for lineno, raw in enumerate(lines, 1):
            line = raw.decode("utf-8", errors="replace") if isinstance(raw, bytes) else raw
            yield from parser.feed(lineno, line.rstrip("\r\n"))
        yield from parser.close_batch()
    except KraftCodecError:
        raise
    except (OSError, UnicodeError) as exc:
        raise DumpLogError(f"{source or '<text>'}: cannot read line {lineno + 1}: {exc}") from exc
    except Exception as exc:  # a bug here must still surface as a codec error, with context
        raise DumpLogError(f"{source or '<text>'}:{lineno}: {type(exc).__name__}: {exc}") from exc


def read_dump_log(path: str | os.PathLike[str], *, redact: bool = True) -> DumpResult:
    """Parse a dump-log file into records and problems (the CLI's entry point)."""
    p = Path(path)
    result = DumpResult()
    try:
        with p.open("r", encoding="utf-8", errors="replace", newline="") as fh:
            for item in parse_dump_log(fh, str(p), redact=redact):
                if isinstance(item, DumpProblem):
                    result.problems.append(item)
                else:
                    result.records.append(item)
    except OSError as exc:
        raise DumpLogError(f"{p}: {exc}") from exc
    return result
