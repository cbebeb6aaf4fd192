"""Metadata and control record values <-> (type name, version, data).

A metadata record value is `uvarint frame version (1) · uvarint apiKey · uvarint version ·
body`; a control record has a 4-byte key (int16 version, int16 control type) and a body at
version 0 that starts with its own `Version` field (docs/semantics.md 4.4, 4.6). Values that
cannot be decoded (unknown apiKey or version, malformed body) are kept as raw bytes with the
reason in `error`; decoding never raises for them.
"""

from __future__ import annotations

import base64
import struct
from dataclasses import dataclass
from functools import cache
from typing import Any

import orjson

from ..kraft.records import UNKNOWN_RECORD as UNKNOWN
from .errors import RecordDecodeError
from .message import Decoder, decode_body, decoder_for, encode_body
from .schema import RecordSchema, registry
from .wire import read_uvarint, write_uvarint

FRAME_VERSION = 1
_CONTROL_KEY = struct.Struct(">hh")


@dataclass(slots=True)
class Record:
    """One decoded record of the metadata log, in the shape every later layer consumes.

    `type` is Kafka's record type name, `data` every field of the record at its `version`
    (snake_case names), `epoch` its batch's Raft epoch. `iter_path` yields them.

    Example:
        >>> import tempfile
        >>> from pathlib import Path
        >>> from kraftlake import simulate_cluster
        >>> sim = Path(tempfile.mkdtemp()) / "sim"
        >>> summary = simulate_cluster(sim, scenario="broker-crash", seed=1, hours=0.1)
        >>> from kraftlake import iter_path
        >>> first = next(iter_path(sim / "__cluster_metadata-0", []))
        >>> first.offset, first.type, first.control
        (0, 'LeaderChangeMessage', True)
    """

    offset: int
    timestamp: int  # ms: the batch's max timestamp (the controller's append time)
    epoch: int  # the batch's partition leader epoch, i.e. the Raft epoch
    control: bool
    type: str  # Kafka's record type name, or "Unknown"
    api_key: int  # metadata apiKey; for control records the control type
    version: int
    data: dict[str, Any] | None  # None when the value could not be decoded
    value: bytes | None  # raw value bytes (re-encoded after redaction, if any)
    error: str | None = None

    def as_json(self) -> dict[str, Any]:
        return {"offset": self.offset, "timestamp": self.timestamp, "epoch": self.epoch,
                "control": self.control, "type": self.type, "version": self.version,
                "data": self.data}


def _json_default(obj: Any) -> Any:
    if isinstance(obj, bytes | bytearray | memoryview):
        return base64.b64encode(bytes(obj)).decode("ascii")
    raise TypeError(f"cannot serialise {type(obj).__name__}")


def to_json(obj: Any) -> str:
    """Compact JSON of decoded data; bytes fields as standard base64 (as Kafka's tools do).

    orjson, because ingest serialises every record's data once and json.dumps was most of
    the cost of decoding a busy log.
    """
    return orjson.dumps(obj, default=_json_default, option=orjson.OPT_NON_STR_KEYS).decode()


@dataclass(frozen=True, slots=True)
class Decoded:
    type: str
    api_key: int
    version: int
    data: dict[str, Any] | None
    error: str | None = None


def decode_metadata_value(value: bytes | None) -> Decoded:
    """A metadata record value's type, apiKey, version and data (docs/semantics.md 4.4). It never
    raises: a null value, a cut frame header, an unknown frame version, apiKey or version, or a
    malformed body gives `data` None and the reason in `error`, so the record is kept with its
    bytes."""
    if value is None:
        return Decoded(UNKNOWN, -1, -1, None, "metadata record with a null value")
    if len(value) >= 3 and value[0] == 1 and value[1] < 0x80 and value[2] < 0x80:
        frame, api_key, version, pos = 1, value[1], value[2], 3  # the usual one-byte frame
    else:
        try:
            frame, pos = read_uvarint(value, 0)
            api_key, pos = read_uvarint(value, pos)
            version, pos = read_uvarint(value, pos)
        except (IndexError, RecordDecodeError):
            return Decoded(UNKNOWN, -1, -1, None, "value ends inside the frame header")
    if frame != FRAME_VERSION:
        return Decoded(UNKNOWN, api_key, version, None,
                       f"unsupported frame version {frame} (expected {FRAME_VERSION})")
    schema = registry().by_api_key.get(api_key)
    if schema is None:
        return Decoded(UNKNOWN, api_key, version, None, f"unknown metadata apiKey {api_key}")
    if not schema.has_version(version):
        return Decoded(schema.name, api_key, version, None,
                       f"{schema.name} version {version} is not one this build knows "
                       f"({schema.versions[0]}-{schema.versions[1] or 'latest'})")
    try:
        data = decode_body(schema, version, value, pos)
    except RecordDecodeError as exc:
        return Decoded(schema.name, api_key, version, None, str(exc))
    return Decoded(schema.name, api_key, version, data)


@cache
def frame_decoders() -> dict[int, tuple[str, Decoder]]:
    """(apiKey << 8 | version) -> (type name, body decoder), for one-byte apiKeys/versions.

    The hot path of `logfiles.records_of_batch` looks decoders up here directly; anything
    it cannot handle falls back to `decode_metadata_value`, which owns the error messages.
    """
    table: dict[int, tuple[str, Decoder]] = {}
    for key, schema in registry().by_api_key.items():
        lo, hi = schema.versions
        for v in range(lo, (hi if hi is not None else lo) + 1):
            if key < 0x80 and v < 0x80:
                table[key << 8 | v] = (schema.name, decoder_for(schema, v))
    return table


def decode_control_value(key: bytes | None, value: bytes | None) -> Decoded:
    """A control record's type, from the control type in its 4-byte key, and its data, decoded at
    version 0 whatever the key's version (docs/semantics.md 4.6), which `version` reports. Like
    `decode_metadata_value` it never raises: what cannot be decoded has `data` None and the reason
    in `error`."""
    if key is None or len(key) != _CONTROL_KEY.size:
        return Decoded(UNKNOWN, -1, -1, None, "control record without a 4-byte key")
    key_version, ctype = _CONTROL_KEY.unpack(key)
    schema = registry().by_control_type.get(ctype)
    if schema is None:
        return Decoded(UNKNOWN, ctype, key_version, None, f"unknown control record type {ctype}")
    if value is None:
        return Decoded(schema.name, ctype, key_version, None, "control record with a null value")
    try:
        data = decode_body(schema, 0, value)
    except RecordDecodeError as exc:
        return Decoded(schema.name, ctype, key_version, None, str(exc))
    return Decoded(schema.name, ctype, key_version, data)


def schema_named(name: str) -> RecordSchema:
    try:
        return registry().by_name[name]
    except KeyError:
        raise KeyError(f"no record schema named {name!r}") from None


def encode_metadata_value(type_name: str, version: int, data: dict[str, Any]) -> bytes:
    """The value Kafka writes for a metadata record: frame version, apiKey and `version`, then the
    body, missing fields at their defaults. KeyError for an unknown type name, ValueError for a
    control record. It re-encodes redacted data (`logfiles`, `dumplog`) and writes the simulator's
    log."""
    schema = schema_named(type_name)
    if schema.kind != "metadata" or schema.api_key is None:
        raise ValueError(f"{type_name} is not a metadata record")
    out = bytearray()
    write_uvarint(out, FRAME_VERSION)
    write_uvarint(out, schema.api_key)
    write_uvarint(out, version)
    return bytes(out) + encode_body(schema, version, data)


def control_key(type_name: str, key_version: int = 0) -> bytes:
    schema = schema_named(type_name)
    if not schema.control_types:
        raise ValueError(f"{type_name} is not a control record")
    return _CONTROL_KEY.pack(key_version, schema.control_types[0])


def encode_control_value(type_name: str, data: dict[str, Any]) -> bytes:
    return encode_body(schema_named(type_name), 0, data)

