"""The typed `fields` struct the decoder hands silver equals the JSON `data` bronze keeps.

Silver reads a record's fields from the struct only, so any difference from `data` (a
field left out, a value widened wrongly, an absent list made empty or the other way round)
would change the silver tables without a test of the fold noticing on its own inputs.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any

import orjson
import pyarrow as pa
import pyarrow.compute as pc
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kraftlake.codec import fields
from kraftlake.codec.columnar import decode_columns
from kraftlake.codec.records import decode_metadata_value, encode_metadata_value, to_json
from kraftlake.codec.schema import registry
from kraftlake.kraft.records import STATE_TYPES
from kraftlake.sources.dumptext import read_dump_text
from tests.codec.test_message_properties import _struct
from tests.conftest import REPO, real_files, rel

FILES = real_files("segment") + real_files("snapshot") + real_files("bootstrap")
DUMPS = sorted((REPO / "tests/data/dumplog").glob("*.txt"))
CHILDREN = fields.TYPE.names


def _same(got: Any, want: Any) -> bool:
    """Equal, and of the same kind: None is not [], False is not 0."""
    return got == want and type(got) is type(want)


def assert_fields_equal_data(record_type: str | None, data: str | None,
                             got: dict[str, Any] | None, seen: Counter[str] | None = None
                             ) -> None:
    """`got` (a `fields` value read from Arrow) holds exactly the fields of the JSON `data`;
    `seen` counts the kinds of value compared."""
    seen = Counter() if seen is None else seen
    if data is None or record_type not in STATE_TYPES:
        assert got is None, (record_type, data)
        return
    body = orjson.loads(data)
    assert got is not None, (record_type, data)
    schema = registry().by_name[record_type]
    read = {f.key for f in schema.fields if not f.is_struct}
    # every field of the body silver could read is a child; the others are struct lists
    assert {k for k in body if k not in read} <= {
        f.key for f in schema.fields if f.is_struct} | {"_unknown_tags"}, body
    for key in CHILDREN:
        want = body.get(key) if key in read else None
        if isinstance(want, bool) and fields.TYPE.field(key).type == pa.int8():
            want = int(want)  # Kafka's bool Fenced beside its int8 change: held as 1 / 0
        assert _same(got[key], want), (record_type, key, got[key], want)
        if isinstance(want, list):
            seen["empty list" if not want else "list"] += 1
        elif want is None and key in read:
            seen["absent"] += 1
    seen[record_type] += 1


def _check_file(path: Path, seen: Counter[str]) -> None:
    table = decode_columns(path.read_bytes(), str(path)).table
    for t, data, got in zip(table.column("record_type").to_pylist(),
                            table.column("data").to_pylist(),
                            table.column(fields.COLUMN).to_pylist(), strict=True):
        assert_fields_equal_data(t, data, got, seen)


@pytest.mark.parametrize("path", FILES, ids=rel)
def test_fields_equal_the_json_data_on_real_files(path: Path) -> None:
    _check_file(path, Counter())


@pytest.mark.parametrize("path", DUMPS, ids=lambda p: p.name)
def test_fields_equal_the_json_data_of_a_dump_log_text(path: Path) -> None:
    table, _next, _high = read_dump_text(path, "c")
    records = table.filter(pc.equal(table.column("row_kind"), "record"))
    assert records.num_rows
    for t, data, got in zip(records.column("record_type").to_pylist(),
                            records.column("data").to_pylist(),
                            records.column(fields.COLUMN).to_pylist(), strict=True):
        assert_fields_equal_data(t, data, got)


def test_the_real_files_hold_what_the_checks_are_about() -> None:
    """The corpus's records compared above include absent and empty lists, and every kind
    of record silver reads most."""
    seen: Counter[str] = Counter()
    for path in real_files("segment"):
        _check_file(path, seen)
    assert seen["absent"] and seen["empty list"] and seen["list"]
    for t in ("PartitionRecord", "PartitionChangeRecord", "TopicRecord", "ConfigRecord",
              "FeatureLevelRecord", "RegisterBrokerRecord", "BrokerRegistrationChangeRecord",
              "FenceBrokerRecord", "UnfenceBrokerRecord"):
        assert seen[t], t


def test_the_struct_is_every_non_struct_field_of_the_types_silver_reads() -> None:
    keys = {f.key for t in STATE_TYPES for f in registry().by_name[t].fields
            if not f.is_struct}
    assert set(CHILDREN) == keys and len(CHILDREN) == len(keys)
    assert fields.TYPE.field("leader_recovery_state").type == pa.int8()
    assert fields.TYPE.field("isr").type == pa.list_(pa.int32())
    assert fields.TYPE.field("fenced").type == pa.int8()  # bool in RegisterBrokerRecord


CASES = [(registry().by_name[t], v) for t in STATE_TYPES
         for v in range(registry().by_name[t].versions[0],
                        (registry().by_name[t].versions[1]
                         or registry().by_name[t].versions[0]) + 1)]


@pytest.mark.parametrize("schema,version", CASES, ids=lambda x: getattr(x, "name", x))
@settings(max_examples=40, deadline=None)
@given(data=st.data())
def test_random_records_fields_equal_their_json(schema, version, data) -> None:
    """Any record of a type silver reads, at any version: the decoder's struct equals the
    JSON it writes, and the struct made again from that JSON (records read back from
    bronze, `fields.from_data`) equals the decoder's."""
    body = data.draw(_struct(schema.fields, version))
    decoded = decode_metadata_value(encode_metadata_value(schema.name, version, body))
    assert decoded.data is not None, decoded.error
    (got,) = fields.array([fields.typed(decoded.type, decoded.data)]).to_pylist()
    text = to_json(decoded.data)
    assert_fields_equal_data(decoded.type, text, got)
    again = fields.from_data(pa.array([decoded.type]), pa.array([text])).to_pylist()
    assert again == [got]


def test_other_records_and_undecodable_ones_have_no_fields() -> None:
    assert fields.typed("NoOpRecord", {}) is None
    assert fields.typed("PartitionChangeRecord", None) is None
    assert fields.typed(None, None) is None
    assert fields.from_data(pa.array(["NoOpRecord", "TopicRecord"]),
                            pa.array(["{}", None])).to_pylist() == [None, None]
