"""A corvid server faked in the test's own event loop: it takes one connection, and the test
reads the client's frames and writes whatever bytes it likes back."""

from __future__ import annotations

import asyncio
import dataclasses
import socket
from typing import Any

from corvid._frame import RESPONSE, header


@dataclasses.dataclass
class Frame:
    head: bytes
    payload: bytes  # body then attachment

    @property
    def version(self) -> int:
        return self.head[2]

    @property
    def type(self) -> int:
        return self.head[3]

    @property
    def flags(self) -> int:
        return self.head[4]

    @property
    def rid(self) -> int:
        return int.from_bytes(self.head[8:16], "little")

    @property
    def body(self) -> bytes:
        return self.payload[: int.from_bytes(self.head[20:24], "little")]


def reply(rid: int, body: bytes, **fields: Any) -> bytes:
    return header(RESPONSE, rid, body_len=len(body), **fields) + body


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
        head = await r.readexactly(32)
        n = int.from_bytes(head[20:24], "little") + int.from_bytes(head[24:28], "little")
        return Frame(head, await r.readexactly(n))

    async def send(self, data: bytes) -> None:
        w = await self.writer()
        w.write(data)
        await w.drain()
