"""The read side of a connection: the socket reads straight into buffers we own
(asyncio.BufferedProtocol), which are cut into frames.

A frame that fits the read buffer is handed on as a view of it, valid only during the
callback. A larger one gets a buffer of its own, sized from its header, that the socket then
reads into directly: its payload is copied once only, when it is decoded into a value."""

from __future__ import annotations

from typing import Callable

from ._frame import HEADER_SIZE, FrameHeader, parse_header

READ_SIZE = 256 * 1024

# (header, body, attachment, owned): `owned` views stay valid after the call; the others are
# of the shared read buffer. Returns False when the connection has ended (nothing more is
# delivered).
Deliver = Callable[[FrameHeader, memoryview, memoryview, bool], bool]


class Incoming:
    def __init__(self, max_frame: int) -> None:
        self.max_frame = max_frame
        self.buf = bytearray(READ_SIZE)  # never resized: views of it stay valid
        self.view = memoryview(self.buf)
        self.end = 0  # what was read; unparsed bytes always start at 0
        # One frame larger than the read buffer: its payload, how much has arrived, its header.
        self.big: memoryview | None = None
        self.big_have = 0
        self.big_head: FrameHeader | None = None

    def get_buffer(self) -> memoryview:
        if self.big is not None:
            return self.big[self.big_have :]
        return self.view[self.end :]

    def received(self, n: int, deliver: Deliver) -> None:
        """`n` bytes arrived in the last get_buffer(); raises FrameError."""
        big = self.big
        if big is not None:
            self.big_have += n
            if self.big_have == len(big):
                head = self.big_head
                assert head is not None
                self.big = self.big_head = None
                blen = head.body_length
                deliver(head, big[:blen], big[blen:], True)
            return
        self.end += n
        self._parse(deliver)

    def _parse(self, deliver: Deliver) -> None:
        buf, view, end = self.buf, self.view, self.end
        pos = 0
        parse, max_frame = parse_header, self.max_frame
        while end - pos >= HEADER_SIZE:
            head = parse(buf, pos, max_frame)
            b = pos + HEADER_SIZE
            blen = head.body_length
            stop = b + blen + head.attachment_length
            if stop > end:
                if stop - pos > len(buf):
                    # Read the rest straight into a buffer of the frame's own.
                    big = memoryview(bytearray(stop - b))
                    big[: end - b] = view[b:end]
                    self.big, self.big_have, self.big_head = big, end - b, head
                    self.end = 0
                    return
                break
            if not deliver(head, view[b : b + blen], view[b + blen : stop], False):
                return
            pos = stop
        if pos == end:
            self.end = 0
        elif pos:
            # Move the partial frame to the front (at most one read buffer's worth), so the
            # rest of it has room behind it.
            n = end - pos
            view[:n] = view[pos:end]
            self.end = n
