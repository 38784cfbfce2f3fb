"""The connection: frames out (_outgoing: batched per event-loop turn, bounded) and in
(_incoming: header checked before the payload is waited for), calls matched by request id,
liveness from what the server sends and from what it takes of what we send."""

from __future__ import annotations

import asyncio
import collections
import functools
import math
import ssl as ssl_module
import typing
from typing import Any, AsyncIterator, Generic, TypeVar

from . import _frame as fr
from ._codec import Buffer, DecodeError, get_varint
from ._errors import ErrorCode, RpcError
from ._incoming import FrameError, Incoming
from ._outgoing import DEFAULT_WRITE_BUFFER_LIMIT, Outgoing
from ._remote import Remote, Resolved
from ._trace import TraceContext, current_trace
from ._types import Stream

R = TypeVar("R")
T = TypeVar("T")

_UNSET: Any = object()


class Reply(Generic[R]):
    """A call's value and the attachment the server set (b"" when none)."""

    __slots__ = ("value", "attachment")

    def __init__(self, value: R, attachment: bytes) -> None:
        self.value = value
        self.attachment = attachment

    def __repr__(self) -> str:
        return f"Reply({self.value!r}, attachment={self.attachment!r})"


def _message(body: Buffer) -> str:
    """An error response's body: a codec string (lenient: it is for people)."""
    try:
        n, pos = get_varint(body, 0, len(body))
        return bytes(body[pos : pos + n]).decode("utf-8", "replace")
    except DecodeError:
        return bytes(body).decode("utf-8", "replace")


def _timeout_ms(timeout: float) -> int:
    if timeout <= 0:
        return 1
    return min(0xFFFFFFFF, max(1, math.ceil(timeout * 1000)))


class _Call:
    __slots__ = ("fut", "fn", "timer", "on_done", "want_reply")

    def __init__(
        self, fut: asyncio.Future[Any], fn: Resolved, want_reply: bool
    ) -> None:
        self.fut = fut
        self.fn = fn
        self.timer: asyncio.TimerHandle | None = None
        self.on_done: Any = None
        self.want_reply = want_reply


class _StreamState:
    """One open stream, both directions (docs/protocol.md, "Streams": credit in bytes)."""

    def __init__(self, conn: _Connection, rid: int, fn: Resolved, window: int) -> None:
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

    def on_item(self, body: Buffer, cost: int) -> None:
        if self.ended:
            return
        if self.received >= self.granted:
            self.conn.send_control(fr.CANCEL, self.rid)
            self.finish(
                RpcError(
                    ErrorCode.PROTOCOL_ERROR,
                    "stream item written past the credit the client granted",
                )
            )
            return
        self.received += cost
        self.items.append((body, cost))
        w = self.waiter
        if w is not None and not w.done():
            w.set_result(None)
        self.waiter = None

    def took(self, cost: int) -> None:
        self.taken += cost
        if self.taken >= self.window // 4 and not self.ended:
            self.conn.send_credit(self.rid, self.taken)
            self.granted += self.taken
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
            self.conn.send_control(fr.CANCEL, self.rid)
            self.finish(err)
            raise err from None
        return True, value

    def cancel(self, code: ErrorCode = ErrorCode.CANCELLED, why: str = "cancelled") -> None:
        if self.ended:
            return
        self.conn.send_control(fr.CANCEL, self.rid)
        self.finish(RpcError(code, why))


def _retrieve(f: asyncio.Future[Any]) -> None:
    if not f.cancelled():
        f.exception()  # a stream's end nobody awaited is not an "unretrieved exception"


class _Connection(asyncio.BufferedProtocol):
    def __init__(self, client: Client) -> None:
        self.client = client
        self.loop = asyncio.get_running_loop()
        self.transport: asyncio.Transport | None = None
        self.incoming = Incoming(client.max_frame_size)
        self.out = Outgoing(self.loop, client.write_buffer_limit)
        self.calls: dict[int, _Call] = {}
        self.streams: dict[int, _StreamState] = {}
        self.closed = False
        self.close_error: RpcError | None = None
        self.closed_future: asyncio.Future[None] = self.loop.create_future()
        now = self.loop.time()
        self.last_heard = now
        self.ping_outstanding = False
        self.heartbeat: asyncio.TimerHandle | None = None
        # Liveness from our writes, sampled at heartbeat ticks: the bytes the socket had taken;
        # whether the transport held a backlog (the socket's buffer was full); when a full
        # socket last took more (the server acknowledged bytes); since when unsent bytes have
        # not moved.
        self.accepted_seen = 0
        self.backlogged = False
        self.write_moved = now
        self.stuck_since = now
        self.max_frame = client.max_frame_size
        self.pong_waiter: asyncio.Future[int] | None = None  # ask_server_reactors

    # --- asyncio.BufferedProtocol ---
    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        # (uvloop's transports do not derive from asyncio.Transport, but have its methods.)
        self.transport = typing.cast(asyncio.Transport, transport)
        self.out.attach(self.transport)
        self.last_heard = self.stuck_since = self.loop.time()
        c = self.client
        if c.heartbeat_interval or c.heartbeat_timeout:
            self._schedule_heartbeat()

    def connection_lost(self, exc: Exception | None) -> None:
        why = "the server closed the connection" if exc is None else f"connection lost: {exc}"
        self.fail_all(RpcError(ErrorCode.CONNECTION_CLOSED, why))

    def pause_writing(self) -> None:
        self.out.pause_writing()

    def resume_writing(self) -> None:
        self.out.resume_writing()

    def get_buffer(self, sizehint: int) -> memoryview:
        return self.incoming.get_buffer()

    def buffer_updated(self, nbytes: int) -> None:
        self.last_heard = self.loop.time()
        self.ping_outstanding = False
        try:
            self.incoming.received(nbytes, self.on_frame)
        except FrameError as e:
            self.fatal(str(e))

    def on_frame(
        self,
        typ: int,
        flags: int,
        status: int,
        rid: int,
        fid: int,
        tmo: int,
        body: memoryview,
        att: memoryview,
        owned: bool,
    ) -> bool:
        """One frame (its views: see Incoming); False once the connection has ended."""
        if typ in (fr.REQUEST, fr.RDMA_SETUP):
            self.fatal(f"unexpected frame type {typ} from the server")
            return False
        if flags & fr.must_understand_flags:
            # No kind of frame a server sends has a must-understand bit this build knows.
            why = fr.unknown_must_understand(flags, 0)
            assert why is not None
            self.refuse(typ, rid, why)
        elif typ == fr.RESPONSE:
            self.on_response(rid, status, body, att)
        elif typ == fr.STREAM_ITEM:
            s = self.streams.get(rid)
            if s is not None:
                s.on_item(body if owned else bytes(body), 32 + len(body) + len(att))
        elif typ == fr.STREAM_CREDIT:
            s = self.streams.get(rid)
            if s is not None:
                s.credit += tmo
                w = s.credit_waiter
                if w is not None and not w.done():
                    w.set_result(None)
        elif typ == fr.PING:
            # Over the write limit the server is not reading what we send: a pong would only
            # add to it.
            if not self.out.paused:
                self.send_control(fr.PONG, rid)
        elif typ == fr.PONG:
            pw = self.pong_waiter
            if pw is not None and not pw.done():
                pw.set_result(fid)  # a corvid server's reactor count; 0: not stated
        # cancel, stream_end: nothing to do (hearing them proves the peer alive)
        return not self.closed

    def refuse(self, typ: int, rid: int, why: str) -> None:
        """A frame with a must-understand bit we do not know: only its call or stream ends
        (the frame's lengths are valid, so the stream of frames goes on)."""
        err = RpcError(ErrorCode.PROTOCOL_ERROR, why)
        if typ == fr.RESPONSE:
            call = self.calls.pop(rid, None)
            if call is not None:
                if call.timer is not None:
                    call.timer.cancel()
                call.fut.remove_done_callback(call.on_done)
                if not call.fut.done():
                    call.fut.set_exception(err)
                return
        if typ in (fr.RESPONSE, fr.STREAM_ITEM, fr.STREAM_CREDIT, fr.STREAM_END):
            s = self.streams.get(rid)
            if s is not None:
                if typ != fr.RESPONSE:
                    self.send_control(fr.CANCEL, rid)  # the server's side is still open
                s.finish(err)
        elif typ == fr.PONG:
            pw = self.pong_waiter
            if pw is not None and not pw.done():
                pw.set_exception(err)
        # ping (no pong), cancel: ignored

    # --- replies ---
    def on_response(self, rid: int, status: int, body: memoryview, att: memoryview) -> None:
        call = self.calls.pop(rid, None)
        if call is None:
            s = self.streams.get(rid)
            if s is not None:
                self.on_stream_end(s, status, body)
            elif rid == 0 and status != 0:
                # About the connection: the server rejected the stream and is closing it.
                self.fail_all(RpcError(status, _message(body)))
                self.abort()
            return  # else: a late reply to a call that timed out or was cancelled
        fut = call.fut
        if call.timer is not None:
            call.timer.cancel()
        fut.remove_done_callback(call.on_done)
        if fut.done():
            return
        if status != 0:
            fut.set_exception(RpcError(status, _message(body)))
            return
        try:
            value = call.fn.decode_result(body)  # decoded from the view: one copy, into value
        except DecodeError as e:
            fut.set_exception(
                RpcError(
                    ErrorCode.PROTOCOL_ERROR,
                    f"the reply of {call.fn.name} does not decode as its result ({e})",
                )
            )
            self.fatal(f"an undecodable reply to {call.fn.name} ({e})")
            return
        if call.want_reply:
            fut.set_result(Reply(value, bytes(att) if len(att) else b""))
        else:
            fut.set_result(value)

    def on_stream_end(self, s: _StreamState, status: int, body: memoryview) -> None:
        if status != 0:
            s.finish(RpcError(status, _message(body)))
            return
        value = None
        if s.fn.result is not None:
            try:
                value = s.fn.decode_result(body)
            except DecodeError as e:
                s.finish(RpcError(ErrorCode.PROTOCOL_ERROR, f"undecodable stream result ({e})"))
                return
        s.finish(None, value)

    # --- failure ---
    def fatal(self, why: str) -> None:
        """The reply stream is broken: every call fails with PROTOCOL_ERROR, and we close."""
        self.fail_all(RpcError(ErrorCode.PROTOCOL_ERROR, why))
        self.abort()

    def abort(self) -> None:
        if self.transport is not None:
            self.transport.abort()

    def fail_all(self, err: RpcError) -> None:
        if not self.closed:
            self.closed = True
            self.close_error = err
        self.out.close()
        if self.heartbeat is not None:
            self.heartbeat.cancel()
        calls, self.calls = self.calls, {}
        for call in calls.values():
            if call.timer is not None:
                call.timer.cancel()
            call.fut.remove_done_callback(call.on_done)
            if not call.fut.done():
                call.fut.set_exception(err)
        for s in list(self.streams.values()):
            s.finish(err)
        if not self.closed_future.done():
            self.closed_future.set_result(None)

    # --- sending ---
    def write(self, *parts: bytes | bytearray) -> None:
        self.out.write(*parts)

    def send_control(self, type_: int, rid: int) -> None:
        if not self.closed:
            self.out.write(fr.header(type_, rid))

    def send_credit(self, rid: int, amount: int) -> None:
        if not self.closed:
            self.out.write(fr.header(fr.STREAM_CREDIT, rid, timeout_ms=min(amount, 0xFFFFFFFF)))

    async def writable(self, name: str, timeout: float | None) -> float | None:
        """Waits while the connection is over its write limit (the server is not keeping up
        with what we send); returns what is left of `timeout`."""
        if not self.out.paused:
            return timeout
        if timeout is None:
            await self.out.wait_writable()
            return None
        deadline = self.loop.time() + timeout
        try:
            await asyncio.wait_for(self.out.wait_writable(), timeout)
        except asyncio.TimeoutError:
            raise RpcError(
                ErrorCode.TIMEOUT,
                f"{name}: the server read too little of what was sent for {timeout} s "
                f"(over write_buffer_limit all that time)",
            ) from None
        return max(deadline - self.loop.time(), 0.0)

    def on_call_done(self, rid: int, fut: asyncio.Future[Any]) -> None:
        # Only reached when the future ended other than by a reply: the caller cancelled it.
        call = self.calls.pop(rid, None)
        if call is None:
            return
        if call.timer is not None:
            call.timer.cancel()
        if self.client.send_cancel:
            self.send_control(fr.CANCEL, rid)

    def on_call_timeout(self, rid: int, timeout: float) -> None:
        call = self.calls.pop(rid, None)
        if call is None:
            return
        call.fut.remove_done_callback(call.on_done)
        if self.client.send_cancel:
            self.send_control(fr.CANCEL, rid)
        if not call.fut.done():
            call.fut.set_exception(
                RpcError(ErrorCode.TIMEOUT, f"{call.fn.name}: no reply within {timeout} s")
            )

    # --- heartbeats ---
    def _schedule_heartbeat(self) -> None:
        c = self.client
        periods = [p for p in (c.heartbeat_interval, c.heartbeat_timeout) if p]
        self.heartbeat = self.loop.call_later(max(min(periods) / 4, 0.01), self._on_heartbeat)

    def _on_heartbeat(self) -> None:
        if self.closed:
            return
        c = self.client
        now = self.loop.time()
        # Our writes: unsent bytes that do not move for heartbeat_timeout close the connection,
        # however much the server sends meanwhile. A socket whose buffer was full and took
        # more proves the server alive (it acknowledged bytes, so it reads); one with room
        # takes bytes from a dead peer too, which proves nothing.
        buffered = self.out.buffered()
        accepted = self.out.handed - buffered
        moved = accepted != self.accepted_seen
        self.accepted_seen = accepted
        if moved and self.backlogged:
            self.write_moved = now
        self.backlogged = buffered > 0
        unsent = self.out.queued + buffered
        if not unsent or moved:
            self.stuck_since = now
        elif c.heartbeat_timeout and now - self.stuck_since >= c.heartbeat_timeout:
            return self._close_dead(
                f"the server read nothing of what was sent for {c.heartbeat_timeout} s "
                f"({unsent} bytes unsent)"
            )
        # Hearing from the server. (Without heartbeat_interval we never ping, so silence
        # proves nothing.)
        if c.heartbeat_interval:
            silent = now - max(self.last_heard, self.write_moved)
            if c.heartbeat_timeout and silent >= c.heartbeat_timeout:
                why = f"heard nothing from the server for {c.heartbeat_timeout} s"
                return self._close_dead(why)
            if now - self.last_heard >= c.heartbeat_interval and not self.ping_outstanding:
                self.ping_outstanding = True
                self.client.pings_sent += 1
                self.send_control(fr.PING, 0)
        self._schedule_heartbeat()

    def _close_dead(self, why: str) -> None:
        self.fail_all(RpcError(ErrorCode.CONNECTION_CLOSED, why))
        self.abort()


class StreamCall:
    """An open client or bidirectional stream: `write()` items, `done_writing()`, read the
    server's items with `async for` (bidirectional) and the result with `await result()`
    (client stream). As an async context manager it cancels the stream if it has not ended."""

    def __init__(self, state: _StreamState) -> None:
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
        if cost - 32 > s.conn.max_frame:
            raise RpcError(ErrorCode.MESSAGE_TOO_LARGE, "stream item over max_frame_size")
        s.credit -= cost
        fr.header_into(frame, fr.STREAM_ITEM, s.rid, body_len=cost - 32)
        s.conn.write(frame)

    async def done_writing(self) -> None:
        """Tells the server no more items come (stream_end)."""
        s = self._s
        if not s.wrote_end and not s.ended:
            s.wrote_end = True
            s.conn.send_control(fr.STREAM_END, s.rid)

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


class Client:
    """One connection to a corvid server. Make it with `await corvid.connect(...)`."""

    def __init__(
        self,
        *,
        request_timeout: float | None = None,
        max_frame_size: int = fr.DEFAULT_MAX_FRAME_SIZE,
        heartbeat_interval: float | None = 10.0,
        heartbeat_timeout: float | None = 30.0,
        stream_window: int = fr.INITIAL_STREAM_CREDIT,
        max_in_flight: int | None = None,
        send_cancel: bool = True,
        write_buffer_limit: int = DEFAULT_WRITE_BUFFER_LIMIT,
    ) -> None:
        if write_buffer_limit < 0:
            raise ValueError("write_buffer_limit must be 0 or more")
        self.request_timeout = request_timeout
        self.max_frame_size = max_frame_size
        self.heartbeat_interval = heartbeat_interval or 0.0
        self.heartbeat_timeout = heartbeat_timeout or 0.0
        self.stream_window = stream_window
        self.max_in_flight = max_in_flight
        self.send_cancel = send_cancel
        self.write_buffer_limit = write_buffer_limit
        self.pings_sent = 0
        self.server_reactors: int | None = None  # with connect(..., ask_server_reactors=True)
        self._conn: _Connection | None = None
        self._next_id = 0x0000000100000000  # as the C++ client's first ids (protocol.md)

    # --- lifetime ---
    async def __aenter__(self) -> Client:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    async def close(self) -> None:
        conn = self._conn
        if conn is None:
            return
        conn.out.flush()  # what the socket takes now still goes out
        conn.fail_all(RpcError(ErrorCode.CONNECTION_CLOSED, "the client closed the connection"))
        if conn.transport is not None:
            conn.transport.close()

    @property
    def write_buffer_size(self) -> int:
        """Bytes written to the connection that the operating system has not taken yet."""
        return 0 if self._conn is None else self._conn.out.unsent()

    @property
    def closed(self) -> bool:
        return self._conn is None or self._conn.closed

    async def wait_closed(self) -> RpcError | None:
        """Waits until the connection ends; returns why."""
        assert self._conn is not None
        await self._conn.closed_future
        return self._conn.close_error

    # --- calls ---
    def _conn_or_raise(self) -> _Connection:
        conn = self._conn
        if conn is None or conn.closed:
            err = conn.close_error if conn is not None else None
            raise RpcError(
                ErrorCode.CONNECTION_CLOSED,
                "not connected" if err is None else f"the connection is closed ({err})",
            )
        if self.max_in_flight is not None:
            if len(conn.calls) + len(conn.streams) >= self.max_in_flight:
                raise RpcError(
                    ErrorCode.CLIENT_BUSY, f"{self.max_in_flight} calls in flight (max_in_flight)"
                )
        return conn

    def _request(
        self,
        fn: Resolved,
        args: tuple[Any, ...],
        timeout: float | None,
        attachment: bytes,
        trace: TraceContext | None,
    ) -> tuple[_Connection, int, float | None]:
        """Encodes and queues the request frame; returns the connection, id and timeout."""
        conn = self._conn_or_raise()
        if trace is None:
            trace = current_trace()
        traced = trace is not None and trace.valid
        # The header (and trace context) are filled in front of the arguments afterwards, so
        # the frame is built in one buffer: no copy of the arguments to prepend them.
        prefix = fr.HEADER_SIZE + (fr.TRACE_CONTEXT_SIZE if traced else 0)
        body = bytearray(prefix)
        try:
            fn.encode_args(args, body)
        except (TypeError, ValueError, AttributeError, OverflowError) as e:
            raise RpcError(
                ErrorCode.INVALID_ARGUMENT, f"arguments of {fn.name} do not encode: {e}"
            ) from None
        if timeout is _UNSET:
            timeout = self.request_timeout
        body_len = len(body) - fr.HEADER_SIZE
        total = body_len + len(attachment)
        if total > conn.max_frame:
            raise RpcError(
                ErrorCode.MESSAGE_TOO_LARGE,
                f"request of {total} bytes exceeds max_frame_size {conn.max_frame}",
            )
        rid = self._next_id
        self._next_id = rid + 1
        fr.header_into(
            body,
            fr.REQUEST,
            rid,
            flags=fr.FLAG_TRACE if traced else 0,
            signature=fn.signature,
            function_id=fn.function_id,
            body_len=body_len,
            attachment_len=len(attachment),
            timeout_ms=0 if timeout is None else _timeout_ms(timeout),
        )
        if traced:
            assert trace is not None
            body[fr.HEADER_SIZE : prefix] = trace.wire()
        if attachment:
            # Sent as it is (a bytes object cannot change meanwhile; anything else is copied).
            conn.write(body, attachment if type(attachment) is bytes else bytes(attachment))
            return conn, rid, timeout
        conn.write(body)
        return conn, rid, timeout

    def send_request(
        self,
        f: Remote[..., R],
        *args: Any,
        timeout: float | None = _UNSET,
        attachment: bytes = b"",
        trace: TraceContext | None = None,
    ) -> asyncio.Future[R]:
        """Sends the request now (pipelined: it does not wait for earlier replies) and returns
        a future of the result. Cancelling the future sends the server a cancel frame."""
        return self._send(f, args, timeout, attachment, trace, False)

    def _send(
        self,
        f: Remote[..., Any],
        args: tuple[Any, ...],
        timeout: float | None,
        attachment: bytes,
        trace: TraceContext | None,
        want_reply: bool,
    ) -> asyncio.Future[Any]:
        fn = f.resolve()
        if fn.in_item is not None or fn.out_item is not None:
            raise RpcError(
                ErrorCode.INVALID_ARGUMENT,
                f"{fn.name} is a stream: use client.stream() or client.open_stream()",
            )
        conn, rid, timeout = self._request(fn, args, timeout, attachment, trace)
        fut: asyncio.Future[Any] = conn.loop.create_future()
        call = _Call(fut, fn, want_reply)
        call.on_done = functools.partial(conn.on_call_done, rid)
        fut.add_done_callback(call.on_done)
        if timeout is not None:
            call.timer = conn.loop.call_later(timeout, conn.on_call_timeout, rid, timeout)
        conn.calls[rid] = call
        return fut

    async def _writable(self, f: Remote[..., Any], timeout: float | None) -> float | None:
        """Waits while the connection is over write_buffer_limit; the call's deadline runs
        meanwhile (returns what is left of it)."""
        conn = self._conn
        if conn is None or not conn.out.paused:
            return timeout
        if timeout is _UNSET:
            timeout = self.request_timeout
        return await conn.writable(f.name, timeout)

    async def call(
        self,
        f: Remote[..., R],
        *args: Any,
        timeout: float | None = _UNSET,
        attachment: bytes = b"",
        trace: TraceContext | None = None,
    ) -> R:
        """Calls f(*args) and returns its result; raises RpcError. `timeout` (seconds) is the
        call's deadline, also sent to the server; cancelling the awaiting task sends a cancel.
        While the connection is over write_buffer_limit, it waits before sending."""
        timeout = await self._writable(f, timeout)
        result: R = await self._send(f, args, timeout, attachment, trace, False)
        return result

    async def call_reply(
        self,
        f: Remote[..., R],
        *args: Any,
        timeout: float | None = _UNSET,
        attachment: bytes = b"",
        trace: TraceContext | None = None,
    ) -> Reply[R]:
        """As call(), with the reply's attachment: Reply(value, attachment)."""
        timeout = await self._writable(f, timeout)
        result: Reply[R] = await self._send(f, args, timeout, attachment, trace, True)
        return result

    # --- streams ---
    def _open(
        self,
        f: Remote[..., Any],
        args: tuple[Any, ...],
        timeout: float | None,
        trace: TraceContext | None,
    ) -> _StreamState:
        fn = f.resolve()
        if fn.in_item is None and fn.out_item is None:
            raise RpcError(ErrorCode.INVALID_ARGUMENT, f"{fn.name} is no stream: use call()")
        if timeout is _UNSET:
            timeout = None  # a stream's deadline covers all of it: none unless asked
        conn, rid, timeout = self._request(fn, args, timeout, b"", trace)
        s = _StreamState(conn, rid, fn, max(self.stream_window, 4))
        conn.streams[rid] = s
        if fn.out_item is not None and s.window > s.granted:
            conn.send_credit(rid, s.window - s.granted)  # right behind the request
            s.granted = s.window
        if timeout is not None:
            s.timer = conn.loop.call_later(
                timeout,
                s.cancel,
                ErrorCode.TIMEOUT,
                f"{fn.name}: the stream's deadline of {timeout} s passed",
            )
        return s

    async def stream(
        self,
        f: Remote[..., Stream[T]],
        *args: Any,
        timeout: float | None = _UNSET,
        trace: TraceContext | None = None,
    ) -> AsyncIterator[T]:
        """The items of a server stream, as they come. Leaving the loop early (break, an
        exception, the task cancelled) cancels the stream on the server."""
        if timeout is _UNSET:
            timeout = None
        timeout = await self._writable(f, timeout)
        s = self._open(f, args, timeout, trace)
        try:
            while True:
                ok, value = await s.next_item()
                if not ok:
                    return
                yield value
        finally:
            if not s.ended:
                s.cancel()

    def open_stream(
        self,
        f: Remote[..., Any],
        *args: Any,
        timeout: float | None = _UNSET,
        trace: TraceContext | None = None,
    ) -> StreamCall:
        """Opens a client stream (last parameter Stream[U]) or bidirectional stream."""
        return StreamCall(self._open(f, args, timeout, trace))


def parse_endpoint(endpoint: str) -> tuple[str, str, int]:
    """("unix", path, 0) or ("tcp", host, port)."""
    if endpoint.startswith("unix:"):
        path = endpoint[5:]
        if not path:
            raise RpcError(ErrorCode.INVALID_ARGUMENT, f"no path in endpoint {endpoint!r}")
        return "unix", path, 0
    host, sep, port_text = endpoint.rpartition(":")
    if host.startswith("[") and host.endswith("]"):
        host = host[1:-1]
    if not sep or not host or not port_text.isdigit() or not 0 < int(port_text) < 65536:
        raise RpcError(
            ErrorCode.INVALID_ARGUMENT,
            f"endpoint {endpoint!r} is not host:port, [v6]:port or unix:/path",
        )
    return "tcp", host, int(port_text)


async def connect(
    endpoint: str,
    *,
    ssl: ssl_module.SSLContext | None = None,
    server_hostname: str | None = None,
    connect_timeout: float | None = 10.0,
    ask_server_reactors: bool = False,
    **config: Any,
) -> Client:
    """Connects to a corvid server: "host:port", "[::1]:port" or "unix:/path"; `ssl` for
    TLS (a client certificate loaded into the context gives mutual TLS). `config`: the
    Client's options (request_timeout, max_frame_size, heartbeat_interval, ...).
    `ask_server_reactors`: ping before the first request and read the server's reactor count
    from its pong (docs/protocol.md, "Reactor count") into `client.server_reactors`."""
    kind, host, port = parse_endpoint(endpoint)
    client = Client(**config)
    loop = asyncio.get_running_loop()
    conn = _Connection(client)
    try:
        if kind == "unix":
            coro = loop.create_unix_connection(
                lambda: conn,
                host,
                ssl=ssl,
                server_hostname=(server_hostname or "localhost") if ssl else None,
            )
        else:
            coro = loop.create_connection(
                lambda: conn, host, port, ssl=ssl, server_hostname=server_hostname
            )
        await asyncio.wait_for(coro, connect_timeout)
    except (OSError, asyncio.TimeoutError, ssl_module.SSLError) as e:
        raise RpcError(ErrorCode.CONNECT_FAILED, f"cannot connect to {endpoint}: {e}") from None
    client._conn = conn
    if ask_server_reactors:
        conn.pong_waiter = loop.create_future()
        conn.send_control(fr.PING, 0)
        try:
            client.server_reactors = await asyncio.wait_for(
                asyncio.shield(conn.pong_waiter), connect_timeout
            )
        except asyncio.TimeoutError:
            await client.close()
            raise RpcError(ErrorCode.CONNECT_FAILED, f"{endpoint}: no pong") from None
        except RpcError:
            await client.close()
            raise
        finally:
            conn.pong_waiter = None
    return client
