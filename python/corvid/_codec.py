"""The corvid codec (docs/codec.md) for Python values, compiled once per annotation.

`codec_for(annotation)` gives a `Codec`: its canonical form (the fingerprint's spelling of the
type, docs/protocol.md "Signature fingerprints"), an encoder appending to a bytearray, and a
decoder reading from bytes at a position, which checks every length against the bytes left
before it allocates (a hostile count cannot make it allocate more than the input).
"""

from __future__ import annotations

import dataclasses
import enum
import struct
import types
import typing
from typing import Annotated, Any, Callable, Union, get_args, get_origin

from ._types import Alt, Fixed, Monostate, Scalar, Stream, f64, qualified_name

UINT32_MAX = 0xFFFFFFFF


class DecodeError(Exception):
    """Bytes that do not decode as the expected type. `kind` is one of docs/codec.md's
    decode_errc names: truncated, invalid_value, length_overflow, trailing_bytes,
    unknown_alternative."""

    def __init__(self, kind: str, detail: str = "") -> None:
        super().__init__(f"{kind}{': ' + detail if detail else ''}")
        self.kind = kind


Encoder = Callable[[Any, bytearray], None]
# What decoders read: a frame's bytes, or a view of them (decoding from a view copies
# nothing until the decoded values are made).
Buffer = Union[bytes, bytearray, memoryview]
Decoder = Callable[[Buffer, int, int], "tuple[Any, int]"]


@dataclasses.dataclass
class Codec:
    canonical: str
    enc: Encoder
    dec: Decoder
    min_size: int  # smallest encoding: what a count is checked against
    zero: Callable[[], Any]  # a value-initialised value (missing trailing struct fields)
    accepts: Callable[[Any], bool]  # may this Python value be encoded (variant choice)
    scalar: Scalar | None = None  # fixed-width numbers: bulk paths for lists


def put_varint(out: bytearray, n: int) -> None:
    if n < 0x80:
        out.append(n)
        return
    if n > UINT32_MAX:
        raise ValueError(f"length {n} exceeds UINT32_MAX")
    while n >= 0x80:
        out.append((n & 0x7F) | 0x80)
        n >>= 7
    out.append(n)


def varint_bytes(n: int) -> bytes:
    out = bytearray()
    put_varint(out, n)
    return bytes(out)


def get_varint(buf: Buffer, pos: int, end: int) -> tuple[int, int]:
    if pos >= end:
        raise DecodeError("truncated", "varint")
    b = buf[pos]
    if b < 0x80:
        return b, pos + 1
    result = b & 0x7F
    shift = 7
    pos += 1
    for i in range(1, 5):
        if pos >= end:
            raise DecodeError("truncated", "varint")
        b = buf[pos]
        pos += 1
        if i == 4 and b > 0x0F:
            raise DecodeError("length_overflow", "varint over 5 bytes or above UINT32_MAX")
        result |= (b & 0x7F) << shift
        if b < 0x80:
            if b == 0:
                raise DecodeError("invalid_value", "non-minimal varint")
            return result, pos
        shift += 7
    raise AssertionError("unreachable")  # pragma: no cover


def get_count(buf: Buffer, pos: int, end: int, min_size: int) -> tuple[int, int]:
    """A length or count, checked against the bytes left before anything is allocated
    (zero-byte elements count as one byte, so a bare count cannot make us loop)."""
    n, pos = get_varint(buf, pos, end)
    if n * max(min_size, 1) > end - pos:
        raise DecodeError("length_overflow", f"count {n} exceeds the {end - pos} bytes left")
    return n, pos


_cache: dict[Any, Codec] = {}
_building: set[Any] = set()


def codec_for(tp: Any) -> Codec:
    try:
        return _cache[tp]
    except KeyError:
        pass
    except TypeError:  # unhashable annotation
        return _build(tp)
    if tp in _building:
        raise TypeError(f"{tp!r} is recursive: the codec supports no recursive types")
    _building.add(tp)
    try:
        c = _build(tp)
    finally:
        _building.discard(tp)
    _cache[tp] = c
    return c


def _scalar(s: Scalar) -> Codec:
    st = struct.Struct(s.fmt)
    pack, unpack_from, size = st.pack, st.unpack_from, s.size
    is_float = s.name.startswith("f")

    def enc(v: Any, out: bytearray) -> None:
        try:
            out += pack(v)
        except struct.error as e:
            raise ValueError(f"{v!r} is not a valid {s.name}: {e}") from None

    def dec(buf: Buffer, pos: int, end: int) -> tuple[Any, int]:
        if end - pos < size:
            raise DecodeError("truncated", s.name)
        return unpack_from(buf, pos)[0], pos + size

    if is_float:
        accepts: Callable[[Any], bool] = lambda v: isinstance(v, (float, int)) and not isinstance(
            v, bool
        )
        zero: Callable[[], Any] = float
    else:
        accepts = lambda v: isinstance(v, int) and not isinstance(v, bool)
        zero = int
    return Codec(s.name, enc, dec, size, zero, accepts, s)


def _bool() -> Codec:
    def enc(v: Any, out: bytearray) -> None:
        out.append(1 if v else 0)

    def dec(buf: Buffer, pos: int, end: int) -> tuple[Any, int]:
        if pos >= end:
            raise DecodeError("truncated", "bool")
        b = buf[pos]
        if b > 1:
            raise DecodeError("invalid_value", f"bool byte {b:#04x}")
        return b == 1, pos + 1

    return Codec("bool", enc, dec, 1, bool, lambda v: isinstance(v, bool))


def _str() -> Codec:
    def enc(v: Any, out: bytearray) -> None:
        b = v.encode()
        n = len(b)
        if n < 0x80:
            out.append(n)
        else:
            put_varint(out, n)
        out += b

    def dec(buf: Buffer, pos: int, end: int) -> tuple[Any, int]:
        n, pos = get_count(buf, pos, end, 1)
        try:
            return str(buf[pos : pos + n], "utf-8"), pos + n
        except UnicodeDecodeError as e:
            raise DecodeError("invalid_value", f"a str that is not UTF-8 ({e.reason})") from None

    return Codec("bytes", enc, dec, 1, str, lambda v: isinstance(v, str))


def _bytes() -> Codec:
    def enc(v: Any, out: bytearray) -> None:
        put_varint(out, len(v))
        out += v

    def dec(buf: Buffer, pos: int, end: int) -> tuple[Any, int]:
        n, pos = get_count(buf, pos, end, 1)
        return bytes(buf[pos : pos + n]), pos + n

    return Codec(
        "bytes", enc, dec, 1, bytes, lambda v: isinstance(v, (bytes, bytearray, memoryview))
    )


def _list(elem: Codec, fixed: int | None) -> Codec:
    s = elem.scalar
    if fixed is None and s is not None and s.name == "u8":
        canonical = "bytes"  # vector<unsigned char> has the bytes of a string
    elif fixed is None:
        canonical = f"[{elem.canonical}]"
    else:
        canonical = f"[{elem.canonical};{fixed}]"
    e_enc, e_dec, e_min = elem.enc, elem.dec, elem.min_size

    def enc(v: Any, out: bytearray) -> None:
        n = len(v)
        if fixed is None:
            put_varint(out, n)
        elif n != fixed:
            raise ValueError(f"{canonical} needs exactly {fixed} elements, not {n}")
        if s is not None:
            try:
                out += struct.pack(f"<{n}{s.fmt[1]}", *v)
            except struct.error as ex:
                raise ValueError(f"not a valid {canonical}: {ex}") from None
        else:
            for x in v:
                e_enc(x, out)

    def dec(buf: Buffer, pos: int, end: int) -> tuple[Any, int]:
        if fixed is None:
            n, pos = get_count(buf, pos, end, e_min)
        else:
            n = fixed
        if s is not None:
            size = n * s.size
            if end - pos < size:
                raise DecodeError("truncated", canonical)
            return list(struct.unpack_from(f"<{n}{s.fmt[1]}", buf, pos)), pos + size
        out = []
        for _ in range(n):
            x, pos = e_dec(buf, pos, end)
            out.append(x)
        return out, pos

    min_size = 1 if fixed is None else fixed * e_min
    zero = list if fixed is None else (lambda: [elem.zero() for _ in range(fixed)])
    return Codec(canonical, enc, dec, min_size, zero, lambda v: isinstance(v, list))


def _map(k: Codec, v: Codec) -> Codec:
    k_enc, v_enc, k_dec, v_dec = k.enc, v.enc, k.dec, v.dec
    pair_min = k.min_size + v.min_size

    def enc(m: Any, out: bytearray) -> None:
        put_varint(out, len(m))
        try:
            keys = sorted(m)  # std::map's order; any order decodes
        except TypeError:
            keys = list(m)
        for key in keys:
            k_enc(key, out)
            v_enc(m[key], out)

    def dec(buf: Buffer, pos: int, end: int) -> tuple[Any, int]:
        n, pos = get_count(buf, pos, end, pair_min)
        out: dict[Any, Any] = {}
        for _ in range(n):
            key, pos = k_dec(buf, pos, end)
            val, pos = v_dec(buf, pos, end)
            if key in out:
                raise DecodeError("invalid_value", f"duplicate map key {key!r}")
            out[key] = val
        return out, pos

    return Codec(
        f"{{{k.canonical}:{v.canonical}}}", enc, dec, 1, dict, lambda x: isinstance(x, dict)
    )


def _set(k: Codec) -> Codec:
    k_enc, k_dec, k_min = k.enc, k.dec, k.min_size

    def enc(s: Any, out: bytearray) -> None:
        put_varint(out, len(s))
        try:
            keys = sorted(s)
        except TypeError:
            keys = list(s)
        for key in keys:
            k_enc(key, out)

    def dec(buf: Buffer, pos: int, end: int) -> tuple[Any, int]:
        n, pos = get_count(buf, pos, end, k_min)
        out: set[Any] = set()
        for _ in range(n):
            key, pos = k_dec(buf, pos, end)
            if key in out:
                raise DecodeError("invalid_value", f"duplicate set key {key!r}")
            out.add(key)
        return out, pos

    return Codec(
        f"{{{k.canonical}}}", enc, dec, 1, set, lambda x: isinstance(x, (set, frozenset))
    )


def _optional(inner: Codec) -> Codec:
    i_enc, i_dec = inner.enc, inner.dec

    def enc(v: Any, out: bytearray) -> None:
        if v is None:
            out.append(0)
        else:
            out.append(1)
            i_enc(v, out)

    def dec(buf: Buffer, pos: int, end: int) -> tuple[Any, int]:
        if pos >= end:
            raise DecodeError("truncated", "optional")
        tag = buf[pos]
        if tag == 0:
            return None, pos + 1
        if tag != 1:
            raise DecodeError("invalid_value", f"optional tag {tag:#04x}")
        return i_dec(buf, pos + 1, end)

    return Codec(
        f"?{inner.canonical}",
        enc,
        dec,
        1,
        lambda: None,
        lambda v: v is None or inner.accepts(v),
    )


def _monostate(as_none: bool) -> Codec:
    value: Any = None if as_none else Monostate()

    def enc(v: Any, out: bytearray) -> None:
        pass

    def dec(buf: Buffer, pos: int, end: int) -> tuple[Any, int]:
        return value, pos

    return Codec("()", enc, dec, 0, lambda: value, lambda v: v is None or isinstance(v, Monostate))


def _variant(alts: list[Codec]) -> Codec:
    n_alts = len(alts)

    def enc(v: Any, out: bytearray) -> None:
        if isinstance(v, Alt):
            if not 0 <= v.index < n_alts:
                raise ValueError(f"variant has no alternative {v.index}")
            put_varint(out, v.index)
            alts[v.index].enc(v.value, out)
            return
        for i, a in enumerate(alts):
            if a.accepts(v):
                out.append(i)  # fewer than 128 alternatives in practice
                a.enc(v, out)
                return
        raise ValueError(f"{v!r} matches no alternative of <{'|'.join(a.canonical for a in alts)}>")

    def dec(buf: Buffer, pos: int, end: int) -> tuple[Any, int]:
        i, pos = get_varint(buf, pos, end)
        if i >= n_alts:
            raise DecodeError("unknown_alternative", f"variant alternative {i} of {n_alts}")
        return alts[i].dec(buf, pos, end)

    return Codec(
        "<" + "|".join(a.canonical for a in alts) + ">",
        enc,
        dec,
        1,
        alts[0].zero,
        lambda v: isinstance(v, Alt) or any(a.accepts(v) for a in alts),
    )


def _tuple(elems: list[Codec]) -> Codec:
    n = len(elems)

    def enc(v: Any, out: bytearray) -> None:
        if len(v) != n:
            raise ValueError(f"a tuple of {n} elements expected, got {len(v)}")
        for c, x in zip(elems, v):
            c.enc(x, out)

    def dec(buf: Buffer, pos: int, end: int) -> tuple[Any, int]:
        out = []
        for c in elems:
            x, pos = c.dec(buf, pos, end)
            out.append(x)
        return tuple(out), pos

    canonical = "(" + ",".join(e.canonical for e in elems) + ")"
    return Codec(
        canonical,
        enc,
        dec,
        sum(e.min_size for e in elems),
        lambda: tuple(e.zero() for e in elems),
        lambda v: isinstance(v, tuple) and len(v) == n,
    )


def _enum(cls: type[enum.Enum]) -> Codec:
    under = codec_for(getattr(cls, "__corvid_underlying__", None) or _i32())
    closed = bool(getattr(cls, "__corvid_closed__", False))
    u_enc, u_dec = under.enc, under.dec

    def enc(v: Any, out: bytearray) -> None:
        u_enc(v.value if isinstance(v, enum.Enum) else v, out)

    def dec(buf: Buffer, pos: int, end: int) -> tuple[Any, int]:
        raw, pos = u_dec(buf, pos, end)
        try:
            return cls(raw), pos
        except (ValueError, TypeError):  # TypeError: an enum without members (3.11.4+)
            if closed:
                raise DecodeError(
                    "unknown_alternative", f"{raw} is no value of closed enum {cls.__name__}"
                ) from None
            return raw, pos  # open enum: a value this build has no enumerator for

    def zero() -> Any:
        try:
            return cls(under.zero())
        except (ValueError, TypeError):
            return under.zero()

    return Codec(
        f"enum {qualified_name(cls)}:{under.canonical}",
        enc,
        dec,
        under.min_size,
        zero,
        lambda v: isinstance(v, cls),
        None,
    )


def _i32() -> Any:
    from ._types import i32

    return i32


def _dataclass(cls: type) -> Codec:
    hints = typing.get_type_hints(cls, include_extras=True)
    flds = [f for f in dataclasses.fields(cls)]
    codecs = [codec_for(hints[f.name]) for f in flds]
    frozen = bool(cls.__dict__.get("__corvid_frozen__", False))
    name = qualified_name(cls)
    names = [f.name for f in flds]
    n_fields = len(flds)

    def default_of(i: int) -> Any:
        f = flds[i]
        if f.default is not dataclasses.MISSING:
            return f.default
        if f.default_factory is not dataclasses.MISSING:
            return f.default_factory()
        return codecs[i].zero()

    def enc_fields(v: Any, out: bytearray) -> None:
        for nm, c in zip(names, codecs):
            c.enc(getattr(v, nm), out)

    def dec_fields(buf: Buffer, pos: int, end: int, evolvable: bool) -> tuple[Any, int]:
        vals = []
        for i in range(n_fields):
            if evolvable and pos == end:
                vals.append(default_of(i))  # an older peer's struct: default the rest
                continue
            x, pos = codecs[i].dec(buf, pos, end)
            vals.append(x)
        return cls(*vals), pos

    if frozen:

        def enc(v: Any, out: bytearray) -> None:
            enc_fields(v, out)

        def dec(buf: Buffer, pos: int, end: int) -> tuple[Any, int]:
            return dec_fields(buf, pos, end, False)

        canonical = f"frozen {name}{{" + ",".join(c.canonical for c in codecs) + "}"
        min_size = sum(c.min_size for c in codecs)
    else:

        def enc(v: Any, out: bytearray) -> None:
            body = bytearray()
            enc_fields(v, body)
            put_varint(out, len(body))
            out += body

        def dec(buf: Buffer, pos: int, end: int) -> tuple[Any, int]:
            n, pos = get_varint(buf, pos, end)
            if n > end - pos:
                raise DecodeError("truncated", f"struct {name} of {n} bytes")
            value, _ = dec_fields(buf, pos, pos + n, True)
            return value, pos + n  # bytes after the fields we know: a newer peer's, skipped

        canonical = f"struct {name}"
        min_size = 1

    def zero() -> Any:
        return cls(*(default_of(i) for i in range(n_fields)))

    return Codec(canonical, enc, dec, min_size, zero, lambda v: isinstance(v, cls))


def _build(tp: Any) -> Codec:
    origin = get_origin(tp)
    if origin is Annotated:
        base, *meta = get_args(tp)
        for m in meta:
            if isinstance(m, Scalar):
                return _scalar(m)
        for m in meta:
            if isinstance(m, Fixed):
                if get_origin(base) is not list:
                    raise TypeError("corvid.Fixed(N) annotates a list[T]")
                return _list(codec_for(get_args(base)[0]), m.n)
        return codec_for(base)
    if tp is bool:
        return _bool()
    if tp is float:
        return codec_for(f64)
    if tp is int:
        raise TypeError(
            "a bare `int` has no width on the wire: use corvid.i32, corvid.u64, ... "
            "(C++ `int` is corvid.i32)"
        )
    if tp is str:
        return _str()
    if tp in (bytes, bytearray):
        return _bytes()
    if tp is Monostate:
        return _monostate(False)
    if tp is type(None) or tp is None:
        return _monostate(True)
    if origin is list:
        (e,) = get_args(tp)
        return _list(codec_for(e), None)
    if origin is dict:
        k, v = get_args(tp)
        return _map(codec_for(k), codec_for(v))
    if origin in (set, frozenset):
        (k,) = get_args(tp)
        return _set(codec_for(k))
    if origin is tuple:
        args = get_args(tp)
        if args == ((),) or args == ():
            return _tuple([])
        if len(args) == 2 and args[1] is Ellipsis:
            raise TypeError("tuple[T, ...] has no fixed length: use list[T]")
        return _tuple([codec_for(a) for a in args])
    if origin is Union or origin is types.UnionType:
        args = get_args(tp)
        if len(args) == 2 and type(None) in args:
            inner = args[0] if args[1] is type(None) else args[1]
            return _optional(codec_for(inner))
        return _variant([codec_for(a) for a in args])
    if origin is Stream:
        raise TypeError("corvid.Stream[T] is only a result or a last parameter of a remote function")
    if isinstance(tp, type) and issubclass(tp, enum.Enum):
        return _enum(tp)
    if isinstance(tp, type) and dataclasses.is_dataclass(tp):
        return _dataclass(tp)
    if isinstance(tp, str):
        raise TypeError(f"unresolved forward reference {tp!r}")
    raise TypeError(f"{tp!r} has no corvid wire format")


def encode(tp: Any, value: Any) -> bytes:
    out = bytearray()
    codec_for(tp).enc(value, out)
    return bytes(out)


def decode(tp: Any, data: Buffer) -> Any:
    """One value that must use up all of `data` (else DecodeError trailing_bytes)."""
    value, pos = codec_for(tp).dec(data, 0, len(data))
    if pos != len(data):
        raise DecodeError("trailing_bytes", f"{len(data) - pos} bytes after the value")
    return value


def canonical(tp: Any) -> str:
    return codec_for(tp).canonical

