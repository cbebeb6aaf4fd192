"""Credentials never leave the codec: SCRAM keys, token HMACs, sensitive config values.

Which fields are secret is data (`"redact": true` in schemas/records and the config-name
patterns in schemas/redaction.json). A redacted record's raw value is re-encoded with the
placeholder, so not even the bronze table's raw bytes carry the secret.
"""

from __future__ import annotations

import json
import re
from functools import cache
from typing import Any

from ..kraft.records import CONFIG_RECORD
from ..packaged import SCHEMAS
from .schema import Field, registry


@cache
def _rules() -> tuple[str, re.Pattern[str]]:
    raw = json.loads((SCHEMAS / "redaction.json").read_text())
    pattern = re.compile("|".join(f"(?:{p})" for p in raw["config_name_patterns"]), re.I)
    return raw["placeholder"], pattern


def placeholder() -> str:
    return _rules()[0]


def is_sensitive_config(name: str | None) -> bool:
    return bool(name) and _rules()[1].search(name) is not None  # type: ignore[arg-type]


@cache
def _has_secret_fields(type_name: str) -> bool:
    schema = registry().by_name.get(type_name)

    def any_redact(fields: tuple[Field, ...] | None) -> bool:
        return any(f.redact or any_redact(f.fields) for f in fields or ())

    return schema is not None and any_redact(schema.fields)


def _scrub(fields: tuple[Field, ...], data: dict[str, Any], mark: str) -> bool:
    changed = False
    for f in fields:
        if f.key not in data or data[f.key] is None:
            continue
        if f.redact:
            data[f.key] = b"" if f.element_type in ("bytes", "records") else mark
            changed = True
        elif f.fields:
            items = data[f.key] if f.is_array else [data[f.key]]
            for item in items:
                changed |= _scrub(f.fields, item, mark)
    return changed


@cache
def secret_types() -> frozenset[str]:
    """Record types that can carry a secret: ConfigRecord and those with redact fields."""
    return frozenset({CONFIG_RECORD} | {n for n in registry().by_name if _has_secret_fields(n)})


def redact_in_place(type_name: str, data: dict[str, Any]) -> bool:
    """Redact `data` of a record of `type_name`; True if anything was replaced.

    Bytes fields become empty (so the record still encodes); strings become the placeholder.
    """
    mark = placeholder()
    changed = False
    if (type_name == CONFIG_RECORD and is_sensitive_config(data.get("name"))
            and data.get("value") is not None):
        data["value"] = mark
        changed = True
    if _has_secret_fields(type_name):
        changed |= _scrub(registry().by_name[type_name].fields, data, mark)
    return changed
