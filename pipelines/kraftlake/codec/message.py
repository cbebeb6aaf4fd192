"""Schema-driven encoding and decoding of message bodies.

For each (record schema, version) a decoder and an encoder are compiled once into closures,
so the per-record cost is a loop over prepared field readers, not a walk over JSON.

Decoded values: ints, bools, floats, str, `bytes` for bytes/records fields, uuids as Kafka's
URL-safe base64 string, lists, dicts for structs. A tagged field that is absent decodes to
its default for scalars and to None for arrays and structs, so "absent" and "empty" stay
distinct. Unknown tags are kept under `UNKNOWN_TAGS` as raw bytes and written back.
"""

from __future__ import annotations

import struct
from collections.abc import Callable
from functools import cache
from typing import Any

from .errors import RecordDecodeError
from .schema import Field, RecordSchema, in_range
from .wire import (
    FLOAT64,
    INT8,
    INT16,
    INT32,
    INT64,
    UINT16,
    UINT32,
    ZERO_UUID,
    read_uvarint,
    uuid_from_str,
    uuid_to_str,
    write_uvarint,
)

UNKNOWN_TAGS = "_unknown_tags"

Decoder = Callable[[bytes, int], tuple[Any, int]]
Encoder = Callable[[bytearray, Any], None]

_FIXED: dict[str, struct.Struct] = {
    "int8": INT8, "int16": INT16, "uint16": UINT16, "int32": INT32, "uint32": UINT32,
    "int64": INT64, "float64": FLOAT64,
}
_ZERO: dict[str, Any] = {
    "int8": 0, "int16": 0, "uint16": 0, "int32": 0, "uint32": 0, "int64": 0, "float64": 0.0,
    "bool": False, "string": "", "bytes": b"", "records": None, "uuid": ZERO_UUID,
}


def field_default(f: Field) -> Any:
    """The value a field has when it is not on the wire (tagged-absent or not in version)."""
    if f.is_array or f.is_struct:
        return None if f.tagged is not None or (f.default is None and f.has_default) else []
    if f.has_default:
        return f.default
    return _ZERO[f.type]


# ---------------------------------------------------------------- decoding


def _fixed_decoder(st: struct.Struct) -> Decoder:
    size = st.size
    unpack = st.unpack_from

    def dec(buf: bytes, pos: int) -> tuple[Any, int]:
        if pos + size > len(buf):
            raise IndexError
        return unpack(buf, pos)[0], pos + size

    return dec


def _bool_decoder(buf: bytes, pos: int) -> tuple[Any, int]:
    return buf[pos] != 0, pos + 1


def _uuid_decoder(buf: bytes, pos: int) -> tuple[Any, int]:
    end = pos + 16
    if end > len(buf):
        raise IndexError
    return uuid_to_str(buf[pos:end]), end


def _length_reader(flexible: bool, nullable: bool, what: str, wide: bool) -> Decoder:
    """Reads a length prefix; returns -1 for null. `wide` = int32 (bytes, arrays) vs int16."""

    if flexible:
        def read_len(buf: bytes, pos: int) -> tuple[int, int]:
            n, pos = read_uvarint(buf, pos)
            n -= 1
            if n < 0 and not nullable:
                raise RecordDecodeError(f"null {what} in a non-nullable field")
            return n, pos
        return read_len
    st = INT32 if wide else INT16

    def read_len_fixed(buf: bytes, pos: int) -> tuple[int, int]:
        if pos + st.size > len(buf):
            raise IndexError
        n = st.unpack_from(buf, pos)[0]
        if n < -1 or (n == -1 and not nullable):
            raise RecordDecodeError(f"invalid {what} length {n}")
        return n, pos + st.size

    return read_len_fixed


def _string_decoder(flexible: bool, nullable: bool) -> Decoder:
    read_len = _length_reader(flexible, nullable, "string", wide=False)

    def dec(buf: bytes, pos: int) -> tuple[Any, int]:
        """The string at `pos` (None when null) and the position after it; IndexError when `buf`
        ends first (`decode_body` reports it), RecordDecodeError when it is not UTF-8."""
        n, pos = read_len(buf, pos)
        if n < 0:
            return None, pos
        end = pos + n
        if end > len(buf):
            raise IndexError
        try:
            return buf[pos:end].decode("utf-8"), end
        except UnicodeDecodeError as exc:
            raise RecordDecodeError(f"string is not UTF-8: {exc.reason}") from None

    return dec


def _bytes_decoder(flexible: bool, nullable: bool) -> Decoder:
    read_len = _length_reader(flexible, nullable, "bytes", wide=True)

    def dec(buf: bytes, pos: int) -> tuple[Any, int]:
        n, pos = read_len(buf, pos)
        if n < 0:
            return None, pos
        end = pos + n
        if end > len(buf):
            raise IndexError
        return bytes(buf[pos:end]), end

    return dec


def _array_decoder(elem: Decoder, elem_type: str, flexible: bool, nullable: bool) -> Decoder:
    read_len = _length_reader(flexible, nullable, "array", wide=True)
    st = _FIXED.get(elem_type)
    if st is not None:
        size = st.size
        code = st.format[1:]
        by_len: dict[int, Callable[..., tuple[Any, ...]]] = {}

        def dec_fixed(buf: bytes, pos: int) -> tuple[Any, int]:
            """An array of fixed-width numbers in one struct call, compiled once per length, and a
            one-byte compact length read inline: the ISR and replica lists of every partition
            record."""
            if flexible and buf[pos] < 0x80:  # one-byte compact length: inline
                n = buf[pos] - 1
                pos += 1
                if n < 0 and not nullable:
                    raise RecordDecodeError("null array in a non-nullable field")
            else:
                n, pos = read_len(buf, pos)
            if n < 0:
                return None, pos
            end = pos + n * size
            if end > len(buf):
                raise IndexError
            unpack = by_len.get(n)
            if unpack is None:
                unpack = by_len[n] = struct.Struct(f">{n}{code}").unpack_from
            return list(unpack(buf, pos)), end

        return dec_fixed

    def dec(buf: bytes, pos: int) -> tuple[Any, int]:
        """The array at `pos` element by element (None when null); a length that cannot fit in the
        bytes left is a RecordDecodeError before any element is read."""
        n, pos = read_len(buf, pos)
        if n < 0:
            return None, pos
        if n > len(buf) - pos + 1:
            raise RecordDecodeError(f"array of {n} elements cannot fit in {len(buf) - pos} bytes")
        out = []
        for _ in range(n):
            v, pos = elem(buf, pos)
            out.append(v)
        return out, pos

    return dec


def _value_decoder(f: Field, version: int, flexible: bool) -> Decoder:
    nullable = in_range(version, f.nullable)
    et = f.element_type
    if f.is_struct:
        elem = _struct_decoder(f.fields or (), version, flexible)
    elif et in _FIXED:
        elem = _fixed_decoder(_FIXED[et])
    elif et == "bool":
        elem = _bool_decoder
    elif et == "uuid":
        elem = _uuid_decoder
    elif et == "string":
        elem = _string_decoder(flexible, nullable and not f.is_array)
    else:  # bytes, records
        elem = _bytes_decoder(flexible, nullable and not f.is_array)
    if f.is_array:
        return _array_decoder(elem, et, flexible, nullable)
    return elem


def _read_lines(f: Field, version: int, flexible: bool, env: dict[str, Any], slot: str,
                target: str) -> list[str]:
    """Source lines that read field `f` at `pos` into `target` and advance `pos`."""
    et = f.element_type
    if not f.is_array and et in _FIXED:
        env[slot] = _FIXED[et].unpack_from
        return [f"{target} = {slot}(buf, pos)[0]", f"pos += {_FIXED[et].size}"]
    if not f.is_array and et == "bool":
        return [f"{target} = buf[pos] != 0", "pos += 1"]
    if not f.is_array and et == "uuid":
        return ["e = pos + 16", "if e > len(buf): raise IndexError",
                f"{target} = uuid_to_str(buf[pos:e])", "pos = e"]
    env[slot] = _value_decoder(f, version, flexible)
    return [f"{target}, pos = {slot}(buf, pos)"]


def _struct_decoder(fields: tuple[Field, ...], version: int, flexible: bool) -> Decoder:
    """Generate a straight-line decoder for one struct at one version.

    Fields are read in wire order by generated code rather than by a loop over closures:
    fixed-width and uuid fields inline, tagged fields dispatched by an if/elif on the tag.
    This is the per-record hot path of every busy log, and the loop version spent most of
    its time in call and tuple overhead.
    """
    env: dict[str, Any] = {"read_uvarint": read_uvarint, "uuid_to_str": uuid_to_str,
                           "RecordDecodeError": RecordDecodeError, "UNKNOWN_TAGS": UNKNOWN_TAGS}
    body: list[str] = ["d = {}"]
    tagged: list[tuple[int, str, list[str]]] = []
    defaults: dict[str, Any] = {}
    for i, f in enumerate(fields):
        if not in_range(version, f.versions):
            continue
        if flexible and in_range(version, f.tagged):
            defaults[f.key] = field_default(f)
            tagged.append((f.tag, f.key, _read_lines(f, version, flexible, env, f"r{i}",  # type: ignore[arg-type]
                                                     f"d[{f.key!r}]")))
        else:
            body += _read_lines(f, version, flexible, env, f"r{i}", f"d[{f.key!r}]")
    if flexible:
        env["DEFAULTS"] = defaults
        if defaults:
            body.append("d.update(DEFAULTS)")
        body += ["n = buf[pos]",
                 "if n < 0x80: pos += 1",
                 "else: n, pos = read_uvarint(buf, pos)",
                 "for _ in range(n):",
                 "    tag = buf[pos]",  # tags and sizes are almost always one-byte varints
                 "    if tag < 0x80: pos += 1",
                 "    else: tag, pos = read_uvarint(buf, pos)",
                 "    size = buf[pos]",
                 "    if size < 0x80: pos += 1",
                 "    else: size, pos = read_uvarint(buf, pos)",
                 "    end = pos + size",
                 "    if end > len(buf): raise IndexError",
                 "    start = pos"]
        for j, (tag, key, lines) in enumerate(sorted(tagged)):
            body.append(f"    {'if' if j == 0 else 'elif'} tag == {tag}:")
            body += [f"        {line}" for line in lines]
            body += ["        if pos != end:",
                     "            raise RecordDecodeError(",
                     f"                f'tagged field {key} (tag {tag}) declares {{size}} bytes '",
                     "                f'but its value used {pos - start}')"]
        pad = "        " if tagged else "    "
        if tagged:
            body.append("    else:")
        body += [f"{pad}d.setdefault(UNKNOWN_TAGS, {{}})[tag] = bytes(buf[pos:end])",
                 f"{pad}pos = end"]
    body.append("return d, pos")
    src = "def decode(buf, pos):\n" + "".join(f"    {line}\n" for line in body)
    exec(compile(src, f"<kraftlake decoder v{version}>", "exec"), env)
    return env["decode"]  # type: ignore[no-any-return]


# ---------------------------------------------------------------- encoding


def _fixed_encoder(st: struct.Struct) -> Encoder:
    pack = st.pack

    def enc(out: bytearray, v: Any) -> None:
        out += pack(v)

    return enc


def _bool_encoder(out: bytearray, v: Any) -> None:
    out.append(1 if v else 0)


def _uuid_encoder(out: bytearray, v: Any) -> None:
    out += uuid_from_str(v)


def _length_writer(flexible: bool, wide: bool) -> Callable[[bytearray, int], None]:
    if flexible:
        def w(out: bytearray, n: int) -> None:
            write_uvarint(out, n + 1)
        return w
    st = INT32 if wide else INT16

    def w_fixed(out: bytearray, n: int) -> None:
        out += st.pack(n)

    return w_fixed


def _string_encoder(flexible: bool) -> Encoder:
    wlen = _length_writer(flexible, wide=False)

    def enc(out: bytearray, v: Any) -> None:
        if v is None:
            wlen(out, -1)
            return
        raw = v.encode("utf-8")
        wlen(out, len(raw))
        out += raw

    return enc


def _bytes_encoder(flexible: bool) -> Encoder:
    wlen = _length_writer(flexible, wide=True)

    def enc(out: bytearray, v: Any) -> None:
        if v is None:
            wlen(out, -1)
            return
        wlen(out, len(v))
        out += v

    return enc


def _array_encoder(elem: Encoder, flexible: bool, elem_type: str = "") -> Encoder:
    wlen = _length_writer(flexible, wide=True)
    st = _FIXED.get(elem_type)
    if st is not None:  # int arrays (ISR, replicas, ELR ...): one pack call per array
        code = st.format[1:]
        by_len: dict[int, Callable[..., bytes]] = {}

        def enc_fixed(out: bytearray, v: Any) -> None:
            """Append an array of fixed-width numbers (None: the null length) in one struct call,
            compiled once per length."""
            if v is None:
                wlen(out, -1)
                return
            n = len(v)
            wlen(out, n)
            pack = by_len.get(n)
            if pack is None:
                pack = by_len[n] = struct.Struct(f">{n}{code}").pack
            out += pack(*v)

        return enc_fixed

    def enc(out: bytearray, v: Any) -> None:
        if v is None:
            wlen(out, -1)
            return
        wlen(out, len(v))
        for item in v:
            elem(out, item)

    return enc


def _value_encoder(f: Field, version: int, flexible: bool) -> Encoder:
    et = f.element_type
    if f.is_struct:
        elem = _struct_encoder(f.fields or (), version, flexible)
    elif et in _FIXED:
        elem = _fixed_encoder(_FIXED[et])
    elif et == "bool":
        elem = _bool_encoder
    elif et == "uuid":
        elem = _uuid_encoder
    elif et == "string":
        elem = _string_encoder(flexible)
    else:
        elem = _bytes_encoder(flexible)
    return _array_encoder(elem, flexible, et) if f.is_array else elem


def _write_lines(f: Field, version: int, flexible: bool, env: dict[str, Any], slot: str,
                 value: str, out: str) -> list[str]:
    """Source lines that append `value`, a value of field `f`, to the bytearray `out`."""
    et = f.element_type
    if not f.is_array and et in _FIXED:
        env[slot] = _FIXED[et].pack
        return [f"{out} += {slot}({value})"]
    if not f.is_array and et == "uuid":
        return [f"{out} += uuid_from_str({value})"]
    env[slot] = _value_encoder(f, version, flexible)
    return [f"{slot}({out}, {value})"]


def _struct_encoder(fields: tuple[Field, ...], version: int, flexible: bool) -> Encoder:
    """Generate a straight-line encoder for one struct at one version (see the decoder).

    Missing keys take the field's default. A tagged field is written when it differs from
    its default: arrays and structs when present (not None), scalars when not equal.
    Unknown tags kept by the decoder are merged back in tag order.
    """
    env: dict[str, Any] = {"uuid_from_str": uuid_from_str, "write_uvarint": write_uvarint,
                           "UNKNOWN_TAGS": UNKNOWN_TAGS, "merge_unknown": _merge_unknown}
    body: list[str] = []
    tagged: list[tuple[int, Field, int]] = []
    for i, f in enumerate(fields):
        if not in_range(version, f.versions):
            continue
        env[f"D{i}"] = field_default(f)
        if flexible and in_range(version, f.tagged):
            tagged.append((f.tag, f, i))  # type: ignore[arg-type]
            continue
        body += _write_lines(f, version, flexible, env, f"w{i}", f"d.get({f.key!r}, D{i})",
                             "out")
    if flexible:
        body.append("parts = []")
        for tag, f, i in sorted(tagged, key=lambda t: t[0]):
            skip = "v is None" if f.is_array or f.is_struct else f"v == D{i}"
            body += [f"v = d.get({f.key!r}, D{i})", f"if not ({skip}):", "    t = bytearray()"]
            body += [f"    {line}" for line in
                     _write_lines(f, version, flexible, env, f"w{i}", "v", "t")]
            body.append(f"    parts.append(({tag}, t))")
        body += ["unknown = d.get(UNKNOWN_TAGS)",
                 "if unknown:",
                 "    parts = merge_unknown(parts, unknown)",
                 "write_uvarint(out, len(parts))",
                 "for tag, t in parts:",
                 "    write_uvarint(out, tag)",
                 "    write_uvarint(out, len(t))",
                 "    out += t"]
    src = "def encode(out, d):\n" + "".join(f"    {line}\n" for line in body or ["pass"])
    exec(compile(src, f"<kraftlake encoder v{version}>", "exec"), env)
    return env["encode"]  # type: ignore[no-any-return]


def _merge_unknown(parts: list[tuple[int, Any]], unknown: dict[int, bytes]
                   ) -> list[tuple[int, Any]]:
    return sorted([*parts, *((int(t), bytes(b)) for t, b in unknown.items())],
                  key=lambda p: p[0])


# ---------------------------------------------------------------- entry points


@cache
def decoder_for(schema: RecordSchema, version: int) -> Decoder:
    return _struct_decoder(schema.fields, version, schema.is_flexible(version))


@cache
def _encoder_for(schema: RecordSchema, version: int) -> Encoder:
    return _struct_encoder(schema.fields, version, schema.is_flexible(version))


def decode_body(schema: RecordSchema, version: int, buf: bytes, pos: int = 0) -> dict[str, Any]:
    """Decode a whole message body starting at `pos`; trailing bytes are an error."""
    data: dict[str, Any]  # a struct decoder's value is its fields by name
    try:
        data, end = decoder_for(schema, version)(buf, pos)
    except (IndexError, struct.error):
        raise RecordDecodeError(
            f"{schema.name} v{version}: value ends before its last field") from None
    if end != len(buf):
        raise RecordDecodeError(
            f"{schema.name} v{version}: {len(buf) - end} bytes left over after the body")
    return data


def encode_body(schema: RecordSchema, version: int, data: dict[str, Any]) -> bytes:
    out = bytearray()
    _encoder_for(schema, version)(out, data)
    return bytes(out)
