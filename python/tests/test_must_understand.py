"""Flag bits 0-3 are must-understand (docs/protocol.md, "Flags"): a frame from the server with
one this client does not know ends only its call or stream, with PROTOCOL_ERROR naming the
bit; bits 4-7 are ignored. Frames with a must-understand bit go out as version 3, the rest as
version 2; versions 2 and 3 are both read."""

from __future__ import annotations

import asyncio

import pytest

import corvid
from corvid import ErrorCode, i32
from corvid._frame import CANCEL, PONG, REQUEST, make_credit, make_ping, make_pong
from conftest import run
from fake_server import FakeServer, flagged, item, reply


@corvid.remote
def add(a: i32, b: i32) -> i32: ...
@corvid.remote
def count_to(n: i32) -> corvid.Stream[i32]: ...


def i32_body(v: int) -> bytes:
    return v.to_bytes(4, "little", signed=True)


def versioned(frame: bytes, version: int) -> bytes:
    return frame[:2] + bytes((version,)) + frame[3:]


def test_a_response_with_an_unknown_bit_fails_its_call_only() -> None:
    async def main() -> None:
        async with FakeServer() as srv:
            c = await corvid.connect(srv.endpoint, heartbeat_interval=None)
            calls = [c.send_request(add, i, 1) for i in range(6)]
            rids = [(await srv.frame()).rid for _ in calls]
            await srv.send(
                # version 3, as a must-understand bit says (0x01, trace, is known on requests
                # only: on a response it is unknown too)
                flagged(reply(rids[0], i32_body(1)), 0x06)
                + reply(rids[1], i32_body(2))
                # version 2 with a bit that version 2 said to send as 0: refused the same way
                + versioned(flagged(reply(rids[2], i32_body(3)), 0x0A), 2)
                # optional bits are ignored, in either version
                + flagged(reply(rids[3], i32_body(4)), 0xF0)
                + versioned(flagged(reply(rids[4], i32_body(5)), 0xA0), 3)
                + flagged(reply(rids[5], i32_body(6)), 0x01)
            )
            results = await asyncio.gather(*calls, return_exceptions=True)
            assert results[1] == 2 and results[3] == 4 and results[4] == 5
            for r, words in [
                (results[0], "unknown must-understand flag bit 0x02 (flags 0x06)"),
                (results[2], "unknown must-understand flag bit 0x02 (flags 0x0a)"),
                (results[5], "unknown must-understand flag bit 0x01 (flags 0x01)"),
            ]:
                assert isinstance(r, corvid.RpcError), r
                assert (r.code, r.message) == (ErrorCode.PROTOCOL_ERROR, words)
            # The connection goes on.
            assert not c.closed
            later = c.send_request(add, 2, 2)
            await srv.send(reply((await srv.frame()).rid, i32_body(4)))
            assert await later == 4
            await c.close()

    run(main())


def test_a_stream_frame_with_an_unknown_bit_fails_its_stream_only() -> None:
    async def main() -> None:
        async with FakeServer() as srv:
            c = await corvid.connect(srv.endpoint, heartbeat_interval=None)
            items: list[int] = []

            async def read_stream() -> None:
                async for x in c.stream(count_to, 3):
                    items.append(x)

            reader = asyncio.ensure_future(read_stream())
            request = await srv.frame()
            assert request.type == REQUEST
            await srv.send(item(request.rid, i32_body(1))
                           + flagged(item(request.rid, i32_body(2)), 0x08))
            with pytest.raises(corvid.RpcError) as e:
                await reader
            assert (e.value.code, e.value.message) == (
                ErrorCode.PROTOCOL_ERROR, "unknown must-understand flag bit 0x08 (flags 0x08)")
            assert items == [1]
            cancel = await srv.frame()  # the server's side of the stream is told to stop
            assert (cancel.type, cancel.rid) == (CANCEL, request.rid)
            # A credit with one ends the client's side of a stream the same way.
            call = c.send_request(add, 1, 1)
            up = c.open_stream(count_to, 1)
            f = await srv.frame()
            await srv.frame()  # the open stream's request
            await srv.send(flagged(make_credit(up.request_id, 100), 0x01))
            with pytest.raises(corvid.RpcError) as e:
                await up.__anext__()
            assert e.value.message == "unknown must-understand flag bit 0x01 (flags 0x01)"
            await srv.send(reply(f.rid, i32_body(2)))
            assert await call == 2
            assert not c.closed
            await c.close()

    run(main())


def test_a_ping_with_an_unknown_bit_is_not_answered() -> None:
    async def main() -> None:
        async with FakeServer() as srv:
            c = await corvid.connect(srv.endpoint, heartbeat_interval=None)
            await srv.send(flagged(make_ping(5), 0x04) + flagged(make_ping(6), 0x10))
            pong = await srv.frame()
            assert (pong.type, pong.rid, pong.version) == (PONG, 6, 2)
            await c.close()

    run(main())


def test_a_pong_with_an_unknown_bit_fails_connect() -> None:
    async def main() -> None:
        async with FakeServer() as srv:
            connecting = asyncio.ensure_future(
                corvid.connect(srv.endpoint, ask_server_reactors=True)
            )
            ping = await srv.frame()
            await srv.send(flagged(make_pong(ping.rid, 4), 0x02))
            with pytest.raises(corvid.RpcError) as e:
                await connecting
            assert (e.value.code, e.value.message) == (
                ErrorCode.PROTOCOL_ERROR, "unknown must-understand flag bit 0x02 (flags 0x02)")

    run(main())


def test_version_3_only_for_frames_with_a_must_understand_bit() -> None:
    async def main() -> None:
        async with FakeServer() as srv:
            c = await corvid.connect(srv.endpoint, heartbeat_interval=None)
            plain = c.send_request(add, 1, 2)
            with corvid.trace_scope("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"):
                traced = c.send_request(add, 3, 4)
            a, b = await srv.frame(), await srv.frame()
            assert (a.version, a.flags) == (2, 0)
            assert (b.version, b.flags) == (3, 0x01)
            assert b.body[25:] == i32_body(3) + i32_body(4)
            plain.cancel()
            cancel = await srv.frame()
            assert (cancel.type, cancel.version) == (CANCEL, 2)
            await srv.send(reply(b.rid, i32_body(7)))
            assert await traced == 7
            await c.close()

    run(main())


def test_versions_other_than_2_and_3_close_the_connection() -> None:
    async def main() -> None:
        async with FakeServer() as srv:
            c = await corvid.connect(srv.endpoint, heartbeat_interval=None)
            call = c.send_request(add, 1, 2)
            f = await srv.frame()
            await srv.send(versioned(reply(f.rid, i32_body(3)), 4))
            with pytest.raises(corvid.RpcError) as e:
                await call
            assert (e.value.code, e.value.message) == (
                ErrorCode.PROTOCOL_ERROR,
                "unsupported protocol version (this build speaks corvid protocol versions 2 and 3)",
            )
            assert await c.wait_closed() is e.value

    run(main())
