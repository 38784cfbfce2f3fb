"""The decoder against hostile input, and encoder edge cases (no server needed)."""

from __future__ import annotations

import dataclasses
import enum
import time
from typing import Annotated, Any, Optional, Union

import pytest

import corvid
from corvid import DecodeError, Fixed, Monostate, i32, u8, u32


def kind(tp: Any, data: bytes) -> str:
    with pytest.raises(DecodeError) as e:
        corvid.decode(tp, data)
    return e.value.kind


def test_varint_rejections() -> None:
    assert kind(str, b"\x80") == "truncated"
    assert kind(str, b"\x80\x00") == "invalid_value"  # non-minimal 0
    assert kind(str, b"\xff\xff\xff\xff\x10") == "length_overflow"  # above UINT32_MAX
    assert kind(str, b"\xff\xff\xff\xff\x8f\x01") == "length_overflow"  # a 6th byte


def test_counts_are_checked_before_allocating() -> None:
    hostile = b"\xff\xff\xff\xff\x0f" + bytes(5)  # claims 2^32-1 elements in 10 bytes
    for tp in (list[i32], list[str], dict[str, str], set[u32], bytes, str, list[Monostate]):
        start = time.perf_counter()
        assert kind(tp, hostile) == "length_overflow"
        assert time.perf_counter() - start < 5  # "it hung" bound, not a speed check


def test_canonical_forms() -> None:
    assert kind(bool, b"\x02") == "invalid_value"
    assert kind(Optional[u8], b"\x02\x00") == "invalid_value"
    assert kind(dict[str, u8], b"\x02\x01a\x01\x01a\x02") == "invalid_value"  # duplicate key
    assert kind(set[u8], b"\x02\x01\x01") == "invalid_value"
    assert corvid.decode(set[u8], b"\x02\x03\x01") == {1, 3}  # any order
    assert kind(u32, b"\x01\x00\x00\x00\x00") == "trailing_bytes"
    assert kind(str, b"\x02\xff\xfe") == "invalid_value"  # not UTF-8
    assert corvid.decode(bytes, b"\x02\xff\xfe") == b"\xff\xfe"


@dataclasses.dataclass
class inner:
    a: u32
    b: str = "dflt"


@dataclasses.dataclass
class outer:
    x: inner
    y: list[inner]


def test_evolvable_struct_bounds() -> None:
    good = corvid.encode(outer, outer(inner(1, "q"), [inner(2)]))
    for cut in range(len(good)):
        k = kind(outer, good[:cut])
        assert k in ("truncated", "length_overflow"), cut  # a prefix always fails so
    # A field cut by the struct's own length is truncated, never read past it.
    assert kind(inner, b"\x02\x01\x00\x00\x00\x00") == "truncated"
    # Fewer fields: defaults; more: skipped.
    assert corvid.decode(inner, b"\x04\x07\x00\x00\x00") == inner(7, "dflt")
    assert corvid.decode(inner, b"\x07\x07\x00\x00\x00\x01z\x09") == inner(7, "z")
    assert corvid.decode(inner, b"\x00") == inner(0, "dflt")


def test_variant_choice_and_alt() -> None:
    V = Union[Monostate, i32, str]
    assert corvid.encode(V, None) == b"\x00"
    assert corvid.encode(V, corvid.Alt(1, 7)) == b"\x01\x07\x00\x00\x00"
    W = Union[corvid.u8, corvid.u16]
    assert corvid.encode(W, corvid.Alt(1, 2)) == b"\x01\x02\x00"
    with pytest.raises(ValueError):
        corvid.encode(V, 1.5)


def test_annotations_that_have_no_wire_format() -> None:
    with pytest.raises(TypeError, match="width"):
        corvid.codec_for(int)
    with pytest.raises(TypeError):
        corvid.codec_for(tuple[i32, ...])
    with pytest.raises(TypeError):
        corvid.codec_for(object)


def test_fixed_arrays_and_byte_vectors() -> None:
    A = Annotated[list[u8], Fixed(2)]
    assert corvid.canonical(A) == "[u8;2]"
    assert corvid.canonical(list[u8]) == "bytes"  # vector<unsigned char>
    assert corvid.canonical(list[corvid.i8]) == "[i8]"  # vector<signed char>
    assert corvid.encode(list[u8], [1, 2]) == corvid.encode(bytes, b"\x01\x02")
    with pytest.raises(ValueError):
        corvid.encode(A, [1])


def test_remote_declarations() -> None:
    @corvid.remote
    def f(a: i32, rest: corvid.Stream[str]) -> corvid.Stream[bool]: ...

    assert f.canonical_signature == "(i32,stream bytes)->stream bool"
    assert f.function_id == corvid.fnv1a32("f")
    with pytest.raises(TypeError, match="client"):
        f(1, None)  # type: ignore[arg-type]

    @corvid.remote
    def g(s: corvid.Stream[str], a: i32) -> None: ...

    with pytest.raises(TypeError, match="last"):
        g.resolve()


def test_an_enum_without_enumerators_decodes_ints() -> None:
    """corvid-stubgen's and `corvid call`'s enums have no members (the schema has none):
    calling one raises TypeError on Python 3.11.4+, ValueError before."""
    empty = corvid.enum_type(name="e", underlying=corvid.u8)(enum.IntEnum("e", []))
    assert corvid.decode(empty, b"\x02") == 2
    assert corvid.codec_for(empty).zero() == 0
