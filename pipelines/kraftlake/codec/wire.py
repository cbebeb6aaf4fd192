"""Kafka wire primitives: varints, fixed-width integers, compact strings and uuids.

Functions take `(buf, pos)` and return `(value, new_pos)` so the hot loops avoid objects;
`bytes` indexing beyond the end raises IndexError, which callers turn into a codec error.
Writers append to a `bytearray`.
"""

from __future__ import annotations

import base64
import struct

from .errors import RecordDecodeError

INT8 = struct.Struct(">b")
INT16 = struct.Struct(">h")
UINT16 = struct.Struct(">H")
INT32 = struct.Struct(">i")
UINT32 = struct.Struct(">I")
INT64 = struct.Struct(">q")
FLOAT64 = struct.Struct(">d")

_MAX_VARINT_BYTES = 10


def read_uvarint(buf: bytes, pos: int) -> tuple[int, int]:
    """Unsigned LEB128 varint (Kafka's `ByteUtils.readUnsignedVarint`, up to 64 bits)."""
    b = buf[pos]
    if b < 0x80:
        return b, pos + 1
    result = b & 0x7F
    shift = 7
    end = pos + _MAX_VARINT_BYTES
    pos += 1
    while pos < end:
        b = buf[pos]
        pos += 1
        result |= (b & 0x7F) << shift
        if b < 0x80:
            return result, pos
        shift += 7
    raise RecordDecodeError(f"varint longer than {_MAX_VARINT_BYTES} bytes at byte {pos}")


def read_varint(buf: bytes, pos: int) -> tuple[int, int]:
    """Signed zigzag varint/varlong (record framing fields)."""
    n, pos = read_uvarint(buf, pos)
    return (n >> 1) ^ -(n & 1), pos


def write_uvarint(out: bytearray, n: int) -> None:
    if n < 0:
        raise ValueError(f"unsigned varint cannot hold {n}")
    while n >= 0x80:
        out.append((n & 0x7F) | 0x80)
        n >>= 7
    out.append(n)


def write_varint(out: bytearray, n: int) -> None:
    write_uvarint(out, (n << 1) ^ (n >> 63))


_uuid_text: dict[bytes, str] = {}


def uuid_to_str(raw: bytes) -> str:
    """Kafka's `Uuid.toString`: URL-safe base64 without padding (22 characters).

    A log names the same few topic, directory and incarnation ids over and over, so the
    text of each is remembered (bounded, so a log of random ids cannot grow it forever).
    """
    text = _uuid_text.get(raw)
    if text is None:
        text = base64.urlsafe_b64encode(raw).decode("ascii").rstrip("=")
        if len(_uuid_text) < 100_000:
            _uuid_text[bytes(raw)] = text
    return text


_uuid_bytes: dict[str, bytes] = {}


def uuid_from_str(text: str) -> bytes:
    """The 16 bytes of a uuid in Kafka's text form (remembered, like `uuid_to_str`)."""
    raw = _uuid_bytes.get(text)
    if raw is None:
        raw = base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))
        if len(raw) != 16:
            raise ValueError(f"not a Kafka uuid: {text!r}")
        if len(_uuid_bytes) < 100_000:
            _uuid_bytes[text] = raw
    return raw


ZERO_UUID = uuid_to_str(bytes(16))
