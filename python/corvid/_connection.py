"""The connection: frames out (_outgoing: batched per event-loop turn, bounded) and in
(_incoming: header checked before the payload is waited for), calls matched by request id,
streams' frames handed to their StreamState, liveness kept by a Heartbeat."""

from __future__ import annotations

import asyncio
import typing
from typing import TYPE_CHECKING, Any, Generic, TypeVar

from . import _compression as cz
from . import _frame as fr
from . import _metadata as md
from ._codec import DecodeError
from ._errors import ErrorCode, RpcError, reply_error
from ._frame import FrameError, FrameHeader
from ._heartbeat import Heartbeat
from ._incoming import Incoming
from ._outgoing import Outgoing
from ._remote import Resolved

if TYPE_CHECKING:
    from ._client import Client
    from ._stream import StreamState

R = TypeVar("R")


class Reply(Generic[R]):
    """A call's value, the attachment the server set (b"" when none) and the call metadata
    its reply carried ([(key, value bytes)], in their order; [] when none)."""

    __slots__ = ("value", "attachment", "metadata")

    def __init__(self, value: R, attachment: bytes, metadata: md.Metadata | None = None) -> None:
        self.value = value
        self.attachment = attachment
        self.metadata: md.Metadata = metadata if metadata is not None else []

    def __repr__(self) -> str:
        more = f", metadata={self.metadata!r}" if self.metadata else ""
        return f"Reply({self.value!r}, attachment={self.attachment!r}{more})"


class PendingCall:
    __slots__ = ("fut", "fn", "timer", "on_done", "want_reply")

    def __init__(self, fut: asyncio.Future[Any], fn: Resolved, want_reply: bool) -> None:
        self.fut = fut
        self.fn = fn
        self.timer: asyncio.TimerHandle | None = None
        self.on_done: Any = None
        self.want_reply = want_reply

    def detach(self) -> asyncio.Future[Any]:
        """Stops its timer and the cancel its future's end would send: the call ends here."""
        if self.timer is not None:
            self.timer.cancel()
        self.fut.remove_done_callback(self.on_done)
        return self.fut


class Connection(asyncio.BufferedProtocol):
    def __init__(self, client: Client) -> None:
        self.client = client
        self.loop = asyncio.get_running_loop()
        self.transport: asyncio.Transport | None = None
        self.incoming = Incoming(client.max_frame_size)
        self.out = Outgoing(self.loop, client.write_buffer_limit)
        self.calls: dict[int, PendingCall] = {}
        self.streams: dict[int, StreamState] = {}
        self.closed = False
        self.close_error: RpcError | None = None
        self.closed_future: asyncio.Future[None] = self.loop.create_future()
        self.heartbeat = Heartbeat(self)
        self.max_frame = client.max_frame_size
        # Frames this large are compressed: never, until a response says the server accepts
        # compressed requests (and only if this client asked: Client(compression=True)).
        self.compress_from: int | None = None
        self.pong_waiter: asyncio.Future[int] | None = None  # ask_server_reactors

    # --- asyncio.BufferedProtocol ---
    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        # (uvloop's transports do not derive from asyncio.Transport, but have its methods.)
        self.transport = typing.cast(asyncio.Transport, transport)
        self.out.attach(self.transport)
        self.heartbeat.start()

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
        self.heartbeat.heard()
        try:
            self.incoming.received(nbytes, self.on_frame)
        except FrameError as e:
            self.fatal(str(e))

    def on_frame(self, head: FrameHeader, body: memoryview, att: memoryview, owned: bool) -> bool:
        """One frame (its views: see Incoming); False once the connection has ended."""
        typ = head.type
        if typ == fr.REQUEST or typ == fr.RDMA_SETUP:
            self.fatal(f"unexpected frame type {typ} from the server")
            return False
        flags = head.flags
        # Responses may carry call metadata; responses and items may come compressed (when
        # zstandard is installed); no other must-understand bit is known on what a server
        # sends.
        zstd = fr.FLAG_COMPRESSED if cz.available() else 0
        known = (
            fr.FLAG_METADATA | zstd if typ == fr.RESPONSE else zstd if typ == fr.STREAM_ITEM else 0
        )
        if flags & fr.FLAG_ACCEPTS_COMPRESSED and typ == fr.RESPONSE:
            self.server_accepts_compressed()
        if flags & fr.must_understand_flags & ~known:
            why = fr.unknown_must_understand(flags, known)
            assert why is not None
            self.refuse(typ, head.request_id, why)
        elif flags & fr.FLAG_COMPRESSED:
            self.on_compressed(head, body, att)
        elif typ == fr.RESPONSE:
            if flags & fr.FLAG_METADATA:
                self.on_response_with_metadata(head.request_id, head.status, body, att)
            else:
                self.on_response(head.request_id, head.status, body, att)
        elif typ == fr.STREAM_ITEM:
            s = self.streams.get(head.request_id)
            if s is not None:
                s.on_item(body if owned else bytes(body), fr.HEADER_SIZE + len(body) + len(att))
        elif typ == fr.STREAM_CREDIT:
            s = self.streams.get(head.request_id)
            if s is not None:
                s.on_credit(head.credit)
        elif typ == fr.PING:
            # Over the write limit the server is not reading what we send: a pong would only
            # add to it.
            if not self.out.paused:
                self.write(fr.make_pong(head.request_id))
        elif typ == fr.PONG:
            pw = self.pong_waiter
            if pw is not None and not pw.done():
                pw.set_result(head.reactors)
        # cancel, stream_end: nothing to do (hearing them proves the peer alive)
        return not self.closed

    def server_accepts_compressed(self) -> None:
        client = self.client
        if client.compression and self.compress_from is None:
            self.compress_from = max(client.compression_min_bytes, cz.HEAD_SIZE + 1)

    def compressed(self, frame: bytearray, attachment: bytes) -> bytearray | None:
        """`frame` (a header's room, then its body) with `attachment`, compressed into a new
        frame of the same header room, when the server accepts it, it is big enough, and zstd
        makes it smaller; else None (sent as it is)."""
        start = self.compress_from
        if start is None or len(frame) - fr.HEADER_SIZE + len(attachment) < start:
            return None
        packed = cz.deflate(
            memoryview(frame)[fr.HEADER_SIZE :], attachment, self.client.compression_level
        )
        if packed is None:
            return None
        out = bytearray(fr.HEADER_SIZE)
        out += packed
        return out

    def on_compressed(self, head: FrameHeader, body: memoryview, att: memoryview) -> None:
        """A compressed response or item: inflated within max_frame_size and handled as the
        frame it stands for; one that does not inflate to what it declares ends its call."""
        try:
            if len(att):
                raise cz.CompressionError(
                    "a compressed frame with an attachment outside its compressed payload"
                )
            plain_body, plain_att = cz.inflate(body, self.max_frame)
        except cz.CompressionError as e:
            self.refuse(head.type, head.request_id, f"bad compressed reply: {e}")
            return
        plain = head._replace(
            flags=head.flags & ~fr.FLAG_COMPRESSED,
            body_length=len(plain_body),
            attachment_length=len(plain_att),
        )
        self.on_frame(plain, memoryview(plain_body), memoryview(plain_att), True)

    def refuse(self, typ: int, rid: int, why: str) -> None:
        """A frame with a must-understand bit we do not know: only its call or stream ends
        (the frame's lengths are valid, so the stream of frames goes on)."""
        if typ == fr.RESPONSE:
            call = self.calls.pop(rid, None)
            if call is not None:
                fut = call.detach()
                if not fut.done():
                    fut.set_exception(RpcError(ErrorCode.PROTOCOL_ERROR, why))
                return
        if typ in (fr.RESPONSE, fr.STREAM_ITEM, fr.STREAM_CREDIT, fr.STREAM_END):
            s = self.streams.get(rid)
            if s is not None:
                if typ == fr.RESPONSE:
                    s.finish(RpcError(ErrorCode.PROTOCOL_ERROR, why))
                else:
                    s.cancel(ErrorCode.PROTOCOL_ERROR, why)  # the server's side is still open
        elif typ == fr.PONG:
            pw = self.pong_waiter
            if pw is not None and not pw.done():
                pw.set_exception(RpcError(ErrorCode.PROTOCOL_ERROR, why))
        # ping (no pong), cancel: ignored

    # --- replies ---
    def on_response_with_metadata(
        self, rid: int, status: int, body: memoryview, att: memoryview
    ) -> None:
        """A response whose body starts with a metadata block: checked whole against the
        client's limits before any of it is believed. A bad one ends only its call (the
        frame's lengths held, so the frames after it are read as ever)."""
        client = self.client
        try:
            pairs, used = md.decode(body, client.max_metadata_entries, client.max_metadata_bytes)
        except md.MetadataError as e:
            self.refuse(fr.RESPONSE, rid, str(e))
            return
        self.on_response(rid, status, body[used:], att, pairs)

    def on_response(
        self,
        rid: int,
        status: int,
        body: memoryview,
        att: memoryview,
        metadata: md.Metadata | None = None,
    ) -> None:
        call = self.calls.pop(rid, None)
        if call is None:
            s = self.streams.get(rid)
            if s is not None:
                s.on_response(status, body, metadata)
            elif rid == 0 and status != 0:
                # About the connection: the server rejected the stream and is closing it.
                self.fail_all(reply_error(status, body, metadata))
                self.abort()
            return  # else: a late reply to a call that timed out or was cancelled
        fut = call.detach()
        if fut.done():
            return
        if status != 0:
            fut.set_exception(reply_error(status, body, metadata))
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
            fut.set_result(Reply(value, bytes(att) if len(att) else b"", metadata))
        else:
            fut.set_result(value)

    # --- failure ---
    def fatal(self, why: str) -> None:
        """The reply stream is broken: every call fails with PROTOCOL_ERROR, and we close."""
        self.fail_all(RpcError(ErrorCode.PROTOCOL_ERROR, why))
        self.abort()

    def close_dead(self, why: str) -> None:
        """The server is gone or stuck: every call fails with CONNECTION_CLOSED, and we close."""
        self.fail_all(RpcError(ErrorCode.CONNECTION_CLOSED, why))
        self.abort()

    def abort(self) -> None:
        if self.transport is not None:
            self.transport.abort()

    def fail_all(self, err: RpcError) -> None:
        if not self.closed:
            self.closed = True
            self.close_error = err
        self.out.close()
        self.heartbeat.stop()
        calls, self.calls = self.calls, {}
        for call in calls.values():
            fut = call.detach()
            if not fut.done():
                fut.set_exception(err)
        for s in list(self.streams.values()):
            s.finish(err)
        if not self.closed_future.done():
            self.closed_future.set_result(None)

    # --- sending ---
    def write(self, *parts: bytes | bytearray) -> None:
        """Queues one frame's parts; dropped once the connection has ended."""
        self.out.write(*parts)

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
            self.write(fr.make_cancel(rid))

    def on_call_timeout(self, rid: int, timeout: float) -> None:
        call = self.calls.pop(rid, None)
        if call is None:
            return
        fut = call.detach()
        if self.client.send_cancel:
            self.write(fr.make_cancel(rid))
        if not fut.done():
            fut.set_exception(
                RpcError(ErrorCode.TIMEOUT, f"{call.fn.name}: no reply within {timeout} s")
            )
