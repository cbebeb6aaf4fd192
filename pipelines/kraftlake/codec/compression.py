"""The record-batch compression codecs Kafka accepts (attributes bits 0-2).

Kafka writes the metadata log uncompressed, but its reader accepts every codec, so we do
too. The codecs come from libraries (gzip from the standard library, python-snappy, lz4,
zstandard); only Kafka's xerial framing around snappy blocks is ours, because no library
writes that exact framing.
"""

from __future__ import annotations

import gzip
import struct
import zlib

import lz4.frame
import snappy
import zstandard

from .errors import CorruptBatchError

NONE, GZIP, SNAPPY, LZ4, ZSTD = 0, 1, 2, 3, 4
NAMES = {NONE: "none", GZIP: "gzip", SNAPPY: "snappy", LZ4: "lz4", ZSTD: "zstd"}

# xerial snappy-java stream: magic, then version 1 and compatible version 1, then blocks of
# [int32 compressed length][snappy block].
_XERIAL_MAGIC = b"\x82SNAPPY\x00"
_XERIAL_HEADER = _XERIAL_MAGIC + struct.pack(">ii", 1, 1)
_XERIAL_BLOCK = 32 * 1024
_MAX_DECOMPRESSED = 64 * 1024 * 1024  # far above Kafka's 8 MiB batch limit


def _xerial_decompress(data: bytes) -> bytes:
    if not data.startswith(_XERIAL_MAGIC):  # a bare snappy block, which Kafka's reader takes
        block: bytes = snappy.uncompress(data)
        return block
    pos = len(_XERIAL_HEADER)
    out = bytearray()
    while pos < len(data):
        if pos + 4 > len(data):
            raise CorruptBatchError("snappy: truncated xerial block header")
        (n,) = struct.unpack_from(">i", data, pos)
        pos += 4
        if n < 0 or pos + n > len(data):
            raise CorruptBatchError(f"snappy: xerial block of {n} bytes past the end")
        out += snappy.uncompress(data[pos:pos + n])
        if len(out) > _MAX_DECOMPRESSED:
            raise CorruptBatchError("snappy: decompressed size is implausible")
        pos += n
    return bytes(out)


def _xerial_compress(data: bytes) -> bytes:
    out = bytearray(_XERIAL_HEADER)
    for i in range(0, len(data), _XERIAL_BLOCK):
        block = snappy.compress(data[i:i + _XERIAL_BLOCK])
        out += struct.pack(">i", len(block)) + block
    return bytes(out)


def decompress(codec: int, data: bytes) -> bytes:
    """Decompress a batch's records section; any failure is a CorruptBatchError."""
    try:
        if codec == NONE:
            return data
        if codec == GZIP:
            d = zlib.decompressobj(wbits=31)
            out = d.decompress(data, _MAX_DECOMPRESSED)
            if d.unconsumed_tail:
                raise CorruptBatchError("gzip: decompressed size is implausible")
            return out
        if codec == SNAPPY:
            return _xerial_decompress(data)
        if codec == LZ4:
            frame: bytes = lz4.frame.decompress(data)
            return frame
        if codec == ZSTD:
            return zstandard.ZstdDecompressor().decompress(
                data, max_output_size=_MAX_DECOMPRESSED)
    except CorruptBatchError:
        raise
    except Exception as exc:  # each library raises its own types; all mean "corrupt"
        raise CorruptBatchError(f"{NAMES.get(codec, codec)}: cannot decompress: {exc}") from None
    raise CorruptBatchError(f"unknown compression codec {codec}")


def compress(codec: int, data: bytes) -> bytes:
    """A batch's records section compressed with `codec` as Kafka writes it (snappy in xerial
    framing, gzip without a timestamp, so equal input gives equal bytes); ValueError for an unknown
    codec. The writing side of `decompress`, for the encoder (`batch.encode_batch`)."""
    if codec == NONE:
        return data
    if codec == GZIP:
        return gzip.compress(data, mtime=0)
    if codec == SNAPPY:
        return _xerial_compress(data)
    if codec == LZ4:
        frame: bytes = lz4.frame.compress(data)
        return frame
    if codec == ZSTD:
        return zstandard.ZstdCompressor().compress(data)
    raise ValueError(f"unknown compression codec {codec}")
