"""A corvid server faked in the test's own event loop: it takes one connection, and the test
reads the client's frames and writes whatever bytes it likes back."""

from __future__ import annotations

import asyncio
import dataclasses
import socket

from corvid._frame import (
    HEADER_SIZE,
    FrameHeader,
    make_item,
    make_response,
    parse_header,
    version_for,
)


@dataclasses.dataclass
class Frame:
    head: FrameHeader
    payload: bytes  # body then attachment

    @property
    def version(self) -> int:
        return self.head.version

    @property
    def type(self) -> int:
        return self.head.type

    @property
    def flags(self) -> int:
        return self.head.flags

    @property
    def rid(self) -> int:
        return self.head.request_id

    @property
    def body(self) -> bytes:
        return self.payload[: self.head.body_length]


def reply(rid: int, body: bytes) -> bytes:
    return make_response(rid, len(body)) + body


def item(stream: int, body: bytes) -> bytes:
    frame = bytearray(HEADER_SIZE) + body
    make_item(frame, stream, len(body))
    return bytes(frame)


def flagged(frame: bytes, flags: int) -> bytes:
    """`frame` with these flags, in the version they are sent with: the builders set none
    (but a request's trace bit), and a test needs the frames a receiver refuses."""
    return frame[:2] + bytes((version_for(flags), frame[3], flags)) + frame[5:]


class FakeServer:
    """`rcvbuf`: the accepted socket's receive buffer, fixed (else the kernel grows it, to
    tens of MiB on some hosts, which a slow reader's tests must not hide behind)."""

    def __init__(self, rcvbuf: int | None = None) -> None:
        self.rcvbuf = rcvbuf
        self.endpoint = ""
        self._conn: asyncio.Future[tuple[asyncio.StreamReader, asyncio.StreamWriter]]
        self._server: asyncio.Server | None = None

    async def __aenter__(self) -> FakeServer:
        self._conn = asyncio.get_running_loop().create_future()

        def accept(r: asyncio.StreamReader, w: asyncio.StreamWriter) -> None:
            if not self._conn.done():
                self._conn.set_result((r, w))

        sock = socket.socket()
        if self.rcvbuf is not None:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, self.rcvbuf)  # inherited
        sock.bind(("127.0.0.1", 0))
        self._server = await asyncio.start_server(accept, sock=sock)
        self.endpoint = f"127.0.0.1:{self._server.sockets[0].getsockname()[1]}"
        return self

    async def __aexit__(self, *exc: object) -> None:
        if self._conn.done():
            self._conn.result()[1].close()
        assert self._server is not None
        self._server.close()

    async def reader(self) -> asyncio.StreamReader:
        return (await self._conn)[0]

    async def writer(self) -> asyncio.StreamWriter:
        return (await self._conn)[1]

    async def frame(self) -> Frame:
        r = await self.reader()
        # Whatever the client sends is taken: its own limit is what a test checks.
        head = parse_header(await r.readexactly(HEADER_SIZE), max_payload=1 << 33)
        return Frame(head, await r.readexactly(head.payload_size))

    async def send(self, data: bytes) -> None:
        w = await self.writer()
        w.write(data)
        await w.drain()
