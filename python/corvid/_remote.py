"""`@corvid.remote`: a declaration whose annotations are the function's wire schema."""

from __future__ import annotations

import dataclasses
import inspect
import typing
from typing import Any, Callable, Generic, ParamSpec, TypeVar, get_args, get_origin, overload

from ._codec import Buffer, Codec, DecodeError, codec_for
from ._frame import fingerprint, fnv1a32
from ._types import Stream

P = ParamSpec("P")
R = TypeVar("R")


@dataclasses.dataclass
class Resolved:
    name: str
    function_id: int
    canonical: str  # "(P1,P2)->R": what the fingerprint hashes
    signature: int  # the fingerprint sent at header offset 6 (0 = not stated)
    params: list[Codec]  # the parameters that travel in the request
    result: Codec | None  # None: void; for a server stream, None too (the items are out_item)
    out_item: Codec | None  # server stream items (-> Stream[T])
    in_item: Codec | None  # client stream items (last parameter Stream[U])

    def encode_args(self, args: tuple[Any, ...], out: bytearray | None = None) -> bytearray:
        """The arguments' bytes, appended to `out` (a new buffer if None)."""
        params = self.params
        if len(args) != len(params):
            raise TypeError(f"{self.name} takes {len(params)} argument(s), {len(args)} given")
        if out is None:
            out = bytearray()
        for c, a in zip(params, args):
            c.enc(a, out)
        return out

    def decode_result(self, body: Buffer) -> Any:
        c = self.result
        if c is None:
            if body:
                raise DecodeError("trailing_bytes", f"{len(body)} bytes in a void result")
            return None
        value, pos = c.dec(body, 0, len(body))
        if pos != len(body):
            raise DecodeError("trailing_bytes", f"{len(body) - pos} bytes after the result")
        return value


def _stream_item(tp: Any) -> Any | None:
    if get_origin(tp) is Stream:
        return get_args(tp)[0]
    return None


class Remote(Generic[P, R]):
    """A remote function: its name, id, fingerprint and codecs. Call it through a client:
    `await client.call(f, *args)`. Annotations are resolved at the first call, so they may
    name classes defined after the declaration."""

    def __init__(self, fn: Callable[P, R], name: str | None, signature: int | None) -> None:
        self.__wrapped__ = fn
        self.__name__ = fn.__name__
        self.__doc__ = fn.__doc__
        self._name = name if name is not None else fn.__name__
        self._signature = signature
        self._resolved: Resolved | None = None

    @property
    def name(self) -> str:
        return self._name

    def resolve(self) -> Resolved:
        r = self._resolved
        if r is None:
            r = self._resolved = self._build()
        return r

    def _build(self) -> Resolved:
        fn = self.__wrapped__
        hints = typing.get_type_hints(fn, include_extras=True)
        sig = inspect.signature(fn)
        names = list(sig.parameters)
        for n in names:
            if n not in hints:
                raise TypeError(f"{self._name}: parameter {n!r} has no annotation")
        if "return" not in hints:
            raise TypeError(f"{self._name}: the result has no annotation (-> None for void)")
        canon: list[str] = []
        params: list[Codec] = []
        in_item: Codec | None = None
        for i, n in enumerate(names):
            item = _stream_item(hints[n])
            if item is not None:
                if i != len(names) - 1:
                    raise TypeError(f"{self._name}: only the last parameter may be a Stream")
                in_item = codec_for(item)
                canon.append("stream " + in_item.canonical)
            else:
                c = codec_for(hints[n])
                params.append(c)
                canon.append(c.canonical)
        ret = hints["return"]
        out_item: Codec | None = None
        result: Codec | None = None
        item = _stream_item(ret)
        if item is not None:
            out_item = codec_for(item)
            rcanon = "stream " + out_item.canonical
        elif ret is None or ret is type(None):
            rcanon = "void"
        else:
            result = codec_for(ret)
            rcanon = result.canonical
        canonical = "(" + ",".join(canon) + ")->" + rcanon
        signature = fingerprint(canonical) if self._signature is None else self._signature
        return Resolved(
            self._name,
            fnv1a32(self._name),
            canonical,
            signature,
            params,
            result,
            out_item,
            in_item,
        )

    @property
    def canonical_signature(self) -> str:
        return self.resolve().canonical

    @property
    def signature(self) -> int:
        return self.resolve().signature

    @property
    def function_id(self) -> int:
        return self.resolve().function_id

    def __call__(self, *args: P.args, **kwargs: P.kwargs) -> R:
        raise TypeError(
            f"{self._name} is a remote function: call it through a client, "
            f"`await client.call({self.__name__}, ...)`"
        )

    def __repr__(self) -> str:
        return f"<corvid.remote {self._name}>"


def _schema_only(*args: Any) -> Any:
    """The function behind a Remote made from a schema (no Python declaration)."""


def remote_from(resolved: Resolved) -> Remote[..., Any]:
    """A Remote whose name, fingerprint and codecs are known already (corvid.cli builds them
    from a server's schema)."""
    r: Remote[..., Any] = Remote(_schema_only, resolved.name, resolved.signature)
    r._resolved = resolved
    return r


@overload
def remote(fn: Callable[P, R], /) -> Remote[P, R]: ...
@overload
def remote(
    *, name: str | None = None, signature: int | None = None
) -> Callable[[Callable[P, R]], Remote[P, R]]: ...
def remote(
    fn: Any = None, /, *, name: str | None = None, signature: int | None = None
) -> Any:
    """Declares a remote function: `@corvid.remote` (the server's name is the function's) or
    `@corvid.remote(name="ns::calc::add")`. `signature=` replaces the fingerprint computed from
    the annotations (0: not stated, the server does not check)."""

    def wrap(f: Callable[P, R]) -> Remote[P, R]:
        return Remote(f, name, signature)

    return wrap(fn) if fn is not None else wrap
