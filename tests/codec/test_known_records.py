"""Decoded values checked by hand against the bytes, and Kafka's own test vectors."""

from __future__ import annotations

import pytest

from kraftlake.codec.batch import Batch, build_batch, encode_batch, scan_batches
from kraftlake.codec.logfiles import classify, iter_file, records_of_batch
from kraftlake.codec.message import UNKNOWN_TAGS
from kraftlake.codec.records import (
    control_key,
    decode_control_value,
    decode_metadata_value,
    encode_control_value,
    encode_metadata_value,
)
from kraftlake.codec.wire import (
    read_uvarint,
    read_varint,
    uuid_from_str,
    uuid_to_str,
    write_uvarint,
    write_varint,
)
from tests.conftest import real

ELR_LOG = real("IndusWargods__local-test-rig/kafka-data/__cluster_metadata-0"
               "/00000000000000000000.log")
TOPIC = "YNY5hm01SZ-bAGeCLAGqWA"  # = bytes 60d639866d35499f9b0067822c01aa58, URL-safe base64


def _records_at(path, offsets):  # type: ignore[no-untyped-def]
    return {r.offset: r for _, recs in iter_file(classify(path)) for r in recs
            if r.offset in offsets}


def test_elr_lifecycle_records_of_a_real_4x_cluster() -> None:
    """Offsets 3594, 3599, 3602: the only broker dies (ISR -> [], ELR/LKE = [1]), comes back
    as a new incarnation (ELR cleared), and is elected as last known leader (LRS=1).

    Hand parse of 3602: 01 frame · 05 PartitionChangeRecord · 02 v2 · 00000000 partition 0 ·
    16-byte topic id · 04 tagged fields: tag 0 size 5 [1] (Isr), tag 1 size 4 1 (Leader),
    tag 5 size 1 01 (LeaderRecoveryState RECOVERING), tag 7 size 1 empty array (LastKnownElr).
    """
    topic_hex = "60 d6 39 86 6d 35 49 9f 9b 00 67 82 2c 01 aa 58"
    head = f"01 05 02 00 00 00 00 {topic_hex}"
    expected_bytes = {
        3594: head + " 04 00 01 01 01 04 ff ff ff ff 06 05 02 00 00 00 01 07 05 02 00 00 00 01",
        3599: head + " 01 06 01 01",
        3602: head + " 04 00 05 02 00 00 00 01 01 04 00 00 00 01 05 01 01 07 01 01",
    }
    recs = _records_at(ELR_LOG, set(expected_bytes))
    absent = {"replicas": None, "removing_replicas": None, "adding_replicas": None,
              "directories": None}
    expected_data = {
        3594: {"isr": [], "leader": -1, "leader_recovery_state": -1,
               "eligible_leader_replicas": [1], "last_known_elr": [1]},
        3599: {"isr": None, "leader": -2, "leader_recovery_state": -1,
               "eligible_leader_replicas": [], "last_known_elr": None},
        3602: {"isr": [1], "leader": 1, "leader_recovery_state": 1,
               "eligible_leader_replicas": None, "last_known_elr": []},
    }
    for off, hexes in expected_bytes.items():
        r = recs[off]
        assert r.value == bytes.fromhex(hexes.replace(" ", ""))
        assert (r.type, r.api_key, r.version, r.control, r.epoch) == \
            ("PartitionChangeRecord", 5, 2, False, 4)
        assert r.data == {"partition_id": 0, "topic_id": TOPIC, **absent, **expected_data[off]}
    assert recs[3594].timestamp == 1775473337064


def test_uuid_text_form_is_kafkas() -> None:
    assert uuid_to_str(bytes.fromhex("60d639866d35499f9b0067822c01aa58")) == TOPIC
    # DirectoryId's reserved ids: MIGRATING = Uuid(0,0), UNASSIGNED = (0,1), LOST = (0,2)
    assert uuid_to_str(bytes(16)) == "AAAAAAAAAAAAAAAAAAAAAA"
    assert uuid_to_str(bytes(15) + b"\x01") == "AAAAAAAAAAAAAAAAAAAAAQ"
    assert uuid_to_str(bytes(15) + b"\x02") == "AAAAAAAAAAAAAAAAAAAAAg"
    assert uuid_from_str(TOPIC).hex() == "60d639866d35499f9b0067822c01aa58"


def test_frame_header_vector_from_kafkas_serde_test() -> None:
    """MetadataRecordSerdeTest: a RegisterBrokerRecord v0 value starts 01 00 00."""
    value = encode_metadata_value("RegisterBrokerRecord", 0, {
        "broker_id": 1, "incarnation_id": "AAAAAAAAAAAAAAAAAAAAAQ", "broker_epoch": 7,
        "end_points": [], "features": [], "rack": None})
    assert value[:3] == b"\x01\x00\x00"
    d = decode_metadata_value(value)
    assert (d.type, d.version, d.data["broker_epoch"], d.data["fenced"]) == \
        ("RegisterBrokerRecord", 0, 7, True)


def test_unclean_election_record_bytes_match_a_hand_built_encoding() -> None:
    """T7's record {Isr [2], Leader 2, LRS 1} at v0, laid out by hand (docs/semantics.md 4.5)."""
    data = {"partition_id": 3, "topic_id": TOPIC, "isr": [2], "leader": 2,
            "leader_recovery_state": 1}
    expected = (bytes([1, 5, 0]) + b"\x00\x00\x00\x03" + uuid_from_str(TOPIC)
                + bytes([3])                              # three tagged fields
                + bytes([0, 5, 2]) + b"\x00\x00\x00\x02"  # tag 0 Isr: [2]
                + bytes([1, 4]) + b"\x00\x00\x00\x02"     # tag 1 Leader: 2
                + bytes([5, 1, 1]))                       # tag 5 LeaderRecoveryState: 1
    assert encode_metadata_value("PartitionChangeRecord", 0, data) == expected
    back = decode_metadata_value(expected).data
    assert back["isr"] == [2] and back["replicas"] is None and back["leader_recovery_state"] == 1


def test_real_snapshot_starts_with_header_and_ends_with_footer() -> None:
    snap = real("ogs59__docker-compose-kafka4.10/data/kafka-1/__cluster_metadata-0"
                "/00000000000000020475-0000000026.checkpoint")
    lf = classify(snap)
    assert (lf.kind, lf.offset, lf.epoch) == ("snapshot", 20475, 26)
    records = [r for _, recs in iter_file(lf) for r in recs]
    assert records[0].control and records[0].type == "SnapshotHeaderRecord"
    assert records[-1].control and records[-1].type == "SnapshotFooterRecord"
    assert {r.epoch for r in records} == {26}
    assert [r.offset for r in records] == list(range(len(records)))  # snapshot-local offsets
    first_data = records[1]
    assert first_data.type == "FeatureLevelRecord" and first_data.data["name"] == "metadata.version"
    assert sum(r.type == "PartitionRecord" for r in records) == 56


def test_leader_change_message_is_a_control_record() -> None:
    recs = _records_at(ELR_LOG, {0})
    r = recs[0]
    assert (r.control, r.type, r.api_key) == (True, "LeaderChangeMessage", 2)
    assert r.data == {"version": 0, "leader_id": 1, "voters": [{"voter_id": 1}],
                      "granting_voters": [{"voter_id": 1}]}
    assert decode_control_value(control_key("LeaderChangeMessage"),
                                encode_control_value("LeaderChangeMessage", r.data)).data == r.data


def test_unknown_api_key_version_and_tag_are_kept_not_fatal() -> None:
    unknown_key = bytes([1, 99, 0, 0])
    d = decode_metadata_value(unknown_key)
    assert d.data is None and "unknown metadata apiKey 99" in d.error
    future_version = bytes([1, 5, 9]) + bytes(20)
    d = decode_metadata_value(future_version)
    assert d.type == "PartitionChangeRecord" and d.data is None and "version 9" in d.error
    # a NoOpRecord carrying a tag this build does not know: decoded, and the tag survives
    with_tag = bytes([1, 20, 0, 1, 42, 2, 0xAB, 0xCD])
    d = decode_metadata_value(with_tag)
    assert d.error is None and d.data == {UNKNOWN_TAGS: {42: b"\xab\xcd"}}
    assert encode_metadata_value("NoOpRecord", 0, d.data) == with_tag
    batch = build_batch(7, 3, 1_700_000_000_000, [unknown_key, with_tag])
    recs = records_of_batch(next(b for b in scan_batches(encode_batch(batch))
                                 if isinstance(b, Batch)))
    assert [(r.offset, r.type, r.value) for r in recs] == \
        [(7, "Unknown", unknown_key), (8, "NoOpRecord", with_tag)]


@pytest.mark.parametrize("n", [0, 1, 127, 128, 300, 2**31 - 1, 2**63 - 1])
def test_varints_round_trip(n: int) -> None:
    out = bytearray()
    write_uvarint(out, n)
    assert read_uvarint(bytes(out), 0) == (n, len(out))
    for signed in (n, -n - 1):
        if -(2**63) <= signed < 2**63:
            out = bytearray()
            write_varint(out, signed)
            assert read_varint(bytes(out), 0) == (signed, len(out))


def test_unknown_tag_between_known_tags_of_a_real_record_survives() -> None:
    """A newer Kafka adds tag 6.5 (say 9) to a real PartitionChangeRecord: nothing is lost."""
    real = _records_at(ELR_LOG, {3602})[3602]
    head, tags = real.value[:23], real.value[24:]  # 3 frame + 4 partition + 16 topic; count
    assert real.value[23] == 4
    # tags 0, 1, 5, 7 are followed by a new tag 9 carrying two bytes
    value = head + bytes([5]) + tags + bytes([9, 2, 0xBE, 0xEF])
    d = decode_metadata_value(value)
    assert d.error is None
    assert d.data[UNKNOWN_TAGS] == {9: b"\xbe\xef"}
    assert {k: v for k, v in d.data.items() if k != UNKNOWN_TAGS} == real.data
    assert encode_metadata_value("PartitionChangeRecord", 2, d.data) == value
