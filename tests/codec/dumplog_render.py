"""Test-side stand-in for `kafka-dump-log.sh --cluster-metadata-decoder`: real segment and
snapshot files printed the way a given Kafka release prints them.

Kafka's own text is used wherever the harness can run the release that prints it (3.9.1 and
4.3.1: tests/kafka/test_dump_parity.py). This stand-in remains for what Kafka cannot be
made to print there: the formats of releases the harness does not run (3.0-3.8) and
damaged or partial text (a real dump broken by hand). It renders the text from the binary
codec's decode, following `DumpLogSegments` (`printBatchLevel`, the record loop /
`printRecordMetadata`, `ClusterMetadataLogMessageParser`) and the generated
`*JsonConverter.write` (schema field order, camelCase names, fields of other versions left
out, tagged fields only when not at their default, uuid strings, bytes as standard base64,
null for null). It is written from
those facts independently of the parser in `kraftlake.codec.dumplog`, which goes the other
way (JSON -> data) and must agree with the binary decode.

Release differences rendered (`dialect`):
* 3.0 / 3.1: no `deleteHorizonMs` on batch lines (added by apache/kafka#11694, 3.2); every
  control record printed as `controlType: NAME(id)`; no snapshot files.
* 3.3-3.8: `SnapshotHeader {json}` / `SnapshotFooter {json}` (apache/kafka#12084).
* 3.9 / 4.0: also `KRaftVersion {json}` / `KRaftVoters {json}` (KIP-853).
* 4.1: also `LeaderChange: {json}` (KAFKA-19069, apache/kafka#19729).
Uncertain and not rendered: whether 3.0/3.1 printed `compresscodec: NONE` (enum name) rather
than `none`.
"""

from __future__ import annotations

import base64
import json
from pathlib import Path
from typing import Any

from kraftlake.codec.batch import ATTR_DELETE_HORIZON, ATTR_TIMESTAMP_TYPE, Batch
from kraftlake.codec.logfiles import LogFile, iter_file
from kraftlake.codec.message import field_default
from kraftlake.codec.records import decode_control_value
from kraftlake.codec.schema import Field, in_range, registry, snake_case

DIALECTS = ("3.0", "3.3", "3.9", "4.1")

_CODECS = {0: "none", 1: "gzip", 2: "snappy", 3: "lz4", 4: "zstd"}
# ControlRecordType enum constants, by id (clients/.../record/ControlRecordType.java)
_CONTROL_ENUM = {0: "ABORT", 1: "COMMIT", 2: "LEADER_CHANGE", 3: "SNAPSHOT_HEADER",
                 4: "SNAPSHOT_FOOTER", 5: "KRAFT_VERSION", 6: "KRAFT_VOTERS"}
# (label as printed, first dialect that prints the JSON)
_CONTROL_PRINT = {2: ("LeaderChange:", "4.1"), 3: ("SnapshotHeader", "3.3"),
                  4: ("SnapshotFooter", "3.3"), 5: ("KRaftVersion", "3.9"),
                  6: ("KRaftVoters", "3.9")}


def _ver(d: str) -> tuple[int, ...]:
    return tuple(int(x) for x in d.split("."))


def _camel(name: str) -> str:
    return name[0].lower() + name[1:]


def _json_value(f: Field, v: Any, version: int) -> Any:
    if v is None:
        return None
    if f.is_array:
        return [_json_elem(f, item, version) for item in v]
    return _json_elem(f, v, version)


def _json_elem(f: Field, v: Any, version: int) -> Any:
    if f.is_struct:
        return to_kafka_json(f.fields or (), v, version)
    if f.element_type in ("bytes", "records"):
        return base64.b64encode(v).decode("ascii")
    return v


def to_kafka_json(fields: tuple[Field, ...], data: dict[str, Any], version: int
                  ) -> dict[str, Any]:
    """What the generated `<Type>JsonConverter.write(message, version)` returns."""
    out: dict[str, Any] = {}
    for f in fields:
        if not in_range(version, f.versions):
            continue
        v = data.get(f.key)
        if in_range(version, f.tagged):
            default = field_default(f)
            if f.is_array or f.is_struct:
                # generateNonDefaultValueCheck: null-default -> "!= null", else "!isEmpty()"
                null_default = f.has_default and f.default is None
                if v is None or (not v and not null_default):
                    continue
            elif v == default:
                continue
        out[_camel(f.name)] = _json_value(f, v, version)
    return out


def _dumps(obj: Any) -> str:
    """Jackson's `JsonNode.toString()`: compact, insertion order, non-ASCII unescaped."""
    return json.dumps(obj, separators=(",", ":"), ensure_ascii=False)


def _batch_line(b: Batch, position: int, dialect: str) -> str:
    count = len(b.records)
    last_seq = -1 if b.base_sequence == -1 else b.base_sequence + b.last_offset_delta
    ts_type = "LogAppendTime" if b.attributes & ATTR_TIMESTAMP_TYPE else "CreateTime"
    parts = [f"baseOffset: {b.base_offset} lastOffset: {b.last_offset} count: {count}",
             f"baseSequence: {b.base_sequence} lastSequence: {last_seq}",
             f"producerId: {b.producer_id} producerEpoch: {b.producer_epoch}",
             f"partitionLeaderEpoch: {b.partition_leader_epoch}",
             f"isTransactional: {str(b.is_transactional).lower()}",
             f"isControl: {str(b.is_control).lower()}"]
    if _ver(dialect) >= (3, 2):
        horizon = (f"OptionalLong[{b.base_timestamp}]" if b.attributes & ATTR_DELETE_HORIZON
                   else "OptionalLong.empty")
        parts.append(f"deleteHorizonMs: {horizon}")
    parts += [f"position: {position} {ts_type}: {b.max_timestamp} size: {b.size}",
              f"magic: {b.magic} compresscodec: {_CODECS[b.compression]}",
              f"crc: {b.crc} isvalid: true"]
    return " ".join(parts)


def render_file(lf: LogFile, dialect: str = "4.1") -> list[str]:
    """The lines `kafka-dump-log.sh --cluster-metadata-decoder --files <lf>` prints."""
    if dialect not in DIALECTS:
        raise ValueError(f"unknown dialect {dialect}")
    lines = [f"Dumping {lf.path}"]
    if lf.kind == "segment":
        lines.append(f"Log starting offset: {lf.offset}")
    elif lf.kind == "bootstrap":
        lines.append("KRaft bootstrap snapshot")
    else:
        lines.append(f"Snapshot end offset: {lf.offset}, epoch: {lf.epoch}")
    reg = registry()
    valid = 0
    for batch, records in iter_file(lf, redact=False):
        lines.append(_batch_line(batch, valid, dialect))
        ts_type = "LogAppendTime" if batch.attributes & ATTR_TIMESTAMP_TYPE else "CreateTime"
        for raw, rec in zip(batch.records, records, strict=True):
            ts = (batch.max_timestamp if ts_type == "LogAppendTime"
                  else batch.base_timestamp + raw.timestamp_delta)
            seq = -1 if batch.base_sequence == -1 else batch.base_sequence + raw.offset_delta
            key_size = -1 if raw.key is None else len(raw.key)
            value_size = -1 if raw.value is None else len(raw.value)
            head = (f"| offset: {rec.offset} {ts_type}: {ts} keySize: {key_size} "
                    f"valueSize: {value_size} sequence: {seq} "
                    f"headerKeys: [{','.join(k for k, _ in raw.headers)}]")
            if batch.is_control:
                lines.append(head + _control_text(raw.key, raw.value, dialect))
            elif rec.data is None:
                lines.append(f"{head} payload: Error at {rec.offset}, skipping. {rec.error}")
            else:
                schema = reg.by_name[rec.type]
                payload = {"type": snake_case(rec.type).upper(), "version": rec.version,
                           "data": to_kafka_json(schema.fields, rec.data, rec.version)}
                lines.append(f"{head} payload: {_dumps(payload)}")
        valid += batch.size
    size = lf.path.stat().st_size
    if size > valid:
        lines.append(f"Found {size - valid} invalid bytes at the end of {lf.path.name}")
    return lines


def _control_text(key: bytes | None, value: bytes | None, dialect: str) -> str:
    ctype = int.from_bytes(key[2:4], "big", signed=True) if key and len(key) == 4 else -1
    name = _CONTROL_ENUM.get(ctype, "UNKNOWN")
    d = decode_control_value(key, value)
    if ctype in (0, 1) and d.data is not None:
        return f" endTxnMarker: {name} coordinatorEpoch: {d.data['coordinator_epoch']}"
    shown = _CONTROL_PRINT.get(ctype)
    if shown is None or _ver(dialect) < _ver(shown[1]) or d.data is None:
        return f" controlType: {name}({ctype})"
    schema = registry().by_control_type[ctype]
    # The converter writes at the message's own Version field; the schemas here hold v0.
    return f" {shown[0]} {_dumps(to_kafka_json(schema.fields, d.data, 0))}"


def render_path(path: Path, dialect: str = "4.1") -> list[str]:
    from kraftlake.codec.logfiles import classify

    lf = classify(path)
    if lf is None:
        raise ValueError(f"{path} is not a segment or snapshot")
    return render_file(lf, dialect)
