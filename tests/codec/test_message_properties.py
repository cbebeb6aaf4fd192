"""Every record type at every version: random data encodes and decodes back to itself."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kraftlake.codec.message import decode_body, encode_body
from kraftlake.codec.records import decode_metadata_value
from kraftlake.codec.schema import Field, RecordSchema, in_range, registry
from kraftlake.codec.wire import uuid_to_str

INTS = {"int8": 8, "int16": 16, "int32": 32, "int64": 64}


def _scalar(t: str, nullable: bool) -> st.SearchStrategy[Any]:
    if t in INTS:
        bits = INTS[t]
        s: st.SearchStrategy[Any] = st.integers(-(2 ** (bits - 1)), 2 ** (bits - 1) - 1)
    elif t == "uint16":
        s = st.integers(0, 2**16 - 1)
    elif t == "uint32":
        s = st.integers(0, 2**32 - 1)
    elif t == "float64":
        s = st.floats(allow_nan=False)
    elif t == "bool":
        s = st.booleans()
    elif t == "uuid":
        s = st.binary(min_size=16, max_size=16).map(uuid_to_str)
    elif t == "string":
        s = st.text(max_size=12)
    else:  # bytes, records
        s = st.binary(max_size=12)
    return st.one_of(st.none(), s) if nullable else s


def _field(f: Field, version: int) -> st.SearchStrategy[Any]:
    nullable = in_range(version, f.nullable)
    tagged = in_range(version, f.tagged)
    if f.is_struct:
        elem: st.SearchStrategy[Any] = _struct(f.fields or (), version)
    else:
        elem = _scalar(f.element_type, nullable and not f.is_array)
    if not f.is_array:
        return st.one_of(st.none(), elem) if f.is_struct and tagged else elem
    arr = st.lists(elem, max_size=4)
    return st.one_of(st.none(), arr) if nullable or tagged else arr


def _struct(fields: tuple[Field, ...], version: int) -> st.SearchStrategy[dict[str, Any]]:
    return st.fixed_dictionaries({f.key: _field(f, version) for f in fields
                                  if in_range(version, f.versions)})


CASES = [(s, v) for s in registry().by_name.values()
         for v in range(s.versions[0], (s.versions[1] or s.versions[0]) + 1)]


def test_every_record_type_is_covered() -> None:
    assert len(registry().by_api_key) >= 29 and len(registry().by_control_type) >= 6
    assert len(CASES) >= 40


@pytest.mark.parametrize("schema,version", CASES, ids=lambda x: getattr(x, "name", x))
@settings(max_examples=30, deadline=None)
@given(data=st.data())
def test_random_values_round_trip(schema: RecordSchema, version: int, data: st.DataObject) -> None:
    value = data.draw(_struct(schema.fields, version))
    raw = encode_body(schema, version, value)
    assert decode_body(schema, version, raw) == value
    assert encode_body(schema, version, decode_body(schema, version, raw)) == raw


@settings(max_examples=400, deadline=None)
@given(st.sampled_from(sorted(registry().by_api_key)), st.integers(0, 3), st.binary(max_size=64))
def test_random_bodies_never_raise(api_key: int, version: int, body: bytes) -> None:
    """Garbage after a valid frame header decodes or is kept with a reason; never raises."""
    d = decode_metadata_value(bytes([1, api_key, version]) + body)
    assert (d.data is None) == (d.error is not None)
