"""Record layouts, loaded from `schemas/records/*.json` (the project's own format).

The wire layout of every metadata and control record lives in data files, not in Python:
a new Kafka release that adds a field or a record type is a new JSON file, and the codec,
the lake writers and the docs all read the same facts. See schemas/records/README.md.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

from ..packaged import SCHEMAS
from .errors import SchemaError

VersionRange = tuple[int, int | None]

PRIMITIVES = frozenset(
    {"int8", "int16", "uint16", "int32", "uint32", "int64", "float64", "bool", "string",
     "bytes", "uuid", "records"}
)


def snake_case(name: str) -> str:
    """Kafka field name -> column name: `LeaderRecoveryState` -> `leader_recovery_state`."""
    name = name.replace("KRaft", "Kraft")
    name = re.sub(r"(.)([A-Z][a-z]+)", r"\1_\2", name)
    return re.sub(r"([a-z0-9])([A-Z])", r"\1_\2", name).lower()


def in_range(version: int, rng: VersionRange | None) -> bool:
    if rng is None:
        return False
    lo, hi = rng
    return version >= lo and (hi is None or version <= hi)


def _range(raw: Any, where: str) -> VersionRange | None:
    if raw is None:
        return None
    if (not isinstance(raw, list) or len(raw) != 2 or not isinstance(raw[0], int)
            or not (raw[1] is None or isinstance(raw[1], int))):
        raise SchemaError(f"{where}: version range must be [min, max|null], got {raw!r}")
    return (raw[0], raw[1])


# Schemas are compared and hashed by identity (eq=False): they are loaded once, and the
# codec caches compiled decoders per schema, so hashing must not walk every field.
@dataclass(frozen=True, slots=True, eq=False)
class Field:
    name: str
    key: str
    type: str
    versions: VersionRange
    nullable: VersionRange | None
    tagged: VersionRange | None
    tag: int | None
    default: Any
    has_default: bool
    redact: bool
    fields: tuple[Field, ...] | None

    @property
    def is_array(self) -> bool:
        return self.type.startswith("[]")

    @property
    def element_type(self) -> str:
        return self.type[2:] if self.is_array else self.type

    @property
    def is_struct(self) -> bool:
        return self.element_type not in PRIMITIVES


@dataclass(frozen=True, slots=True, eq=False)
class RecordSchema:
    name: str
    kind: str  # "metadata" | "control"
    api_key: int | None
    control_types: tuple[int, ...]
    versions: VersionRange
    flexible_from: int | None
    fields: tuple[Field, ...]

    def is_flexible(self, version: int) -> bool:
        return self.flexible_from is not None and version >= self.flexible_from

    def has_version(self, version: int) -> bool:
        return in_range(version, self.versions)


def _field(raw: dict[str, Any], where: str) -> Field:
    try:
        name = raw["name"]
        ftype = raw["type"]
    except KeyError as exc:
        raise SchemaError(f"{where}: field lacks {exc}") from None
    sub = raw.get("fields")
    fields = tuple(_field(f, f"{where}.{name}") for f in sub) if sub else None
    elem = ftype[2:] if ftype.startswith("[]") else ftype
    if elem not in PRIMITIVES and fields is None:
        raise SchemaError(f"{where}.{name}: struct type {ftype} without fields")
    tagged = _range(raw.get("tagged"), f"{where}.{name}")
    if tagged is not None and not isinstance(raw.get("tag"), int):
        raise SchemaError(f"{where}.{name}: tagged field without an integer tag")
    return Field(
        name=name,
        key=snake_case(name),
        type=ftype,
        versions=_range(raw.get("versions"), f"{where}.{name}") or (0, None),
        nullable=_range(raw.get("nullable"), f"{where}.{name}"),
        tagged=tagged,
        tag=raw.get("tag"),
        default=raw.get("default"),
        has_default="default" in raw,
        redact=bool(raw.get("redact", False)),
        fields=fields,
    )


def _parse_schema(raw: dict[str, Any], where: str = "schema") -> RecordSchema:
    kind = raw.get("kind")
    if kind not in ("metadata", "control"):
        raise SchemaError(f"{where}: kind must be metadata or control, got {kind!r}")
    ctl = raw.get("control_type")
    control_types = tuple(ctl) if isinstance(ctl, list) else ((ctl,) if ctl is not None else ())
    versions = _range(raw.get("versions"), where)
    if versions is None:
        raise SchemaError(f"{where}: no versions")
    return RecordSchema(
        name=raw["name"],
        kind=kind,
        api_key=raw.get("api_key"),
        control_types=control_types,
        versions=versions,
        flexible_from=raw.get("flexible_from"),
        fields=tuple(_field(f, f"{where}.{raw['name']}") for f in raw.get("fields", [])),
    )


@dataclass(frozen=True, slots=True)
class SchemaRegistry:
    """Every known record layout, indexed the three ways the codec looks them up."""

    by_name: dict[str, RecordSchema]
    by_api_key: dict[int, RecordSchema]
    by_control_type: dict[int, RecordSchema]


@cache
def registry(directory: str | None = None) -> SchemaRegistry:
    """Every record layout in `directory` (default: the packaged `schemas/records`), read once and
    cached. A file that does not parse, a duplicate name, apiKey or control type, or a directory
    without schemas is a SchemaError."""
    root = Path(directory) if directory else SCHEMAS / "records"
    files = sorted(root.glob("*.json"))
    if not files:
        raise SchemaError(f"no record schemas in {root}")
    by_name: dict[str, RecordSchema] = {}
    by_key: dict[int, RecordSchema] = {}
    by_ctl: dict[int, RecordSchema] = {}
    for path in files:
        try:
            schema = _parse_schema(json.loads(path.read_text()), path.name)
        except (json.JSONDecodeError, KeyError, TypeError) as exc:
            raise SchemaError(f"{path}: {exc}") from None
        if schema.name in by_name:
            raise SchemaError(f"{path}: duplicate record name {schema.name}")
        by_name[schema.name] = schema
        if schema.kind == "metadata":
            if schema.api_key is None or schema.api_key in by_key:
                raise SchemaError(f"{path}: missing or duplicate api_key {schema.api_key}")
            by_key[schema.api_key] = schema
        for ct in schema.control_types:
            if ct in by_ctl:
                raise SchemaError(f"{path}: duplicate control type {ct}")
            by_ctl[ct] = schema
    return SchemaRegistry(by_name, by_key, by_ctl)
