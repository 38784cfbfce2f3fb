"""The public Client: one connection to a corvid server, its calls and streams, and
connect(). The connection itself is _connection's; streams are _stream's."""

from __future__ import annotations

import asyncio
import functools
import inspect
import math
import ssl as ssl_module
from typing import Any, AsyncIterator, Awaitable, Callable, TypeVar, Union

from . import _compression as cz
from . import _frame as fr
from . import _metadata as md
from ._connection import Connection, PendingCall, Reply
from ._errors import ErrorCode, RpcError
from ._method_config import MethodConfig
from ._outgoing import DEFAULT_WRITE_BUFFER_LIMIT
from ._remote import Remote, Resolved
from ._stream import StreamCall, StreamState
from ._trace import TraceContext, current_trace
from ._types import Stream

R = TypeVar("R")
T = TypeVar("T")

_UNSET: Any = object()

# Client(credentials=...): called with the function's qualified name before each call and
# stream open; returns metadata to add to it (pairs or a mapping), or an awaitable of that.
Credentials = Callable[[str], Union[md.MetadataArg, Awaitable[md.MetadataArg]]]


def _timeout_ms(timeout: float) -> int:
    if timeout <= 0:
        return 1
    # Rounded first: 2.007 * 1000 is 2007.0000000000002 in binary floating point, and the
    # server must not be told a deadline 1 ms later than the caller's.
    return min(0xFFFFFFFF, max(1, math.ceil(round(timeout * 1000, 6))))


class Client:
    """One connection to a corvid server. Make it with `await corvid.connect(...)`.

    A call without a `timeout` gets its method's timeout from `methods` (a MethodConfig),
    else `request_timeout`; streams get neither. Being one connection, the client neither
    retries nor hedges: the other settings of `methods` are not acted on here.

    `credentials`: called with the function's name before every call and stream open; the
    metadata it returns (or the awaitable it returns resolves to) is sent after the call's
    own `metadata=`, e.g. `lambda name: {"authorization": f"Bearer {token()}"}`. An RpcError
    it raises fails that call as it is; any other exception fails it with INTERNAL.
    `max_metadata_entries` / `max_metadata_bytes`: what a reply's metadata block may hold
    (a bigger one fails its call with PROTOCOL_ERROR).
    `compression`: ask the server for per-message zstd (docs/protocol.md, "Compression"):
    once it accepts, requests and stream items of at least `compression_min_bytes` go
    compressed, and its big replies come compressed. It needs the `zstandard` package
    (`pip install corvid[zstd]`); without it the client does not ask, and works as without
    compression (`corvid.compression_available()`)."""

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
        methods: MethodConfig | None = None,
        credentials: Credentials | None = None,
        max_metadata_entries: int = md.MAX_ENTRIES,
        max_metadata_bytes: int = md.MAX_BYTES,
        compression: bool = False,
        compression_min_bytes: int = 4096,
        compression_level: int = 1,
    ) -> None:
        if write_buffer_limit < 0:
            raise ValueError("write_buffer_limit must be 0 or more")
        self.request_timeout = request_timeout
        self.methods = methods
        self.max_frame_size = max_frame_size
        self.heartbeat_interval = heartbeat_interval or 0.0
        self.heartbeat_timeout = heartbeat_timeout or 0.0
        self.stream_window = stream_window
        self.max_in_flight = max_in_flight
        self.send_cancel = send_cancel
        self.write_buffer_limit = write_buffer_limit
        self.credentials = credentials
        self.max_metadata_entries = max_metadata_entries
        self.max_metadata_bytes = max_metadata_bytes
        self.compression = compression and cz.available()
        self.compression_min_bytes = compression_min_bytes
        self.compression_level = compression_level
        # What every request's flags carry: the word that compressed replies are welcome.
        self._request_flags = fr.FLAG_ACCEPTS_COMPRESSED if self.compression else 0
        self.pings_sent = 0
        self.server_reactors: int | None = None  # with connect(..., ask_server_reactors=True)
        self._conn: Connection | None = None
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
    def _may_compress(self, name: str, compress: bool | None) -> bool:
        """Whether a call's request may go compressed: its own `compress=`, else its
        method's (MethodConfig), else yes."""
        if compress is not None:
            return compress
        methods = self.methods
        return methods is None or methods.resolve(name).compress is not False

    def _default_timeout(self, name: str) -> float | None:
        """The deadline of a call made without one: its method's, else request_timeout."""
        methods = self.methods
        if methods is not None:
            timeout = methods.resolve(name).timeout
            if timeout is not None:
                return timeout
        return self.request_timeout

    def _metadata_now(
        self, name: str, metadata: md.MetadataArg | None
    ) -> tuple[md.Metadata, Awaitable[md.MetadataArg] | None]:
        """The call's own metadata (checked: ValueError) with what a synchronous credentials
        hook adds; and, when the hook is asynchronous, what it returned, still to be awaited."""
        pairs = md.normalize(metadata)
        creds = self.credentials
        if creds is None:
            return pairs, None
        try:
            got = creds(name)
        except RpcError:
            raise
        except Exception as e:
            raise _hook_failed(name, e) from e
        if inspect.isawaitable(got):
            return pairs, got
        return pairs + _hook_pairs(name, got), None

    async def _metadata(self, name: str, metadata: md.MetadataArg | None) -> bytes:
        """The call's metadata block (b"": none), the credentials hook awaited if need be."""
        pairs, pending = self._metadata_now(name, metadata)
        if pending is not None:
            try:
                got = await pending
            except RpcError:
                raise
            except Exception as e:
                raise _hook_failed(name, e) from e
            pairs += _hook_pairs(name, got)
        return md.encode(pairs) if pairs else b""

    def _conn_or_raise(self) -> Connection:
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
        block: bytes = b"",
        compress: bool | None = None,
    ) -> tuple[Connection, int, float | None]:
        """Encodes and queues the request frame (`block`: its metadata block, b"" for none);
        returns the connection, id and timeout."""
        conn = self._conn_or_raise()
        if trace is None:
            trace = current_trace()
        traced = trace is not None and trace.valid
        # The header (and trace context) are filled in front of the metadata and arguments
        # afterwards, so the frame is built in one buffer: no copy of the arguments to prepend
        # them.
        start = fr.HEADER_SIZE + (fr.TRACE_CONTEXT_SIZE if traced else 0)
        body = bytearray(start)
        if block:
            body += block
        try:
            fn.encode_args(args, body)
        except (TypeError, ValueError, AttributeError, OverflowError) as e:
            raise RpcError(
                ErrorCode.INVALID_ARGUMENT, f"arguments of {fn.name} do not encode: {e}"
            ) from None
        if timeout is _UNSET:
            # Without a MethodConfig, as cheap as before it existed.
            methods = self.methods
            timeout = self.request_timeout if methods is None else self._default_timeout(fn.name)
        body_len = len(body) - fr.HEADER_SIZE
        total = body_len + len(attachment)
        if total > conn.max_frame:
            raise RpcError(
                ErrorCode.MESSAGE_TOO_LARGE,
                f"request of {total} bytes exceeds max_frame_size {conn.max_frame}",
            )
        rid = self._next_id
        self._next_id = rid + 1
        flags = (
            (fr.FLAG_TRACE if traced else 0) | (fr.FLAG_METADATA if block else 0) | self._request_flags
        )
        if traced:
            assert trace is not None
            body[fr.HEADER_SIZE : start] = trace.wire()
        if conn.compress_from is not None and self._may_compress(fn.name, compress):
            packed = conn.compressed(body, bytes(attachment))
            if packed is not None:
                body, attachment = packed, b""
                body_len = len(body) - fr.HEADER_SIZE
                flags |= fr.FLAG_COMPRESSED
        fr.make_request(
            body,
            rid,
            function_id=fn.function_id,
            signature=fn.signature,
            body_length=body_len,
            attachment_length=len(attachment),
            timeout_ms=0 if timeout is None else _timeout_ms(timeout),
            flags=flags,
        )
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
        metadata: md.MetadataArg | None = None,
        compress: bool | None = None,
    ) -> asyncio.Future[R]:
        """Sends the request now (pipelined: it does not wait for earlier replies) and returns
        a future of the result. Cancelling the future sends the server a cancel frame. With
        an asynchronous credentials hook, the request is sent once the hook returned."""
        if metadata is None and self.credentials is None:
            return self._send(f, args, timeout, attachment, trace, False, compress=compress)
        pairs, pending = self._metadata_now(f.name, metadata)
        if pending is None:
            block = md.encode(pairs) if pairs else b""
            return self._send(f, args, timeout, attachment, trace, False, block, compress)
        pending_pairs = pending

        async def later() -> R:
            try:
                got = await pending_pairs
            except RpcError:
                raise
            except Exception as e:
                raise _hook_failed(f.name, e) from e
            all_pairs = pairs + _hook_pairs(f.name, got)
            block = md.encode(all_pairs) if all_pairs else b""
            result: R = await self._send(
                f, args, timeout, attachment, trace, False, block, compress
            )
            return result

        return asyncio.ensure_future(later())

    def _send(
        self,
        f: Remote[..., Any],
        args: tuple[Any, ...],
        timeout: float | None,
        attachment: bytes,
        trace: TraceContext | None,
        want_reply: bool,
        block: bytes = b"",
        compress: bool | None = None,
    ) -> asyncio.Future[Any]:
        fn = f.resolve()
        if fn.in_item is not None or fn.out_item is not None:
            raise RpcError(
                ErrorCode.INVALID_ARGUMENT,
                f"{fn.name} is a stream: use client.stream() or client.open_stream()",
            )
        conn, rid, timeout = self._request(fn, args, timeout, attachment, trace, block, compress)
        fut: asyncio.Future[Any] = conn.loop.create_future()
        call = PendingCall(fut, fn, want_reply)
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
            timeout = self._default_timeout(f.name)
        return await conn.writable(f.name, timeout)

    async def call(
        self,
        f: Remote[..., R],
        *args: Any,
        timeout: float | None = _UNSET,
        attachment: bytes = b"",
        trace: TraceContext | None = None,
        metadata: md.MetadataArg | None = None,
        compress: bool | None = None,
    ) -> R:
        """Calls f(*args) and returns its result; raises RpcError. `timeout` (seconds) is the
        call's deadline, also sent to the server; cancelling the awaiting task sends a cancel.
        While the connection is over write_buffer_limit, it waits before sending.
        `metadata`: call metadata, (key, value) pairs or a mapping (keys: lowercase tokens of
        a-z 0-9 - _ .; values: str or bytes); a bad one raises ValueError."""
        block = b""
        if metadata is not None or self.credentials is not None:
            block = await self._metadata(f.name, metadata)
        timeout = await self._writable(f, timeout)
        result: R = await self._send(f, args, timeout, attachment, trace, False, block, compress)
        return result

    async def call_reply(
        self,
        f: Remote[..., R],
        *args: Any,
        timeout: float | None = _UNSET,
        attachment: bytes = b"",
        trace: TraceContext | None = None,
        metadata: md.MetadataArg | None = None,
        compress: bool | None = None,
    ) -> Reply[R]:
        """As call(), with the reply's attachment and call metadata: Reply(value, attachment,
        metadata). (An error reply's metadata is RpcError.metadata.)"""
        block = b""
        if metadata is not None or self.credentials is not None:
            block = await self._metadata(f.name, metadata)
        timeout = await self._writable(f, timeout)
        result: Reply[R] = await self._send(
            f, args, timeout, attachment, trace, True, block, compress
        )
        return result

    # --- streams ---
    def _open(
        self,
        f: Remote[..., Any],
        args: tuple[Any, ...],
        timeout: float | None,
        trace: TraceContext | None,
        block: bytes = b"",
    ) -> StreamState:
        fn = f.resolve()
        if fn.in_item is None and fn.out_item is None:
            raise RpcError(ErrorCode.INVALID_ARGUMENT, f"{fn.name} is no stream: use call()")
        if timeout is _UNSET:
            timeout = None  # a stream's deadline covers all of it: none unless asked
        conn, rid, timeout = self._request(fn, args, timeout, b"", trace, block)
        s = StreamState(conn, rid, fn, max(self.stream_window, 4))
        conn.streams[rid] = s
        if fn.out_item is not None and s.window > s.granted:
            s.grant(s.window - s.granted)  # right behind the request
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
        metadata: md.MetadataArg | None = None,
    ) -> AsyncIterator[T]:
        """The items of a server stream, as they come. Leaving the loop early (break, an
        exception, the task cancelled) cancels the stream on the server."""
        if timeout is _UNSET:
            timeout = None
        block = b""
        if metadata is not None or self.credentials is not None:
            block = await self._metadata(f.name, metadata)
        timeout = await self._writable(f, timeout)
        s = self._open(f, args, timeout, trace, block)
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
        metadata: md.MetadataArg | None = None,
    ) -> StreamCall:
        """Opens a client stream (last parameter Stream[U]) or bidirectional stream. This
        sends at once, so an asynchronous credentials hook needs open_stream_async()."""
        block = b""
        if metadata is not None or self.credentials is not None:
            pairs, pending = self._metadata_now(f.name, metadata)
            if pending is not None:
                if inspect.iscoroutine(pending):
                    pending.close()  # never awaited: no "was never awaited" warning
                raise RpcError(
                    ErrorCode.INVALID_ARGUMENT,
                    f"{f.name}: the credentials hook is asynchronous: open the stream with "
                    "`await client.open_stream_async(...)`",
                )
            block = md.encode(pairs) if pairs else b""
        return StreamCall(self._open(f, args, timeout, trace, block))

    async def open_stream_async(
        self,
        f: Remote[..., Any],
        *args: Any,
        timeout: float | None = _UNSET,
        trace: TraceContext | None = None,
        metadata: md.MetadataArg | None = None,
    ) -> StreamCall:
        """As open_stream(), awaiting an asynchronous credentials hook first."""
        block = b""
        if metadata is not None or self.credentials is not None:
            block = await self._metadata(f.name, metadata)
        return StreamCall(self._open(f, args, timeout, trace, block))


def _hook_failed(name: str, e: Exception) -> RpcError:
    return RpcError(ErrorCode.INTERNAL, f"{name}: the credentials hook raised {e!r}")


def _hook_pairs(name: str, got: Any) -> md.Metadata:
    """What the credentials hook returned, as checked pairs; bad ones fail the call (INTERNAL:
    the fault is the application's hook, not the call's arguments)."""
    if got is None:
        return []
    try:
        return md.normalize(got)
    except ValueError as e:
        raise RpcError(
            ErrorCode.INTERNAL, f"{name}: the credentials hook returned bad metadata: {e}"
        ) from None


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
    Client's options (request_timeout, methods, max_frame_size, heartbeat_interval, ...).
    `ask_server_reactors`: ping before the first request and read the server's reactor count
    from its pong (docs/protocol.md, "Reactor count") into `client.server_reactors`."""
    kind, host, port = parse_endpoint(endpoint)
    client = Client(**config)
    loop = asyncio.get_running_loop()
    conn = Connection(client)
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
        conn.write(fr.make_ping(0))
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
