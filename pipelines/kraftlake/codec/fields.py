"""The fields the silver layer reads, as one typed Arrow struct beside the JSON `data`.

Bronze keeps each record's body as JSON (`data`), faithful and readable by any engine. The
silver frames need a few dozen of its fields as typed values, and parsing the JSON again in
Spark (`from_json`, `get_json_object`) cost a week-long log about 100 JVM CPU seconds. The
decoder holds those values already, as Python objects, so it hands them over once more as
a struct column `fields`: one child per field of the record types some silver table is made
of (`kraft.records.STATE_TYPES`), named and typed from the record schemas
(`schemas/records/`) like the keys of `data`, with absent (null) kept apart from empty
(`[]`) exactly as in `data`.

A child is every non-struct field of those types (struct lists such as a broker's endpoints
are not read); records of other types, and undecodable ones, have a null struct. Record
types sharing a field name share the child, so their Kafka types must agree; the one
disagreement Kafka has is Fenced and InControlledShutdown, bool in RegisterBrokerRecord and
int8 (1 / -1 / 0: a change) in BrokerRegistrationChangeRecord, so the child is int8 and a
bool is held as 1 / 0.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import orjson
import pyarrow as pa

from ..kraft.records import STATE_TYPES
from .errors import SchemaError
from .schema import registry

COLUMN = "fields"

_ELEMENT: dict[str, pa.DataType] = {
    "int8": pa.int8(), "int16": pa.int16(), "uint16": pa.uint16(), "int32": pa.int32(),
    "uint32": pa.uint32(), "int64": pa.int64(), "float64": pa.float64(), "bool": pa.bool_(),
    "string": pa.string(), "uuid": pa.string(), "bytes": pa.binary(), "records": pa.binary(),
}
# Kafka types that two record types give one field name -> the type of the child holding both
_WIDER = {frozenset({"bool", "int8"}): "int8"}


def _struct() -> tuple[pa.StructType, dict[str, tuple[tuple[str, ...], tuple[str, ...]]]]:
    """The struct type, and for the record types whose `data` it cannot take as it is, (the
    type's keys in the struct, those of them whose bool the struct holds as an int)."""
    kinds: dict[str, str] = {}  # key -> Kafka type
    for name in STATE_TYPES:
        for f in registry().by_name[name].fields:
            if f.is_struct:
                continue
            have = kinds.setdefault(f.key, f.type)
            if have != f.type:
                wider = _WIDER.get(frozenset({have, f.type}))
                if wider is None:
                    raise SchemaError(f"{name}.{f.name} is {f.type}, another record's "
                                      f"{f.key} {have}: one `{COLUMN}` child cannot hold both")
                kinds[f.key] = wider
    children = []
    for key, kind in kinds.items():
        elem = _ELEMENT[kind.removeprefix("[]")]
        children.append(pa.field(key, pa.list_(elem) if kind.startswith("[]") else elem))
    reshaped = {}
    for name in STATE_TYPES:
        fs = registry().by_name[name].fields
        as_int = tuple(f.key for f in fs if not f.is_struct and kinds[f.key] != f.type)
        if as_int or any(f.is_struct for f in fs):
            reshaped[name] = (tuple(f.key for f in fs if not f.is_struct), as_int)
    return pa.struct(children), reshaped


TYPE, _RESHAPED = _struct()
_TYPES = frozenset(STATE_TYPES)


def typed(record_type: str | None, data: dict[str, Any] | None) -> dict[str, Any] | None:
    """The `fields` value of one record: its decoded `data` (pyarrow reads the struct's
    children from a dict's keys and skips the others), or None for a record silver does not
    read. A body with struct lists (a broker's endpoints and features) is cut to the
    struct's keys first: pyarrow walks every item of a dict, and those lists made a
    RegisterBrokerRecord cost it 20 times a partition record."""
    if data is None or record_type is None or record_type not in _TYPES:
        return None
    reshaped = _RESHAPED.get(record_type)
    if reshaped is not None:
        keys, as_int = reshaped
        data = {k: data.get(k) for k in keys}
        for k in as_int:
            if data[k] is not None:
                data[k] = int(data[k])
    return data


def array(values: list[dict[str, Any] | None]) -> pa.StructArray:
    """`typed` values as the `fields` column."""
    return pa.array(values, TYPE)


def from_data(record_types: pa.Array | pa.ChunkedArray,
              data: pa.Array | pa.ChunkedArray) -> pa.StructArray:
    """The `fields` column of records known only by their JSON `data` (read back from
    bronze, which does not store the struct): the JSON parsed by the same Python the decoder
    ran, not by Spark."""
    return array([typed(t, None if d is None else orjson.loads(d))
                  for t, d in zip(record_types.to_pylist(), data.to_pylist(), strict=True)])


def with_fields(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
    """Record batches of bronze rows (`record_type`, `data`, ...) with `fields` added, for
    Spark's `mapInArrow`."""
    for b in batches:
        yield b.append_column(pa.field(COLUMN, TYPE),
                              from_data(b.column("record_type"), b.column("data")))
