"""Credentials never leave the codec, neither in decoded data nor in the kept raw bytes."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner

from kraftlake.cli import main
from kraftlake.codec.batch import Batch, build_batch, encode_batch, scan_batches
from kraftlake.codec.logfiles import records_of_batch
from kraftlake.codec.records import encode_metadata_value
from kraftlake.codec.redact import is_sensitive_config

SALT, STORED, SERVER = b"NaCl-secret-salt", b"stored-key-secret", b"server-key-secret"
PASSWORD = "hunter2-very-secret"


def _segment() -> bytes:
    values = [
        encode_metadata_value("UserScramCredentialRecord", 0, {
            "name": "alice", "mechanism": 1, "salt": SALT, "stored_key": STORED,
            "server_key": SERVER, "iterations": 4096}),
        encode_metadata_value("ConfigRecord", 0, {
            "resource_type": 4, "resource_name": "", "name": "listener.name.sasl_ssl."
            "scram-sha-256.sasl.jaas.config", "value": f'password="{PASSWORD}";'}),
        encode_metadata_value("ConfigRecord", 0, {
            "resource_type": 4, "resource_name": "1", "name": "ssl.key.password",
            "value": PASSWORD}),
        encode_metadata_value("ConfigRecord", 0, {
            "resource_type": 2, "resource_name": "orders", "name": "min.insync.replicas",
            "value": "2"}),
    ]
    return encode_batch(build_batch(0, 1, 1_700_000_000_000, values))


def _records(redact: bool):  # type: ignore[no-untyped-def]
    batch = next(b for b in scan_batches(_segment()) if isinstance(b, Batch))
    return records_of_batch(batch, redact=redact)


def test_secrets_are_gone_from_data_and_raw_value() -> None:
    scram, jaas, pw, mir = _records(redact=True)
    assert scram.data["salt"] == b"" and scram.data["stored_key"] == b""
    assert scram.data["server_key"] == b"" and scram.data["iterations"] == 4096
    assert jaas.data["value"] == "[redacted]" and pw.data["value"] == "[redacted]"
    assert mir.data["value"] == "2"
    for r in (scram, jaas, pw):
        for secret in (SALT, STORED, SERVER, PASSWORD.encode()):
            assert secret not in r.value
    assert mir.value == _records(redact=False)[3].value


def test_redaction_can_be_switched_off_for_byte_exact_work() -> None:
    scram, _, pw, _ = _records(redact=False)
    assert scram.data["salt"] == SALT and pw.data["value"] == PASSWORD


def test_sensitive_config_names() -> None:
    for name in ("ssl.key.password", "sasl.jaas.config", "ssl.keystore.key",
                 "delegation.token.secret.key", "listener.name.x.sasl.jaas.config"):
        assert is_sensitive_config(name), name
    for name in ("min.insync.replicas", "cleanup.policy", "unclean.leader.election.enable",
                 "ssl.keystore.type", "retention.ms"):
        assert not is_sensitive_config(name), name


def test_decode_cli_output_holds_no_secret(tmp_path: Path) -> None:
    seg = tmp_path / "00000000000000000000.log"
    seg.write_bytes(_segment())
    result = CliRunner().invoke(main, ["decode", str(seg), "--jsonl"])
    assert result.exit_code == 0, result.output
    lines = [json.loads(line) for line in result.output.splitlines()]
    assert [line["type"] for line in lines] == \
        ["UserScramCredentialRecord", "ConfigRecord", "ConfigRecord", "ConfigRecord"]
    assert PASSWORD not in result.output
    for secret in (SALT, STORED, SERVER):
        assert secret.decode() not in result.output
