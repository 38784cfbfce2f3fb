"""The types a signature is written in: fixed-width scalars, streams, struct and enum options.

The codec is not self-describing (docs/codec.md): the annotations of a `@corvid.remote`
declaration are the schema, so they must say what C++ says, e.g. `corvid.i32` for `int`.
"""

from __future__ import annotations

import dataclasses
import enum
from typing import Annotated, Any, Callable, Generic, TypeVar, overload

T = TypeVar("T")


@dataclasses.dataclass(frozen=True)
class Scalar:
    """The wire form of a fixed-width number: canonical name ("i32"), struct format, size."""

    name: str
    fmt: str
    size: int


i8 = Annotated[int, Scalar("i8", "<b", 1)]
u8 = Annotated[int, Scalar("u8", "<B", 1)]
i16 = Annotated[int, Scalar("i16", "<h", 2)]
u16 = Annotated[int, Scalar("u16", "<H", 2)]
i32 = Annotated[int, Scalar("i32", "<i", 4)]
u32 = Annotated[int, Scalar("u32", "<I", 4)]
i64 = Annotated[int, Scalar("i64", "<q", 8)]
u64 = Annotated[int, Scalar("u64", "<Q", 8)]
f32 = Annotated[float, Scalar("f32", "<f", 4)]
f64 = Annotated[float, Scalar("f64", "<d", 8)]


@dataclasses.dataclass(frozen=True)
class Fixed:
    """`Annotated[list[T], corvid.Fixed(N)]` is `std::array<T, N>`: N elements, no count."""

    n: int


class Monostate:
    """`std::monostate`: the empty alternative of a variant (`Union[Monostate, i32, str]`)."""

    _instance: Monostate | None = None

    def __new__(cls) -> Monostate:
        if cls._instance is None:
            cls._instance = super().__new__(cls)
        return cls._instance

    def __repr__(self) -> str:
        return "corvid.Monostate()"


@dataclasses.dataclass(frozen=True)
class Alt(Generic[T]):
    """Picks a variant's alternative by index when its value alone is ambiguous
    (`Union[i32, i64]`): `Alt(1, 5)` sends alternative 1."""

    index: int
    value: T


class Stream(Generic[T]):
    """In a declaration only: `-> corvid.Stream[T]` is a server stream of T (`stream<T>`), a
    last parameter `corvid.Stream[U]` a client stream of U (`stream_reader<U>`)."""


C = TypeVar("C", bound=type)


@overload
def struct(cls: C, /) -> C: ...
@overload
def struct(*, name: str | None = None, frozen: bool = False) -> Callable[[C], C]: ...
def struct(
    cls: Any = None, /, *, name: str | None = None, frozen: bool = False
) -> Any:
    """Options of a dataclass on the wire: its C++ qualified `name` (default: the class's
    `__qualname__` with "." as "::"), and `frozen=True` for `codec_layout = frozen` (no
    length prefix; it can never gain fields). Plain dataclasses are evolvable structs."""

    def apply(c: C) -> C:
        if name is not None:
            setattr(c, "__corvid_name__", name)
        setattr(c, "__corvid_frozen__", frozen)
        return c

    return apply(cls) if cls is not None else apply


E = TypeVar("E", bound=type[enum.Enum])


def enum_type(
    *, name: str | None = None, underlying: Any = i32, closed: bool = False
) -> Callable[[E], E]:
    """Options of an `enum.IntEnum` on the wire: C++ qualified `name`, `underlying` type
    (default `corvid.i32`, C++'s default for `enum class`), and `closed=True` for an enum with
    `corvid_enum_values` (any other value is refused). Open enums decode unknown values as
    plain ints."""

    def apply(c: E) -> E:
        if name is not None:
            setattr(c, "__corvid_name__", name)
        setattr(c, "__corvid_underlying__", underlying)
        setattr(c, "__corvid_closed__", closed)
        return c

    return apply


def qualified_name(cls: type) -> str:
    n = getattr(cls, "__corvid_name__", None)
    if isinstance(n, str) and "__corvid_name__" in cls.__dict__:
        return n
    return cls.__qualname__.replace(".", "::")
