"""Call metadata (docs/protocol.md, "Call metadata") against a fake server: what a call with
`metadata=` sends (flag 0x08, version 3, the block after the trace context), what a reply's
block gives back, the refusal of a bad or oversized block (that call only fails, with
PROTOCOL_ERROR), the checks on the caller's keys and values, and the credentials hook."""

from __future__ import annotations

import asyncio
import struct
from typing import Any

import pytest

import corvid
from corvid import ErrorCode, i32
from corvid import _metadata as md
from corvid._frame import make_error, make_response
import peer
from conftest import Server, run
from fake_server import FakeServer, flagged, reply

TRACEPARENT = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"


@corvid.remote
def add(a: i32, b: i32) -> i32: ...
@corvid.remote(name="ns::count_to")
def count_to(n: i32) -> corvid.Stream[i32]: ...
@corvid.remote
def upload(chunks: corvid.Stream[bytes]) -> i32: ...


def i32s(*v: int) -> bytes:
    return b"".join(x.to_bytes(4, "little", signed=True) for x in v)


def block(
    *entries: tuple[bytes, bytes], count: int | None = None, size: int | None = None
) -> bytes:
    """A metadata block as the wire has it; `count` and `size` may lie."""
    body = b"".join(bytes((len(k),)) + k + struct.pack("<I", len(v)) + v for k, v in entries)
    n = len(entries) if count is None else count
    return struct.pack("<IH", len(body) if size is None else size, n) + body


def md_reply(rid: int, blk: bytes, body: bytes, status: int = 0) -> bytes:
    payload = blk + body
    head = make_error(rid, status, len(payload)) if status else make_response(rid, len(payload))
    return flagged(head + payload, 0x08)


async def connected(srv: FakeServer, **config: Any) -> corvid.Client:
    return await corvid.connect(srv.endpoint, heartbeat_interval=None, **config)


# --- the block itself ---


def test_encode_and_decode_are_inverse_and_keep_order_and_repeats() -> None:
    pairs = md.normalize([("b", "1"), ("a", b"\x00\xff"), ("b", "2"), ("x.y-z_0", "")])
    assert pairs == [("b", b"1"), ("a", b"\x00\xff"), ("b", b"2"), ("x.y-z_0", b"")]
    wire = md.encode(pairs)
    assert wire == block((b"b", b"1"), (b"a", b"\x00\xff"), (b"b", b"2"), (b"x.y-z_0", b""))
    assert md.decode(wire + b"rest") == (pairs, len(wire))
    assert md.normalize({"k": "v", "j": b"w"}) == [("k", b"v"), ("j", b"w")]


@pytest.mark.parametrize(
    "bad",
    [
        [("", "v")],
        [("Tenant", "v")],
        [("a b", "v")],
        [("a:b", "v")],
        [("é", "v")],
        [("k" * 256, "v")],
        [(b"k", "v")],
        [("k", 5)],
        [("k", None)],
        [("k",)],
        ["kv"],
        {"UPPER": "v"},
    ],
)
def test_bad_keys_and_values_raise_value_error_and_nothing_is_sent(bad: Any) -> None:
    async def main() -> None:
        async with FakeServer() as srv:
            c = await connected(srv)
            with pytest.raises(ValueError):
                await c.call(add, 1, 2, metadata=bad)
            with pytest.raises(ValueError):
                c.send_request(add, 1, 2, metadata=bad)
            with pytest.raises(ValueError):
                c.open_stream(upload, metadata=bad)
            # Nothing went out for them: the next frame the server reads is this call's.
            ok = c.send_request(add, 1, 2, metadata=[("k" * 255, "v")])
            f = await srv.frame()
            assert f.flags == 0x08 and f.rid == 0x0000000100000000
            await srv.send(reply(f.rid, i32s(3)))
            assert await ok == 3
            await c.close()

    run(main())


# --- requests ---


def test_a_call_with_metadata_sends_its_block_after_the_trace_context() -> None:
    async def main() -> None:
        async with FakeServer() as srv:
            c = await connected(srv)
            plain = c.send_request(add, 1, 2)
            pairs = c.send_request(add, 3, 4, metadata=[("tenant", "acme"), ("id", b"\x01")])
            with corvid.trace_scope(TRACEPARENT):
                traced = c.send_request(add, 5, 6, metadata={"tenant": "acme"})
            empty = c.send_request(add, 7, 8, metadata=[])
            a, b, t, e = [await srv.frame() for _ in range(4)]
            assert (a.version, a.flags, a.body) == (2, 0, i32s(1, 2))
            assert (b.version, b.flags) == (3, 0x08)
            assert b.body == block((b"tenant", b"acme"), (b"id", b"\x01")) + i32s(3, 4)
            assert (t.version, t.flags) == (3, 0x09)
            assert t.body[25:] == block((b"tenant", b"acme")) + i32s(5, 6)
            assert (e.version, e.flags, e.body) == (2, 0, i32s(7, 8))  # no entries: no flag
            for f in (a, b, t, e):
                await srv.send(reply(f.rid, i32s(0)))
            assert await asyncio.gather(plain, pairs, traced, empty) == [0, 0, 0, 0]
            await c.close()

    run(main())


def test_stream_opens_carry_metadata() -> None:
    async def main() -> None:
        async with FakeServer() as srv:
            c = await connected(srv)
            up = c.open_stream(upload, metadata={"k": "up"})
            f = await srv.frame()
            assert (f.flags, f.body) == (0x08, block((b"k", b"up")))

            async def read() -> list[int]:
                return [x async for x in c.stream(count_to, 2, metadata={"k": "down"})]

            down = asyncio.ensure_future(read())
            g = await srv.frame()
            assert (g.flags, g.body) == (0x08, block((b"k", b"down")) + i32s(2))
            await srv.send(md_reply(g.rid, block((b"done", b"1")), b""))
            assert await down == []
            await srv.send(md_reply(f.rid, block((b"total", b"0")), i32s(0)))
            assert await up.result() == 0
            assert up.metadata == [("total", b"0")]
            await c.close()

    run(main())


# --- replies ---


def test_reply_metadata_is_read_with_the_value_and_with_an_error() -> None:
    async def main() -> None:
        async with FakeServer() as srv:
            c = await connected(srv)
            r = asyncio.ensure_future(c.call_reply(add, 1, 2))
            f1 = await srv.frame()
            v = c.send_request(add, 1, 2)
            err = c.send_request(add, 1, 2)
            f2, f3 = await srv.frame(), await srv.frame()
            plain = asyncio.ensure_future(c.call_reply(add, 1, 2))
            f4 = await srv.frame()
            served = block((b"served-by", b"a1"), (b"served-by", b"a2"))
            await srv.send(md_reply(f1.rid, served, i32s(3)))
            await srv.send(md_reply(f2.rid, served, i32s(3)))
            await srv.send(
                md_reply(f3.rid, block((b"retry-after", b"5")), b"\x04busy", status=17)
            )
            await srv.send(reply(f4.rid, i32s(3)))
            got = await r
            assert (got.value, got.attachment) == (3, b"")
            assert got.metadata == [("served-by", b"a1"), ("served-by", b"a2")]
            assert "metadata=" in repr(got)
            assert await v == 3
            with pytest.raises(corvid.RpcError) as e:
                await err
            assert (e.value.code, e.value.message) == (ErrorCode.RESOURCE_EXHAUSTED, "busy")
            assert e.value.metadata == [("retry-after", b"5")]
            assert (await plain).metadata == []
            await c.close()

    run(main())


# Each is refused alone: (block, what the error says).
BAD_BLOCKS = [
    (block(*[(b"k", b"")] * 65), "reply metadata of 65 entries exceeds the limit of 64"),
    (block(size=8187), "reply metadata of 8193 bytes exceeds the limit of 8192"),
    (b"\x00\x00\x00", "a metadata block of 3 bytes is shorter than its head"),
    (block(size=100), "declares 100 bytes of entries; the body has 0"),
    (block((b"k", b"v"), count=2), "metadata entries end before the 2 the block counts"),
    (block((b"k", b"v"), (b"j", b"w"), count=1), "take 7 of the 14 bytes the block declares"),
    (block((b"K", b"v")), "metadata key b'K' is not a lowercase token"),
    (block((b"", b"v")), "a metadata entry is cut off"),
    # The value's length says 4; the block's entry bytes hold 2 of them.
    (
        struct.pack("<IH", 8, 1) + b"\x01k" + struct.pack("<I", 4) + b"vv",
        "a metadata entry is cut off",
    ),
]


@pytest.mark.parametrize("bad, words", BAD_BLOCKS)
def test_a_bad_reply_block_fails_its_call_only(bad: bytes, words: str) -> None:
    async def main() -> None:
        async with FakeServer() as srv:
            c = await connected(srv)
            calls = [c.send_request(add, i, 1) for i in range(3)]
            rids = [(await srv.frame()).rid for _ in calls]
            await srv.send(
                reply(rids[0], i32s(1))
                + md_reply(rids[1], bad, b"")  # the block is all of the body
                + md_reply(rids[2], block((b"k", b"v")), i32s(3))
            )
            results = await asyncio.gather(*calls, return_exceptions=True)
            assert results[0] == 1 and results[2] == 3
            e = results[1]
            assert isinstance(e, corvid.RpcError), e
            assert e.code == ErrorCode.PROTOCOL_ERROR
            assert words in e.message, e.message
            assert not c.closed
            later = c.send_request(add, 2, 2)
            await srv.send(reply((await srv.frame()).rid, i32s(4)))
            assert await later == 4
            await c.close()

    run(main())


def test_the_limits_are_the_clients_to_set_and_a_bad_stream_reply_ends_its_stream() -> None:
    async def main() -> None:
        async with FakeServer() as srv:
            c = await connected(srv, max_metadata_entries=1, max_metadata_bytes=20)
            one = c.send_request(add, 1, 1)
            two = c.send_request(add, 1, 1)
            big = c.send_request(add, 1, 1)
            up = c.open_stream(upload)
            f1, f2, f3, f4 = [await srv.frame() for _ in range(4)]
            await srv.send(md_reply(f1.rid, block((b"a", b"1")), i32s(2)))
            await srv.send(md_reply(f2.rid, block((b"a", b"1"), (b"b", b"2")), i32s(2)))
            await srv.send(md_reply(f3.rid, block((b"a", b"x" * 9)), i32s(2)))
            await srv.send(md_reply(f4.rid, block((b"a", b"1"), (b"b", b"2")), i32s(0)))
            assert await one == 2
            for fut, words in [
                (two, "reply metadata of 2 entries exceeds the limit of 1"),
                (big, "reply metadata of 21 bytes exceeds the limit of 20"),
            ]:
                with pytest.raises(corvid.RpcError) as e:
                    await fut
                assert (e.value.code, e.value.message) == (ErrorCode.PROTOCOL_ERROR, words)
            with pytest.raises(corvid.RpcError) as e:
                await up.result()
            assert e.value.code == ErrorCode.PROTOCOL_ERROR
            assert not c.closed
            await c.close()

    run(main())


# --- the credentials hook ---


def test_a_synchronous_credentials_hook_adds_to_every_call() -> None:
    seen: list[str] = []

    def creds(name: str) -> dict[str, str]:
        seen.append(name)
        return {"authorization": f"Bearer t{len(seen)}"}

    async def main() -> None:
        async with FakeServer() as srv:
            c = await connected(srv, credentials=creds)
            a = asyncio.ensure_future(c.call(add, 1, 2, metadata={"tenant": "acme"}))
            fa = await srv.frame()
            b = c.send_request(add, 1, 2)
            s = c.open_stream(upload)
            fb, fs = await srv.frame(), await srv.frame()
            # The call's own metadata first, then the hook's.
            assert fa.body == block((b"tenant", b"acme"), (b"authorization", b"Bearer t1")) + i32s(
                1, 2
            )
            assert fb.body == block((b"authorization", b"Bearer t2")) + i32s(1, 2)
            assert fs.body == block((b"authorization", b"Bearer t3"))
            assert seen == ["add", "add", "upload"]
            for f in (fa, fb, fs):
                await srv.send(reply(f.rid, i32s(3)))
            assert await a == 3 and await b == 3 and await s.result() == 3
            await c.close()

    run(main())


def test_an_asynchronous_credentials_hook_is_awaited() -> None:
    async def creds(name: str) -> list[tuple[str, bytes]]:
        await asyncio.sleep(0)
        return [("authorization", b"Bearer async")]

    async def main() -> None:
        async with FakeServer() as srv:
            c = await connected(srv, credentials=creds)
            want = block((b"authorization", b"Bearer async"))
            a = asyncio.ensure_future(c.call_reply(add, 1, 2))
            fa = await srv.frame()
            b = c.send_request(add, 1, 2)  # sent once the hook returned
            fb = await srv.frame()
            assert fa.body == want + i32s(1, 2) and fb.body == want + i32s(1, 2)

            async def read() -> list[int]:
                return [x async for x in c.stream(count_to, 1)]

            down = asyncio.ensure_future(read())
            fd = await srv.frame()
            assert fd.body == want + i32s(1)
            with pytest.raises(corvid.RpcError) as e:
                c.open_stream(upload)
            assert e.value.code == ErrorCode.INVALID_ARGUMENT
            assert "open_stream_async" in e.value.message
            up = await c.open_stream_async(upload)
            fu = await srv.frame()
            assert fu.body == want
            for f in (fa, fb, fu):
                await srv.send(reply(f.rid, i32s(3)))
            await srv.send(reply(fd.rid, b""))
            assert (await a).value == 3 and await b == 3 and await up.result() == 3
            assert await down == []
            await c.close()

    run(main())


def test_a_failing_credentials_hook_fails_that_call_only() -> None:
    calls = 0

    def flaky(name: str) -> Any:
        nonlocal calls
        calls += 1
        if calls == 1:
            raise KeyError("no token")
        if calls == 2:
            raise corvid.RpcError(ErrorCode.UNAUTHENTICATED, "token expired")
        if calls == 3:
            return {"Bad Key": "v"}
        return {"authorization": "Bearer ok"}

    async def async_flaky(name: str) -> Any:
        raise RuntimeError("idp down")

    async def main() -> None:
        async with FakeServer() as srv:
            c = await connected(srv, credentials=flaky)
            for code, words in [
                (ErrorCode.INTERNAL, "add: the credentials hook raised KeyError('no token')"),
                (ErrorCode.UNAUTHENTICATED, "token expired"),
                (ErrorCode.INTERNAL, "add: the credentials hook returned bad metadata"),
            ]:
                with pytest.raises(corvid.RpcError) as e:
                    await c.call(add, 1, 2)
                assert e.value.code == code and e.value.message.startswith(words)
            ok = asyncio.ensure_future(c.call(add, 1, 2))
            f = await srv.frame()  # the first frame sent: the failed calls sent nothing
            assert f.body == block((b"authorization", b"Bearer ok")) + i32s(1, 2)
            await srv.send(reply(f.rid, i32s(3)))
            assert await ok == 3

            c.credentials = async_flaky
            for attempt in (c.call(add, 1, 2), c.send_request(add, 1, 2)):
                with pytest.raises(corvid.RpcError) as e:
                    await attempt
                assert (e.value.code, e.value.message) == (
                    ErrorCode.INTERNAL, "add: the credentials hook raised RuntimeError('idp down')")
            assert not c.closed
            await c.close()

    run(main())


def test_the_new_error_codes() -> None:
    assert [
        ErrorCode.UNAUTHENTICATED,
        ErrorCode.PERMISSION_DENIED,
        ErrorCode.RESOURCE_EXHAUSTED,
        ErrorCode.INTERNAL,
    ] == [15, 16, 17, 18]
    assert corvid.RpcError(16, "no").code is ErrorCode.PERMISSION_DENIED
    assert str(corvid.RpcError(18, "boom")) == "internal: boom"
    assert corvid.RpcError(19, "").code == 19


# --- against the C++ server (tests/python/python_peer_server.cpp) ---


def test_metadata_both_ways_with_the_cpp_server(server: Server) -> None:
    async def main() -> None:
        async with await corvid.connect(server.endpoint) as c:
            got = await c.call_reply(
                peer.metadata_of,
                metadata=[("tenant", "acme"), ("bin", b"\x00\x01"), ("tenant", "b")],
            )
            assert got.value == ["tenant=acme", "bin=\x00\x01", "tenant=b"]
            assert got.metadata == [
                ("echo-tenant", b"acme"),
                ("echo-bin", b"\x00\x01"),
                ("echo-tenant", b"b"),
                ("served-by", b"peer"),
            ]
            with corvid.trace_scope(TRACEPARENT):
                traced = await c.call_reply(peer.metadata_of, metadata={"k": "v"})
            assert traced.value == ["k=v"]
            assert (await c.call_reply(peer.metadata_of)).value == []
            # A plain call() of a handler that replies with metadata: the value, as ever.
            assert await c.call(peer.metadata_of) == []

    run(main())


def test_the_cpp_servers_refusals_with_the_new_codes(fresh_server: Any) -> None:
    srv = fresh_server("--max-metadata-entries", "2")
    token = {"authorization": "Bearer let-me-in"}

    async def main() -> None:
        async with await corvid.connect(srv.endpoint) as c:
            for md_arg, code, words in [
                (None, ErrorCode.UNAUTHENTICATED, "a bearer token is required"),
                ({"authorization": "Bearer nope"}, ErrorCode.UNAUTHENTICATED, "a bearer token"),
                ({**token, "role": "guest"}, ErrorCode.PERMISSION_DENIED,
                 "guests may not call guarded_echo"),
                ([("a", "1"), ("b", "2"), ("c", "3")], ErrorCode.RESOURCE_EXHAUSTED,
                 "call metadata of 3 entries exceeds the limit of 2"),
            ]:
                with pytest.raises(corvid.RpcError) as e:
                    await c.call(peer.guarded_echo, "x", metadata=md_arg)
                assert e.value.code == code and words in e.value.message, e.value
            assert await c.call(peer.guarded_echo, "x", metadata=token) == "x"
            # A stream's open carries its metadata to the interceptor too.
            with pytest.raises(corvid.RpcError) as e:
                async for _ in c.stream(peer.guarded_count, 2):
                    pass
            assert e.value.code == ErrorCode.UNAUTHENTICATED
            assert [x async for x in c.stream(peer.guarded_count, 2, metadata=token)] == [1, 2]
            assert not c.closed

        # A bearer token provider as the credentials hook: every call carries it.
        async with await corvid.connect(srv.endpoint, credentials=lambda name: token) as c:
            assert await c.call(peer.guarded_echo, "y") == "y"
            assert [x async for x in c.stream(peer.guarded_count, 1)] == [1]

    run(main())
