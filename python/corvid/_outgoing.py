"""The write side of a connection: frames queued during an event-loop turn go out together,
handed to the transport only as fast as the socket takes them, with a bound on what waits.

asyncio's transports copy whatever the socket does not take at once into a buffer of their
own. So a large frame is handed over in CHUNK-sized views, the next one only once the
transport has sent everything it held: a frame is never copied whole, and what the
transport buffers stays within one chunk."""

from __future__ import annotations

import asyncio
import collections

# What may wait to be sent before callers wait (a single larger frame still goes out whole).
DEFAULT_WRITE_BUFFER_LIMIT = 8 << 20
JOIN_MAX = 64 * 1024  # parts smaller than this are joined into one write per turn
CHUNK = 256 * 1024  # the most handed to the transport at once


class Outgoing:
    def __init__(self, loop: asyncio.AbstractEventLoop, limit: int) -> None:
        self.loop = loop
        self.limit = limit
        self.transport: asyncio.WriteTransport | None = None
        self.turn: list[bytes | bytearray | memoryview] = []  # this turn's parts
        self.pending: collections.deque[bytes | memoryview] = collections.deque()
        self.queued = 0  # bytes in `turn` and `pending`: not handed to the transport yet
        self.handed = 0  # bytes handed to the transport, ever
        self.transport_full = False  # between the transport's pause_ and resume_writing
        self.flush_scheduled = False
        self.paused = False  # over the limit: callers wait, pongs are dropped
        self.waiters: list[asyncio.Future[None]] = []
        self.closed = False

    def attach(self, transport: asyncio.WriteTransport) -> None:
        self.transport = transport
        # pause_writing as soon as the transport holds a byte, resume_writing once it is empty.
        # (1, not 0: asyncio's TLS transport pauses at size >= high.)
        transport.set_write_buffer_limits(high=1, low=0)

    def write(self, *parts: bytes | bytearray | memoryview) -> None:
        """Queues one frame's parts (not to be changed afterwards: they are sent as they are)."""
        if self.closed:
            return
        for p in parts:
            self.turn.append(p)
            self.queued += len(p)
        if not self.flush_scheduled:
            self.flush_scheduled = True
            self.loop.call_soon(self.flush)
        if self.queued > self.limit:
            self.paused = True

    def flush(self) -> None:
        self.flush_scheduled = False
        turn, self.turn = self.turn, []
        pending = self.pending
        small: list[bytes | bytearray | memoryview] = []
        for p in turn:
            if len(p) < JOIN_MAX:
                small.append(p)
                continue
            if small:
                pending.append(self._joined(small))
                small = []
            pending.append(memoryview(p))
        if small:
            pending.append(self._joined(small))
        self.feed()

    @staticmethod
    def _joined(parts: list[bytes | bytearray | memoryview]) -> bytes | memoryview:
        b = b"".join(parts)
        return memoryview(b) if len(b) > CHUNK else b

    def feed(self) -> None:
        t = self.transport
        if t is None or self.closed or t.is_closing():
            return
        pending = self.pending
        while pending and not self.transport_full:
            p = pending[0]
            if len(p) > CHUNK:
                piece = p[:CHUNK]
                pending[0] = p[CHUNK:]
            else:
                piece = p
                pending.popleft()
            self.queued -= len(piece)
            self.handed += len(piece)
            t.write(piece)  # may call pause_writing
        if self.paused and self.queued <= self.limit // 2:
            self.paused = False
            self._wake()

    def pause_writing(self) -> None:
        self.transport_full = True

    def resume_writing(self) -> None:
        self.transport_full = False
        self.feed()

    def buffered(self) -> int:
        """Bytes in the transport's buffer."""
        t = self.transport
        return t.get_write_buffer_size() if t is not None else 0

    def unsent(self) -> int:
        """Bytes written and not yet taken by the operating system."""
        return self.queued + self.buffered()

    async def wait_writable(self) -> None:
        """Returns once under the limit again (at once if not over it), or closed."""
        while self.paused and not self.closed:
            f = self.loop.create_future()
            self.waiters.append(f)
            await f

    def close(self) -> None:
        """Drops what was not handed to the transport; wakes the waiting callers."""
        self.closed = True
        self.turn.clear()
        self.pending.clear()
        self.queued = 0
        self.paused = False
        self._wake()

    def _wake(self) -> None:
        waiters, self.waiters = self.waiters, []
        for f in waiters:
            if not f.done():
                f.set_result(None)
