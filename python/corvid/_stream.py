"""Streams (docs/protocol.md, "Streams"): each open one's state, both directions, with its
credit in bytes; and StreamCall, a client or bidirectional stream as the caller holds it."""

from __future__ import annotations

import asyncio
import collections
from typing import TYPE_CHECKING, Any

from . import _frame as fr
from ._codec import Buffer, DecodeError
from ._metadata import Metadata
from ._errors import ErrorCode, RpcError, reply_error
from ._remote import Resolved

if TYPE_CHECKING:
    from ._connection import Connection


class StreamState:
    def __init__(self, conn: Connection, rid: int, fn: Resolved, window: int) -> None:
        self.conn = conn
        self.rid = rid
        self.fn = fn
        self.items: collections.deque[tuple[Buffer, int]] = collections.deque()
        self.waiter: asyncio.Future[None] | None = None  # a reader waiting for an item
        self.done: asyncio.Future[Any] = conn.loop.create_future()  # the closing response
        self.done.add_done_callback(_retrieve)
        self.ended = False
        self.error: RpcError | None = None
        # Server -> client: what we granted, received, and took since our last grant.
        self.window = window
        self.granted = fr.INITIAL_STREAM_CREDIT
        self.received = 0
        self.taken = 0
        # Client -> server: what the server granted us, less what we sent.
        self.credit = 0
        self.credit_waiter: asyncio.Future[None] | None = None
        self.wrote_end = False
        self.timer: asyncio.TimerHandle | None = None
        self.metadata: Metadata = []  # the closing response's call metadata

    def wake(self) -> None:
        for w in (self.waiter, self.credit_waiter):
            if w is not None and not w.done():
                w.set_result(None)
        self.waiter = self.credit_waiter = None

    def finish(self, error: RpcError | None, value: Any = None) -> None:
        if self.ended:
            return
        self.ended = True
        self.error = error
        if self.timer is not None:
            self.timer.cancel()
        self.conn.streams.pop(self.rid, None)
        if not self.done.done():
            if error is not None:
                self.done.set_exception(error)
            else:
                self.done.set_result(value)
        self.wake()

    def on_response(self, status: int, body: Buffer, metadata: Metadata | None = None) -> None:
        """The stream's closing response: its result or its error (and its metadata)."""
        if metadata:
            self.metadata = metadata
        if status != 0:
            self.finish(reply_error(status, body, metadata))
            return
        value = None
        if self.fn.result is not None:
            try:
                value = self.fn.decode_result(body)
            except DecodeError as e:
                why = f"undecodable stream result ({e})"
                self.finish(RpcError(ErrorCode.PROTOCOL_ERROR, why))
                return
        self.finish(None, value)

    def on_item(self, body: Buffer, cost: int) -> None:
        if self.ended:
            return
        if self.received >= self.granted:
            self.cancel(
                ErrorCode.PROTOCOL_ERROR,
                "stream item written past the credit the client granted",
            )
            return
        self.received += cost
        self.items.append((body, cost))
        w = self.waiter
        if w is not None and not w.done():
            w.set_result(None)
        self.waiter = None

    def on_credit(self, amount: int) -> None:
        self.credit += amount
        w = self.credit_waiter
        if w is not None and not w.done():
            w.set_result(None)

    def grant(self, amount: int) -> None:
        """Lets the server send `amount` more bytes of items."""
        self.conn.write(fr.make_credit(self.rid, min(amount, 0xFFFFFFFF)))
        self.granted += amount

    def took(self, cost: int) -> None:
        self.taken += cost
        if self.taken >= self.window // 4 and not self.ended:
            self.grant(self.taken)
            self.taken = 0

    async def next_item(self) -> tuple[bool, Any]:
        """(True, item) or (False, None) at a clean end; raises the stream's error."""
        while not self.items:
            if self.ended:
                if self.error is not None:
                    raise self.error
                return False, None
            self.waiter = self.conn.loop.create_future()
            await self.waiter
        body, cost = self.items.popleft()
        self.took(cost)
        codec = self.fn.out_item
        assert codec is not None
        try:
            value, pos = codec.dec(body, 0, len(body))
            if pos != len(body):
                raise DecodeError("trailing_bytes", "after a stream item")
        except DecodeError as e:
            err = RpcError(ErrorCode.PROTOCOL_ERROR, f"undecodable stream item ({e})")
            self.conn.write(fr.make_cancel(self.rid))
            self.finish(err)
            raise err from None
        return True, value

    def cancel(self, code: ErrorCode = ErrorCode.CANCELLED, why: str = "cancelled") -> None:
        if self.ended:
            return
        self.conn.write(fr.make_cancel(self.rid))
        self.finish(RpcError(code, why))


def _retrieve(f: asyncio.Future[Any]) -> None:
    if not f.cancelled():
        f.exception()  # a stream's end nobody awaited is not an "unretrieved exception"


class StreamCall:
    """An open client or bidirectional stream: `write()` items, `done_writing()`, read the
    server's items with `async for` (bidirectional) and the result with `await result()`
    (client stream). As an async context manager it cancels the stream if it has not ended."""

    def __init__(self, state: StreamState) -> None:
        self._s = state

    @property
    def request_id(self) -> int:
        return self._s.rid

    async def write(self, item: Any) -> None:
        s = self._s
        codec = s.fn.in_item
        if codec is None:
            raise RpcError(ErrorCode.INVALID_ARGUMENT, f"{s.fn.name} takes no stream")
        if s.wrote_end:
            raise RpcError(ErrorCode.INVALID_ARGUMENT, "write() after done_writing()")
        frame = bytearray(fr.HEADER_SIZE)  # the header is filled in front of the item
        try:
            codec.enc(item, frame)
        except (TypeError, ValueError, AttributeError) as e:
            raise RpcError(ErrorCode.INVALID_ARGUMENT, f"cannot encode the item: {e}") from None
        while s.credit <= 0 and not s.ended:
            s.credit_waiter = s.conn.loop.create_future()
            await s.credit_waiter
        if not s.ended:
            await s.conn.writable(s.fn.name, None)
        if s.ended:
            raise s.error or RpcError(ErrorCode.CANCELLED, "the stream has ended")
        cost = len(frame)
        body_length = cost - fr.HEADER_SIZE
        if body_length > s.conn.max_frame:
            raise RpcError(ErrorCode.MESSAGE_TOO_LARGE, "stream item over max_frame_size")
        s.credit -= cost  # the item's cost is its plain size, compressed or not
        packed = s.conn.compressed(frame, b"")
        if packed is not None:
            frame = packed
            body_length = len(frame) - fr.HEADER_SIZE
        fr.make_item(frame, s.rid, body_length, fr.FLAG_COMPRESSED if packed is not None else 0)
        s.conn.write(frame)

    async def done_writing(self) -> None:
        """Tells the server no more items come (stream_end)."""
        s = self._s
        if not s.wrote_end and not s.ended:
            s.wrote_end = True
            s.conn.write(fr.make_stream_end(s.rid))

    @property
    def metadata(self) -> Metadata:
        """The call metadata of the stream's closing response ([] until it came, or when it
        carried none)."""
        return self._s.metadata

    async def result(self) -> Any:
        """The stream's closing response: the handler's result (None for a stream result)."""
        return await asyncio.shield(self._s.done)

    def __aiter__(self) -> StreamCall:
        return self

    async def __anext__(self) -> Any:
        if self._s.fn.out_item is None:
            raise TypeError(f"{self._s.fn.name} sends no stream: await result() instead")
        ok, value = await self._s.next_item()
        if not ok:
            raise StopAsyncIteration
        return value

    def cancel(self) -> None:
        """Gives the stream up: a cancel frame; its readers and writers get CANCELLED."""
        self._s.cancel()

    async def __aenter__(self) -> StreamCall:
        return self

    async def __aexit__(self, *exc: object) -> None:
        self._s.cancel()
