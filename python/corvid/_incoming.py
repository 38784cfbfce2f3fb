"""The read side of a connection: the socket reads straight into buffers we own
(asyncio.BufferedProtocol), which are cut into frames.

A frame that fits the read buffer is handed on as a view of it, valid only during the
callback. A larger one gets a buffer of its own, sized from its header, that the socket then
reads into directly: its payload is copied once only, when it is decoded into a value."""

from __future__ import annotations

from typing import Callable

from . import _frame as fr

READ_SIZE = 256 * 1024

# (type, flags, status, request id, function id, timeout field, body, attachment, owned):
# `owned` views stay valid after the call; the others are of the shared read buffer. Returns
# False when the connection has ended (nothing more is delivered).
Deliver = Callable[[int, int, int, int, int, int, memoryview, memoryview, bool], bool]


class FrameError(Exception):
    """The byte stream is not corvid frames: the connection cannot go on."""


class Incoming:
    def __init__(self, max_frame: int) -> None:
        self.max_frame = max_frame
        self.buf = bytearray(READ_SIZE)  # never resized: views of it stay valid
        self.view = memoryview(self.buf)
        self.end = 0  # what was read; unparsed bytes always start at 0
        # One frame larger than the read buffer: its payload, how much has arrived, its header.
        self.big: memoryview | None = None
        self.big_have = 0
        self.big_head: tuple[int, int, int, int, int, int, int] = (0, 0, 0, 0, 0, 0, 0)

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
                self.big = None
                typ, flags, status, rid, fid, tmo, blen = self.big_head
                deliver(typ, flags, status, rid, fid, tmo, big[:blen], big[blen:], True)
            return
        self.end += n
        self._parse(deliver)

    def _parse(self, deliver: Deliver) -> None:
        buf, view, end = self.buf, self.view, self.end
        pos = 0
        unpack = fr.unpack_header
        max_frame = self.max_frame
        while end - pos >= 32:
            magic, ver, typ, flags, status, _sig, rid, fid, blen, alen, tmo = unpack(buf, pos)
            if magic != b"CV":
                raise FrameError("bad magic (not a corvid stream)")
            if ver != fr.base_version and ver != fr.current_version:
                raise FrameError(
                    "unsupported protocol version (this build speaks corvid protocol "
                    f"versions {fr.base_version} and {fr.current_version})"
                )
            if not 1 <= typ <= 9:
                raise FrameError(f"bad frame type {typ}")
            total = blen + alen
            if total > max_frame:
                raise FrameError(f"frame of {total} bytes exceeds the client limit of {max_frame}")
            stop = pos + 32 + total
            if stop > end:
                if 32 + total > len(buf):
                    # Read the rest straight into a buffer of the frame's own.
                    have = end - pos - 32
                    big = memoryview(bytearray(total))
                    big[:have] = view[pos + 32 : end]
                    self.big, self.big_have = big, have
                    self.big_head = (typ, flags, status, rid, fid, tmo, blen)
                    self.end = 0
                    return
                break
            b = pos + 32
            if not deliver(typ, flags, status, rid, fid, tmo, view[b : b + blen],
                           view[b + blen : stop], False):
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
