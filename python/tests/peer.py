"""Declarations of python_peer_server's functions (tests/python/python_peer_server.cpp),
written by hand as a user would."""

from __future__ import annotations

import dataclasses
import enum
from typing import Annotated, Optional, Union

import corvid
from corvid import f32, f64, i8, i16, i32, i64, u8, u16, u32, u64


@corvid.remote
def echo_bool(v: bool) -> bool: ...
@corvid.remote
def echo_i8(v: i8) -> i8: ...
@corvid.remote
def echo_u8(v: u8) -> u8: ...
@corvid.remote
def echo_i16(v: i16) -> i16: ...
@corvid.remote
def echo_u16(v: u16) -> u16: ...
@corvid.remote
def echo_i32(v: i32) -> i32: ...
@corvid.remote
def echo_u32(v: u32) -> u32: ...
@corvid.remote
def echo_i64(v: i64) -> i64: ...
@corvid.remote
def echo_u64(v: u64) -> u64: ...
@corvid.remote
def echo_f32(v: f32) -> f32: ...
@corvid.remote
def echo_f64(v: float) -> float: ...
@corvid.remote
def echo(s: str) -> str: ...
@corvid.remote
def echo_blob(b: bytes) -> bytes: ...
@corvid.remote
def echo_list(v: list[i32]) -> list[i32]: ...
@corvid.remote
def echo_strings(v: list[str]) -> list[str]: ...
@corvid.remote
def echo_bools(v: list[bool]) -> list[bool]: ...
@corvid.remote
def echo_map(m: dict[str, i64]) -> dict[str, i64]: ...
@corvid.remote
def echo_set(s: set[u16]) -> set[u16]: ...
@corvid.remote
def echo_opt(v: Optional[u32]) -> Optional[u32]: ...
@corvid.remote
def echo_tuple(t: tuple[u8, str, bool]) -> tuple[u8, str, bool]: ...
@corvid.remote
def echo_variant(v: Union[corvid.Monostate, i32, str]) -> Union[corvid.Monostate, i32, str]: ...
@corvid.remote
def echo_array(a: Annotated[list[i8], corvid.Fixed(3)]) -> Annotated[list[i8], corvid.Fixed(3)]: ...


@corvid.remote
def add(a: i32, b: i32) -> i32: ...
@corvid.remote
def sum_list(v: list[i32]) -> i64: ...
@corvid.remote
def describe_variant(v: Union[corvid.Monostate, i32, str]) -> str: ...
@corvid.remote
def utf8_len(s: str) -> str: ...
@corvid.remote
def repeat(s: str, n: u32) -> str: ...


@corvid.enum_type(underlying=u8)
class color(enum.IntEnum):
    red = 1
    green = 2


@corvid.enum_type(underlying=u8, closed=True)
class shape(enum.IntEnum):
    circle = 0
    square = 1


@corvid.remote
def echo_color(c: color) -> color: ...
@corvid.remote
def echo_shape(s: shape) -> shape: ...
@corvid.remote
def shape_code(s: shape) -> u8: ...
@corvid.remote(name="raw_shape", signature=0)  # really u8 -> u8: reads a byte as a shape
def raw_shape_as_shape(v: u8) -> shape: ...


@dataclasses.dataclass
class point:
    x: i32
    y: f64
    tag: str
    v: list[i32]


@corvid.remote
def shift(p: point, dx: i32) -> point: ...


@corvid.struct(frozen=True)
@dataclasses.dataclass
class point3f:
    x: f32
    y: f32
    z: f32


@corvid.remote
def scale3(p: point3f, k: f32) -> point3f: ...


@corvid.struct(name="geo::everything")
@dataclasses.dataclass
class everything:
    b: bool
    small: i8
    big: u64
    f: f32
    s: str
    points: list[point]
    named: dict[str, point3f]
    maybe: Optional[point]
    alt: Union[corvid.Monostate, i32, str]
    keys: set[i64]
    pair: tuple[i16, str]
    c: color


SAMPLE = everything(
    b=True,
    small=-7,
    big=18446744073709551615,
    f=1.5,
    s="h\u00e9llo",
    points=[point(1, 0.5, "p", [2]), point(-3, -2.25, "", [])],
    named={"a": point3f(1.0, 2.0, 3.0)},
    maybe=point(9, 9.5, "m", [1, 2, 3]),
    alt="alt",
    keys={-5, 0, 5},
    pair=(-2, "two"),
    c=color.green,
)


@corvid.remote(name="geo::echo_everything")
def echo_everything(e: everything) -> everything: ...
@corvid.remote(name="geo::make_sample")
def make_sample() -> everything: ...
@corvid.remote(name="geo::check_sample")
def check_sample(e: everything) -> str: ...


# Version 1 of the server's `user` (which has gained `age = 18` and `email`).
@dataclasses.dataclass
class user:
    id: u32
    name: str


@corvid.remote
def user_age(u: user) -> u32: ...
@corvid.remote
def get_user(id: u32) -> user: ...


@corvid.remote(name="ns::twice")
def twice(v: i32) -> i32: ...
@corvid.remote
def divide(a: i32, b: i32) -> i32: ...
@corvid.remote
def attach(key: str) -> u32: ...
@corvid.remote
def nap(ms: u32) -> bool: ...
@corvid.remote
def naps_running() -> i32: ...
@corvid.remote
def naps_cancelled() -> i32: ...
@corvid.remote
def deadline_ms() -> i64: ...
@corvid.remote
def trace_of() -> str: ...
@corvid.remote
def metadata_of() -> list[str]: ...
@corvid.remote
def guarded_echo(s: str) -> str: ...
@corvid.remote
def guarded_count(n: i32) -> corvid.Stream[i32]: ...


@corvid.remote
def count_to(n: i32) -> corvid.Stream[i32]: ...
@corvid.remote
def upload(chunks: corvid.Stream[str]) -> u64: ...
@corvid.remote
def chat(messages: corvid.Stream[str]) -> corvid.Stream[str]: ...
@corvid.remote
def fails_after(n: i32) -> corvid.Stream[i32]: ...
@corvid.remote
def blobs(size: u32, count: u32) -> corvid.Stream[str]: ...
@corvid.remote
def endless(size: u32) -> corvid.Stream[str]: ...
@corvid.remote
def endless_yields() -> i32: ...
@corvid.remote
def endless_ends() -> i32: ...
