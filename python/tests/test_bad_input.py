"""A misbehaving server (a fake one, in this process): malformed, truncated, oversized and
undecodable replies are RpcError(PROTOCOL_ERROR), the connection closes, nothing hangs.
Also heartbeats against a server that goes silent."""

from __future__ import annotations

import asyncio
from typing import Any, Awaitable, Callable

import pytest

import corvid
from corvid import ErrorCode, i32
from corvid._frame import (
    HEADER_SIZE,
    make_error,
    make_ping,
    make_rdma_setup,
    make_request,
    make_response,
)
from conftest import SLOWDOWN, Server, run
from fake_server import item, reply
import peer


@corvid.remote
def add(a: i32, b: i32) -> i32: ...


Script = Callable[[asyncio.StreamReader, asyncio.StreamWriter, int], Awaitable[None]]


async def with_fake_server(script: Script, **config: Any) -> corvid.RpcError:
    """Runs one call of add(1, 2) against a server that answers with `script` (given the
    request's id); returns the call's error, after checking the connection closed."""
    done = asyncio.Event()

    async def serve(r: asyncio.StreamReader, w: asyncio.StreamWriter) -> None:
        head = await r.readexactly(32)
        body_len = int.from_bytes(head[20:24], "little")
        await r.readexactly(body_len)
        await script(r, w, int.from_bytes(head[8:16], "little"))
        await w.drain()
        await done.wait()
        w.close()

    srv = await asyncio.start_server(serve, "127.0.0.1", 0)
    port = srv.sockets[0].getsockname()[1]
    try:
        c = await corvid.connect(f"127.0.0.1:{port}", **config)
        with pytest.raises(corvid.RpcError) as e:
            await c.call(add, 1, 2)
        await c.wait_closed()
        assert c.closed
        with pytest.raises(corvid.RpcError):
            await c.call(add, 1, 2)  # nothing more goes out
        return e.value
    finally:
        done.set()
        srv.close()


def check(script: Script, code: ErrorCode, words: str, **config: Any) -> None:
    err = run(with_fake_server(script, **config))
    assert err.code == code, err
    assert words in err.message, err.message


def test_bad_magic() -> None:
    async def s(r: Any, w: asyncio.StreamWriter, rid: int) -> None:
        w.write(b"HTTP/1.1 400 Bad Request\r\n\r\n....")

    check(s, ErrorCode.PROTOCOL_ERROR, "bad magic")


def test_version_1_frame() -> None:
    async def s(r: Any, w: asyncio.StreamWriter, rid: int) -> None:
        f = bytearray(reply(rid, b"\x03\x00\x00\x00"))
        f[2] = 1
        w.write(bytes(f))

    check(s, ErrorCode.PROTOCOL_ERROR, "unsupported protocol version")


def test_bad_type() -> None:
    async def s(r: Any, w: asyncio.StreamWriter, rid: int) -> None:
        f = bytearray(reply(rid, b""))
        f[3] = 42
        w.write(bytes(f))

    check(s, ErrorCode.PROTOCOL_ERROR, "bad frame type")


def test_frames_only_a_client_sends_are_refused() -> None:
    async def rdma_setup(r: Any, w: asyncio.StreamWriter, rid: int) -> None:
        w.write(make_rdma_setup(0))

    check(rdma_setup, ErrorCode.PROTOCOL_ERROR, "unexpected frame type 6 from the server")

    async def request(r: Any, w: asyncio.StreamWriter, rid: int) -> None:
        head = bytearray(HEADER_SIZE)
        make_request(head, rid, function_id=1, signature=1, body_length=0)
        w.write(head)

    check(request, ErrorCode.PROTOCOL_ERROR, "unexpected frame type 1 from the server")


def test_oversized_reply_refused_from_its_header() -> None:
    # The header claims 4 GiB - 2; no payload follows. We must fail at once, not wait or
    # allocate.
    async def s(r: Any, w: asyncio.StreamWriter, rid: int) -> None:
        w.write(make_response(rid, 0xFFFFFFFF, 0xFFFFFFFF))

    check(s, ErrorCode.PROTOCOL_ERROR, "exceeds the client limit")
    check(s, ErrorCode.PROTOCOL_ERROR, "of 1024", max_frame_size=1024)


def test_truncated_then_closed() -> None:
    async def s(r: Any, w: asyncio.StreamWriter, rid: int) -> None:
        w.write(reply(rid, b"\x03\x00\x00\x00")[:34])
        w.close()

    check(s, ErrorCode.CONNECTION_CLOSED, "closed")


def test_undecodable_body() -> None:
    async def s(r: Any, w: asyncio.StreamWriter, rid: int) -> None:
        w.write(reply(rid, b"\x03\x00"))  # an i32 cut short

    check(s, ErrorCode.PROTOCOL_ERROR, "truncated")

    async def trailing(r: Any, w: asyncio.StreamWriter, rid: int) -> None:
        w.write(reply(rid, b"\x03\x00\x00\x00\x00"))

    check(trailing, ErrorCode.PROTOCOL_ERROR, "trailing_bytes")


def test_connection_level_error_fails_every_call() -> None:
    async def s(r: Any, w: asyncio.StreamWriter, rid: int) -> None:
        w.write(make_error(0, ErrorCode.SERVER_BUSY, 6) + b"\x05going")

    check(s, ErrorCode.SERVER_BUSY, "going")


def test_split_frames_and_unknown_ids_are_fine() -> None:
    async def main() -> None:
        async def serve(r: asyncio.StreamReader, w: asyncio.StreamWriter) -> None:
            head = await r.readexactly(32)
            await r.readexactly(int.from_bytes(head[20:24], "little"))
            rid = int.from_bytes(head[8:16], "little")
            data = reply(rid + 99, b"\x01\x00\x00\x00") + reply(rid, b"\x03\x00\x00\x00")
            for i in range(len(data)):  # one byte at a time
                w.write(data[i : i + 1])
                await w.drain()
            await r.read()

        srv = await asyncio.start_server(serve, "127.0.0.1", 0)
        port = srv.sockets[0].getsockname()[1]
        async with await corvid.connect(f"127.0.0.1:{port}") as c:
            assert await c.call(add, 1, 2) == 3
        srv.close()

    run(main())


def test_heartbeat_closes_a_silent_connection() -> None:
    async def main() -> None:
        pings = 0

        async def serve(r: asyncio.StreamReader, w: asyncio.StreamWriter) -> None:
            nonlocal pings
            while head := await r.read(32):  # reads pings, answers nothing
                pings += head[3:4] == b"\x04"

        srv = await asyncio.start_server(serve, "127.0.0.1", 0)
        port = srv.sockets[0].getsockname()[1]
        c = await corvid.connect(
            f"127.0.0.1:{port}", heartbeat_interval=0.05, heartbeat_timeout=0.3
        )
        pending = c.send_request(add, 1, 2)
        err = await c.wait_closed()
        assert err is not None and err.code == ErrorCode.CONNECTION_CLOSED
        assert "heard nothing" in err.message
        with pytest.raises(corvid.RpcError) as e:
            await pending
        assert e.value.code == ErrorCode.CONNECTION_CLOSED
        assert c.pings_sent >= 1 and pings >= 1
        srv.close()

    run(main())


def test_heartbeat_keeps_a_live_connection(server: Server) -> None:
    async def main() -> None:
        async with await corvid.connect(
            server.endpoint, heartbeat_interval=0.05, heartbeat_timeout=0.5 * SLOWDOWN
        ) as c:
            # An idle second and more: the server's pongs keep us open.
            while c.pings_sent < 5:
                await asyncio.sleep(0.05)
            assert not c.closed
            assert await c.call(peer.echo, "alive") == "alive"

    run(main())


@corvid.remote
def items(n: i32) -> corvid.Stream[str]: ...


def test_stream_items_past_the_credit_end_the_stream() -> None:
    # The server starts with 256 KiB of credit; one that sends 8 items of 64 KiB while we read
    # one breaks flow control: the stream ends with PROTOCOL_ERROR and a cancel is sent. (The
    # ping behind the items: its pong proves the client has processed them all.)
    async def main() -> None:
        processed = asyncio.Event()
        cancelled = False

        async def serve(r: asyncio.StreamReader, w: asyncio.StreamWriter) -> None:
            nonlocal cancelled
            head = await r.readexactly(32)
            await r.readexactly(int.from_bytes(head[20:24], "little"))
            rid = int.from_bytes(head[8:16], "little")
            body = corvid.encode(str, "i" * 65536)
            for _ in range(8):
                w.write(item(rid, body))
            w.write(make_ping(77))
            while True:
                frame = await r.readexactly(32)
                if frame[3] == 3 and int.from_bytes(frame[8:16], "little") == rid:
                    cancelled = True
                if frame[3] == 5 and int.from_bytes(frame[8:16], "little") == 77:
                    processed.set()
                    await r.read()
                    return

        srv = await asyncio.start_server(serve, "127.0.0.1", 0)
        port = srv.sockets[0].getsockname()[1]
        async with await corvid.connect(f"127.0.0.1:{port}") as c:
            s = c.stream(items, 8)
            got = [await s.__anext__()]
            await processed.wait()
            assert cancelled
            with pytest.raises(corvid.RpcError) as e:
                async for x in s:
                    got.append(x)
            assert e.value.code == ErrorCode.PROTOCOL_ERROR
            assert "credit" in e.value.message
            assert len(got) < 8
            assert not c.closed  # only that stream ended
        srv.close()

    run(main())
