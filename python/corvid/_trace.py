"""W3C Trace Context (docs/protocol.md, "Trace context"): `traceparent` in and out."""

from __future__ import annotations

import contextlib
import contextvars
import dataclasses
import os
import re
from typing import Iterator

_TRACEPARENT = re.compile(r"^([0-9a-f]{2})-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})(-.*)?$")


@dataclasses.dataclass(frozen=True)
class TraceContext:
    """A span: its trace id (16 bytes), its span id (8 bytes) and W3C trace flags. A call
    made in this context carries it, so the server's span is this span's child."""

    trace_id: bytes
    span_id: bytes
    flags: int = 1

    def __post_init__(self) -> None:
        if len(self.trace_id) != 16 or len(self.span_id) != 8 or not 0 <= self.flags <= 255:
            raise ValueError("a trace context is a 16-byte trace id, 8-byte span id, flags byte")

    @property
    def valid(self) -> bool:
        """W3C: an all-zero trace id or span id is invalid (and is not sent)."""
        return any(self.trace_id) and any(self.span_id)

    @property
    def sampled(self) -> bool:
        return bool(self.flags & 1)

    @property
    def traceparent(self) -> str:
        return f"00-{self.trace_id.hex()}-{self.span_id.hex()}-{self.flags:02x}"

    @classmethod
    def from_traceparent(cls, value: str) -> TraceContext:
        """Parses a `traceparent` header value (version 00, or a later version's first four
        fields). Raises ValueError for a malformed or invalid one."""
        m = _TRACEPARENT.match(value.strip())
        if m is None or m.group(1) == "ff" or (m.group(1) == "00" and m.group(5)):
            raise ValueError(f"not a W3C traceparent: {value!r}")
        ctx = cls(bytes.fromhex(m.group(2)), bytes.fromhex(m.group(3)), int(m.group(4), 16))
        if not ctx.valid:
            raise ValueError(f"traceparent with an all-zero id: {value!r}")
        return ctx

    @classmethod
    def new_root(cls, sampled: bool = True) -> TraceContext:
        return cls(os.urandom(16), os.urandom(8), 1 if sampled else 0)

    def child(self) -> TraceContext:
        """A new span of the same trace."""
        return TraceContext(self.trace_id, os.urandom(8), self.flags)

    def wire(self) -> bytes:
        """The 25 bytes a traced request's body starts with."""
        return self.trace_id + self.span_id + bytes((self.flags,))


_current: contextvars.ContextVar[TraceContext | None] = contextvars.ContextVar(
    "corvid_trace", default=None
)


def current_trace() -> TraceContext | None:
    return _current.get()


@contextlib.contextmanager
def trace_scope(ctx: TraceContext | str | None) -> Iterator[TraceContext | None]:
    """Calls made inside (in this task and the tasks it starts) carry `ctx` (a TraceContext or
    a traceparent string)."""
    if isinstance(ctx, str):
        ctx = TraceContext.from_traceparent(ctx)
    token = _current.set(ctx)
    try:
        yield ctx
    finally:
        _current.reset(token)
