"""kafka-dump-log text -> Records: must agree with the binary reader on real files.

Three kinds of evidence:
1. real segment/snapshot files printed the way Kafka releases the test harness does not run
   print them (3.0 and 3.3: `dumplog_render`), parsed back, compared record by record with
   the binary decode. The 3.9 and 4.x text comes from Kafka itself: tests/kafka/
   test_dump_parity.py runs 3.9.1's and 4.3.1's DumpLogSegments on these files and holds
   kraftlake's parse of that text equal to the bytes;
2. hand-written excerpts in Kafka's exact format with values checked by hand
   (`tests/data/dumplog/`);
3. damaged text: each bad line becomes a problem with its line number, the rest survives.
   Kafka cannot be made to print damaged or partial text, so these cases start from
   kraftlake's renderer (or the excerpts) and are broken by hand.
"""

from __future__ import annotations

import base64
from pathlib import Path

import pytest

from kraftlake.codec.dumplog import (
    DumpLogError,
    DumpProblem,
    looks_like_dump_log,
    parse_dump_log,
    read_dump_log,
)
from kraftlake.codec.errors import KraftCodecError
from kraftlake.codec.logfiles import FileReport, classify, iter_file
from kraftlake.codec.records import Record
from kraftlake.codec.redact import placeholder
from tests.conftest import real

try:
    from .dumplog_render import DIALECTS, render_path
except ImportError:  # tests/codec is not a package
    from dumplog_render import DIALECTS, render_path

DATA = Path(__file__).resolve().parents[1] / "data" / "dumplog"

SEGMENTS = {
    "ogs59-3brokers": "ogs59__docker-compose-kafka4.10/data/kafka-1/__cluster_metadata-0/"
                      "00000000000000000000.log",
    "nomanazeem-elr": "nomanazeem__Kafka-java/kafka-logs/__cluster_metadata-0/"
                      "00000000000000000000.log",
    "nurlan-fence": "nurlan-abdullazada__Docker-compose/data/kafka1/__cluster_metadata-0/"
                    "00000000000000000000.log",
    "indus-lrs-rmtopic": "IndusWargods__local-test-rig/kafka-data/__cluster_metadata-0/"
                         "00000000000000000000.log",
    "ogs59-snapshot": "ogs59__docker-compose-kafka4.10/data/kafka-1/__cluster_metadata-0/"
                      "00000000000000020475-0000000026.checkpoint",
    "indus-bootstrap": "IndusWargods__local-test-rig/kafka-data/bootstrap.checkpoint",
}
# The Kafka release each file's writer most plausibly ran (MV / record kinds, see INVENTORY.md)
NATIVE = {"ogs59-3brokers": "3.9", "nomanazeem-elr": "4.1", "nurlan-fence": "3.0",
          "indus-lrs-rmtopic": "4.1", "ogs59-snapshot": "3.9", "indus-bootstrap": "4.1"}

# Control types each dialect prints with contents (others as "controlType: NAME(id)")
_PRINTED_FROM = {2: "4.1", 3: "3.3", 4: "3.3", 5: "3.9", 6: "3.9"}


def _real(name: str) -> Path:
    return real(SEGMENTS[name])


def _binary(path: Path) -> list[Record]:
    lf = classify(path)
    assert lf is not None
    report = FileReport(str(path), lf.kind)
    out = [r for _, recs in iter_file(lf, report) for r in recs]
    assert not report.problems, report.problems
    return out


def _split(items: list[Record | DumpProblem]) -> tuple[list[Record], list[DumpProblem]]:
    recs = [i for i in items if isinstance(i, Record)]
    probs = [i for i in items if isinstance(i, DumpProblem)]
    return recs, probs


# ---------------------------------------------------------------- 1. real files round trip


def _ver(d: str) -> tuple[int, ...]:
    return tuple(int(x) for x in d.split("."))


# Dialects no Kafka of the harness prints (it runs 3.9.1 and 4.3.1, tests/kafka/cluster.py)
RENDERED_ONLY = tuple(d for d in DIALECTS if _ver(d) < (3, 9))
# (file, dialect) pairs a release could print: kafka-dump-log reads snapshots only from 3.3
# (KAFKA-13845), so no older dialect has a rendering of a .checkpoint
RENDERED_CASES = [(name, dialect) for dialect in RENDERED_ONLY for name in sorted(SEGMENTS)
                  if not (SEGMENTS[name].endswith(".checkpoint") and _ver(dialect) < (3, 3))]


@pytest.mark.parametrize(("name", "dialect"), RENDERED_CASES)
def test_real_file_dump_matches_binary_decode(name: str, dialect: str) -> None:
    """kraftlake's rendering of a real file in an old release's format, parsed back, equals
    the binary decode: only for releases whose tool the harness does not run (Kafka's own
    3.9.1 and 4.3.1 text is held against the bytes in tests/kafka/test_dump_parity.py)."""
    path = _real(name)
    expected = _binary(path)
    lines = render_path(path, dialect)
    got, problems = _split(list(parse_dump_log(lines, str(path))))

    assert problems == []
    assert len(got) == len(expected)
    for g, e in zip(got, expected, strict=True):
        where = f"offset {e.offset} ({e.type})"
        assert (g.offset, g.timestamp, g.epoch, g.control, g.type, g.api_key, g.version) == \
            (e.offset, e.timestamp, e.epoch, e.control, e.type, e.api_key, e.version), where
        if e.control and _ver(dialect) < _ver(_PRINTED_FROM.get(e.api_key, "99.0")):
            # printed as "controlType: NAME(id)": the record is kept, its contents are not
            assert g.data is None and g.value is None and g.error, where
            continue
        assert g.error is None, where
        assert g.data == e.data, where
        assert g.value == e.value, where  # re-encoded bytes identical to the file's


@pytest.mark.parametrize("name", sorted(SEGMENTS))
def test_native_dialect_covers_the_interesting_records(name: str) -> None:
    """The features the brief picked each file for really come through the text path."""
    path = _real(name)
    got, problems = _split(list(parse_dump_log(render_path(path, NATIVE[name]), str(path))))
    assert problems == []
    by_type: dict[str, list[Record]] = {}
    for r in got:
        by_type.setdefault(r.type, []).append(r)
    if name == "ogs59-3brokers":
        assert len(by_type["PartitionChangeRecord"]) == 298
        assert {r.data["broker_id"] for r in by_type["RegisterBrokerRecord"]} == {1, 2, 3}
        assert len({r.epoch for r in got}) > 10  # many Raft epochs, each from its batch line
    elif name == "nomanazeem-elr":
        elr = [r for r in by_type["PartitionChangeRecord"]
               if r.data["eligible_leader_replicas"] is not None]
        assert len(elr) == 159 and all(r.version == 2 for r in elr)
        assert all(r.data["last_known_elr"] is not None for r in elr)
    elif name == "nurlan-fence":
        assert len(by_type["FenceBrokerRecord"]) == 3
        assert len(by_type["UnfenceBrokerRecord"]) == 3
        assert len(by_type["PartitionChangeRecord"]) == 115
        # 3.0-era dump: LeaderChange printed without contents but still holds its offset
        assert all(r.data is None for r in by_type["LeaderChangeMessage"])
    elif name == "indus-lrs-rmtopic":
        assert len(by_type["RemoveTopicRecord"]) == 2
        lrs = [r.data["leader_recovery_state"] for r in by_type["PartitionChangeRecord"]]
        assert lrs.count(-1) == 2 and [x for x in lrs if x != -1] == [1]
        assert by_type["LeaderChangeMessage"][0].data["leader_id"] == 1
    elif name == "ogs59-snapshot":
        assert by_type["SnapshotHeaderRecord"][0].data["version"] == 0
        assert len(by_type["PartitionRecord"]) == 56
    elif name == "indus-bootstrap":
        assert (got[0].type, got[-1].type) == ("SnapshotHeaderRecord", "SnapshotFooterRecord")


# ---------------------------------------------------------------- 2. hand-written excerpts


def test_excerpt_39_hand_checked_values() -> None:
    result = read_dump_log(DATA / "kafka-3.9-excerpt.txt")
    assert result.problems == []
    recs = {r.offset: r for r in result.records}
    assert sorted(recs) == list(range(9))

    # control batch, epoch 1; LeaderChange before 4.1 has no contents
    lc = recs[0]
    assert (lc.control, lc.type, lc.api_key, lc.epoch, lc.data) == \
        (True, "LeaderChangeMessage", 2, 1, None)
    kv = recs[1]
    assert (kv.type, kv.api_key, kv.data) == ("KRaftVersionRecord", 5,
                                              {"version": 0, "kraft_version": 1})
    assert kv.value == bytes.fromhex("0000" "0001" "00")
    voters = recs[2].data["voters"]
    assert voters == [{"voter_id": 1, "voter_directory_id": "GFfeLFoDJu4KMe8XKva7uw",
                       "endpoints": [{"name": "CONTROLLER", "host": "kafka-1", "port": 9093}],
                       "kraft_version_feature": {"min_supported_version": 0,
                                                 "max_supported_version": 1}}]

    rb = recs[3]
    assert (rb.type, rb.api_key, rb.version, rb.timestamp) == \
        ("RegisterBrokerRecord", 0, 3, 1731400000456)
    assert rb.data["rack"] is None and rb.data["fenced"] is True
    assert rb.data["log_dirs"] == ["dWtvCL47a8wwqseEoQfh4g"]
    assert rb.data["end_points"][0] == {"name": "PLAINTEXT", "host": "kafka-2", "port": 9092,
                                        "security_protocol": 0}

    topic = recs[4]
    # frame 1, apiKey 2, v0 | compact "orders" | 16-byte uuid | no tagged fields
    uuid = base64.urlsafe_b64decode("0mQ6f8pnhKy6Y70nJ1UGBg==")
    assert topic.value == bytes([1, 2, 0, 7]) + b"orders" + uuid + b"\x00"

    pcr = recs[6]
    assert pcr.data == {"partition_id": 0, "topic_id": "0mQ6f8pnhKy6Y70nJ1UGBg", "isr": [2],
                        "leader": -2, "replicas": None, "removing_replicas": None,
                        "adding_replicas": None, "leader_recovery_state": 1}
    # tags in ascending order: 0 (Isr: len 5, compact count 2, int32 2), 5 (LRS: 1 byte)
    assert pcr.value == (bytes([1, 5, 0]) + b"\x00\x00\x00\x00" + uuid + b"\x02"
                         + b"\x00\x05\x02\x00\x00\x00\x02" + b"\x05\x01\x01")

    # secrets printed by Kafka never leave the codec
    scram = recs[7]
    assert scram.data["salt"] == b"" and scram.data["stored_key"] == b""
    assert b"saltsalt" not in scram.value and b"storedkey" not in scram.value
    assert scram.epoch == 2 and scram.timestamp == 1731400099000
    assert recs[8].type == "NoOpRecord" and recs[8].value == bytes([1, 20, 0, 0])


def test_excerpt_value_sizes_match_what_kafka_printed() -> None:
    """valueSize on each record line is the length of the bytes Kafka stored; the re-encoded
    value must have exactly that length (redaction aside)."""
    for name in ("kafka-3.9-excerpt.txt", "kafka-4.1-excerpt.txt"):
        lines = (DATA / name).read_text().splitlines()
        printed = {int(ln.split()[2]): int(ln.split("valueSize: ")[1].split()[0])
                   for ln in lines if ln.startswith("| offset: ")}
        recs, problems = _split(list(parse_dump_log(lines, name, redact=False)))
        assert problems == []
        for r in recs:
            if r.value is not None:
                assert len(r.value) == printed[r.offset], (name, r.offset)


def test_excerpt_41_leader_change_has_contents() -> None:
    recs, problems = _split(list(parse_dump_log(
        (DATA / "kafka-4.1-excerpt.txt").read_text().splitlines(), "x")))
    assert problems == []
    (lc,) = recs
    assert (lc.offset, lc.epoch, lc.timestamp, lc.type) == \
        (9, 3, 1731400120000, "LeaderChangeMessage")
    assert lc.data == {"version": 0, "leader_id": 2,
                       "voters": [{"voter_id": 1}, {"voter_id": 2}, {"voter_id": 3}],
                       "granting_voters": [{"voter_id": 2}, {"voter_id": 3}]}


def test_skip_record_metadata_counts_offsets_from_the_batch() -> None:
    lines = [
        "baseOffset: 40 lastOffset: 42 count: 3 baseSequence: -1 lastSequence: -1 "
        "producerId: -1 producerEpoch: -1 partitionLeaderEpoch: 7 isTransactional: false "
        "isControl: false deleteHorizonMs: OptionalLong.empty position: 0 CreateTime: 5 "
        "size: 90 magic: 2 compresscodec: none crc: 1 isvalid: true",
        ' payload: {"type":"NO_OP_RECORD","version":0,"data":{}}',  # Scala tool
        '| payload: {"type":"NO_OP_RECORD","version":0,"data":{}}',  # Java tool
        ' payload: {"type":"NO_OP_RECORD","version":0,"data":{}}',
    ]
    recs, problems = _split(list(parse_dump_log(lines, "x")))
    assert problems == []
    assert [(r.offset, r.epoch, r.timestamp) for r in recs] == [(40, 7, 5), (41, 7, 5),
                                                                (42, 7, 5)]


def test_kafka_error_line_keeps_the_offset() -> None:
    head = (DATA / "kafka-3.9-excerpt.txt").read_text().splitlines()[:7]
    lines = [*head, "| offset: 3 CreateTime: 1731400000456 keySize: -1 valueSize: 5 "
             "sequence: -1 headerKeys: [] payload: Error at 3, skipping. Unknown metadata id 99"]
    recs, problems = _split(list(parse_dump_log(lines, "x")))
    bad = recs[-1]
    assert (bad.offset, bad.type, bad.data, bad.value) == (3, "Unknown", None, None)
    assert "Unknown metadata id 99" in (bad.error or "")
    # the batch announced 4 records, 1 was printed
    assert [p.line for p in problems] == [7]


# ---------------------------------------------------------------- 3. damaged text


def test_damaged_dump_reports_lines_and_keeps_the_rest() -> None:
    path = _real("nurlan-fence")
    lines = render_path(path, "3.0")
    expected = _binary(path)
    # line numbers are 1-based; pick record lines of data batches
    data_idx = [i for i, ln in enumerate(lines) if " payload: {" in ln]
    garbage_at, unknown_at, bad_json_at = data_idx[5], data_idx[20], data_idx[40]
    damaged = list(lines)
    damaged.insert(garbage_at, "@@@ this is not kafka-dump-log output @@@")
    unknown_at += 1
    bad_json_at += 1
    damaged[unknown_at] = damaged[unknown_at].replace('"type":"', '"type":"FROBNICATE_', 1)
    damaged[bad_json_at] = damaged[bad_json_at].replace('"data":{', '"data":{{', 1)
    cut = len(damaged) - 1
    damaged[cut] = damaged[cut][: len(damaged[cut]) // 2]  # file cut mid-line

    recs, problems = _split(list(parse_dump_log(damaged, "damaged.txt")))
    lines_reported = sorted(p.line for p in problems)
    assert garbage_at + 1 in lines_reported
    assert unknown_at + 1 in lines_reported
    assert bad_json_at + 1 in lines_reported
    assert cut + 1 in lines_reported
    reasons = " | ".join(p.reason for p in problems)
    assert "unknown metadata record type FROBNICATE_" in reasons
    assert "not valid JSON" in reasons
    assert "not part of kafka-dump-log output" in reasons
    # exactly the three damaged records and the cut one are missing; the rest agree
    lost = {int(damaged[i].split()[2]) for i in (unknown_at, bad_json_at, cut)}
    assert len(lost) == 3
    assert [r.offset for r in recs] == [e.offset for e in expected if e.offset not in lost]
    by_offset = {e.offset: e for e in expected}
    for r in recs:
        if r.data is not None:
            assert r.data == by_offset[r.offset].data


def test_truncated_batch_line_skips_its_records_only() -> None:
    lines = (DATA / "kafka-3.9-excerpt.txt").read_text().splitlines()
    idx = next(i for i, ln in enumerate(lines) if ln.startswith("baseOffset: 3 "))
    lines[idx] = lines[idx][:40]  # "baseOffset: 3 lastOffset: 6 count: 4 ba"
    recs, problems = _split(list(parse_dump_log(lines, "x")))
    assert [p.line for p in problems] == [idx + 1]
    assert "partitionLeaderEpoch" in problems[0].reason
    assert [r.offset for r in recs] == [0, 1, 2, 7, 8]


def test_invalid_crc_batch_is_skipped_like_the_binary_reader() -> None:
    lines = (DATA / "kafka-3.9-excerpt.txt").read_text().splitlines()
    idx = next(i for i, ln in enumerate(lines) if ln.startswith("baseOffset: 7 "))
    lines[idx] = lines[idx].replace("isvalid: true", "isvalid: false")
    lines.append("Found 42 invalid bytes at the end of 00000000000000000000.log")
    recs, problems = _split(list(parse_dump_log(lines, "x")))
    assert [r.offset for r in recs] == list(range(7))
    assert [p.line for p in problems] == [idx + 1, len(lines)]


def test_record_lines_without_a_batch_and_plain_dumps_are_problems() -> None:
    lines = [
        "| offset: 3 CreateTime: 1 keySize: -1 valueSize: 4 sequence: -1 headerKeys: [] "
        'payload: {"type":"NO_OP_RECORD","version":0,"data":{}}',
        "baseOffset: 4 lastOffset: 4 count: 1 baseSequence: -1 lastSequence: -1 "
        "producerId: -1 producerEpoch: -1 partitionLeaderEpoch: 1 isTransactional: false "
        "isControl: false position: 0 CreateTime: 1 size: 70 magic: 2 compresscodec: none "
        "crc: 1 isvalid: true",
        "| offset: 4 CreateTime: 1 keySize: -1 valueSize: 4 sequence: -1 headerKeys: [] "
        "payload: \x01\x14\x00\x00",  # --print-data-log without the metadata decoder
    ]
    recs, problems = _split(list(parse_dump_log(lines, "x")))
    assert recs == []
    assert [p.line for p in problems] == [1, 3]
    assert "outside any batch" in problems[0].reason
    assert "--cluster-metadata-decoder" in problems[1].reason


def test_schema_violations_are_problems_not_exceptions() -> None:
    head = ("baseOffset: 0 lastOffset: 3 count: 4 baseSequence: -1 lastSequence: -1 "
            "producerId: -1 producerEpoch: -1 partitionLeaderEpoch: 1 isTransactional: false "
            "isControl: false position: 0 CreateTime: 1 size: 70 magic: 2 compresscodec: none "
            "crc: 1 isvalid: true")
    rec = "| offset: {} CreateTime: 1 keySize: -1 valueSize: 4 sequence: -1 headerKeys: [] " \
          "payload: {}"
    lines = [head,
             rec.format(0, '{"type":"TOPIC_RECORD","version":0,"data":{"name":"t"}}'),
             rec.format(1, '{"type":"TOPIC_RECORD","version":9,"data":{}}'),
             rec.format(2, '{"type":"FEATURE_LEVEL_RECORD","version":0,'
                           '"data":{"name":"x","featureLevel":70000}}'),
             rec.format(3, '{"type":"TOPIC_RECORD","version":0,'
                           '"data":{"name":"t","topicId":"not-a-uuid"}}')]
    recs, problems = _split(list(parse_dump_log(lines, "x")))
    assert recs == []
    assert [p.line for p in problems] == [2, 3, 4, 5]
    assert "topicId: missing" in problems[0].reason
    assert "version 9" in problems[1].reason
    assert "does not fit in int16" in problems[2].reason
    assert "not a Kafka uuid" in problems[3].reason


def test_sensitive_config_values_are_redacted() -> None:
    lines = [
        "baseOffset: 0 lastOffset: 0 count: 1 baseSequence: -1 lastSequence: -1 "
        "producerId: -1 producerEpoch: -1 partitionLeaderEpoch: 1 isTransactional: false "
        "isControl: false position: 0 CreateTime: 1 size: 70 magic: 2 compresscodec: none "
        "crc: 1 isvalid: true",
        "| offset: 0 CreateTime: 1 keySize: -1 valueSize: 40 sequence: -1 headerKeys: [] "
        'payload: {"type":"CONFIG_RECORD","version":0,"data":{"resourceType":4,'
        '"resourceName":"1","name":"ssl.keystore.password","value":"hunter2"}}',
    ]
    (rec,) = [r for r in parse_dump_log(lines, "x") if isinstance(r, Record)]
    assert rec.data["value"] == placeholder()
    assert b"hunter2" not in (rec.value or b"")


# ---------------------------------------------------------------- sniffing and errors


def test_looks_like_dump_log(tmp_path: Path) -> None:
    assert looks_like_dump_log(DATA / "kafka-3.9-excerpt.txt")
    assert looks_like_dump_log((DATA / "kafka-4.1-excerpt.txt").read_text())
    assert not looks_like_dump_log(_real("nurlan-fence"))  # the binary segment
    other = tmp_path / "notes.txt"
    other.write_text("offset: 1\nhello\n")
    assert not looks_like_dump_log(other)
    assert not looks_like_dump_log(tmp_path / "missing.txt")
    rendered = tmp_path / "dump.txt"
    rendered.write_text("\n".join(render_path(_real("nomanazeem-elr"))) + "\n")
    assert looks_like_dump_log(rendered)
    assert looks_like_dump_log(str(rendered))
    # what Kafka's DumpLogSegments prints for an empty segment (a real fixture has one)
    empty = tmp_path / "empty.txt"
    empty.write_text("Dumping /data/__cluster_metadata-0/00000000000000000000.log\n"
                     "Log starting offset: 0\n")
    assert looks_like_dump_log(empty)
    got = read_dump_log(empty)
    assert (got.records, got.problems) == ([], [])


def test_read_errors_are_codec_errors(tmp_path: Path) -> None:
    with pytest.raises(DumpLogError):
        read_dump_log(tmp_path / "missing.txt")
    assert issubclass(DumpLogError, KraftCodecError)

    def broken() -> object:
        yield "baseOffset: 0 "
        raise OSError("disk went away")

    with pytest.raises(KraftCodecError):
        list(parse_dump_log(broken(), "x"))  # type: ignore[arg-type]


def test_timestamp_is_the_batch_max_timestamp() -> None:
    """The binary reader reports the batch's max timestamp; the batch line prints exactly
    that, while record lines print base timestamp + delta. Where they differ, the batch wins."""
    lines = [
        "baseOffset: 0 lastOffset: 0 count: 1 baseSequence: -1 lastSequence: -1 "
        "producerId: -1 producerEpoch: -1 partitionLeaderEpoch: 1 isTransactional: false "
        "isControl: false deleteHorizonMs: OptionalLong.empty position: 0 CreateTime: 9000 "
        "size: 70 magic: 2 compresscodec: none crc: 1 isvalid: true",
        "| offset: 0 CreateTime: 5000 keySize: -1 valueSize: 4 sequence: -1 headerKeys: [] "
        'payload: {"type":"NO_OP_RECORD","version":0,"data":{}}',
    ]
    (rec,) = [r for r in parse_dump_log(lines, "x") if isinstance(r, Record)]
    assert rec.timestamp == 9000
