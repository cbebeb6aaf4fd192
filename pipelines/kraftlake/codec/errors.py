"""The codec's own errors: every failure on bad bytes is one of these, never a bare IndexError.

Readers of whole files do not raise them for damaged input: `batch.scan_batches` turns a
bad batch into a `Problem` (file, byte position, reason) and carries on, and a record value
that does not decode is kept as raw bytes with its reason. The lower-level decoders raise
`CorruptBatchError` (a batch's records section, `compression.decompress`) and
`RecordDecodeError` (`message`) for those readers to catch. What reaches a caller is input
that is not a metadata log at all (`NotAKafkaLogError`), schema files that are broken
(`SchemaError`) and a dump-log text that cannot be read (`dumplog.DumpLogError`); the
commands and jobs catch `KraftCodecError` to report it.
"""

from __future__ import annotations


class KraftCodecError(Exception):
    """Base class of every error the codec raises on bad input."""


class CorruptBatchError(KraftCodecError):
    """A record batch whose framing, magic, CRC or contents are not valid."""


class RecordDecodeError(KraftCodecError):
    """A record value that does not decode with its schema (kept as raw bytes by readers)."""


class SchemaError(KraftCodecError):
    """The schema files under schemas/records are missing or inconsistent."""


class NotAKafkaLogError(KraftCodecError):
    """A path that is neither a metadata-log file, a log directory nor a dump-log text."""


class NotTheMetadataLogError(NotAKafkaLogError):
    """A Kafka log of some other topic: its records are user data, never read further."""
