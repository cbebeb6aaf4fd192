"""The codec's own errors: every failure on bad bytes is one of these, never a bare IndexError.

Readers of whole files do not raise them for damaged batches; they record a `Problem`
(file, byte position, reason) and carry on. The exceptions are for callers that decode
one unit (a batch, a record value) and for the strict mode of the CLI.
"""

from __future__ import annotations


class KraftCodecError(Exception):
    """Base class of every error the codec raises on bad input."""


class CorruptBatchError(KraftCodecError):
    """A record batch whose framing, magic, CRC or contents are not valid."""


class TruncatedError(KraftCodecError):
    """Bytes end before the structure they announce (e.g. a partly written last batch)."""


class RecordDecodeError(KraftCodecError):
    """A record value that does not decode with its schema (kept as raw bytes by readers)."""


class SchemaError(KraftCodecError):
    """The schema files under schemas/records are missing or inconsistent."""


class NotAKafkaLogError(KraftCodecError):
    """A path that is neither a metadata-log file, a log directory nor a dump-log text."""


class NotTheMetadataLogError(NotAKafkaLogError):
    """A Kafka log of some other topic: its records are user data, never read further."""
