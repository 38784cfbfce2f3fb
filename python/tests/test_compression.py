"""Per-message zstd (docs/protocol.md, "Compression"): against the C++ server, big calls and
stream items round-trip compressed both ways; against a fake server, the client asks for it
on every request, compresses only once the server said it accepts, and refuses a reply that
lies about its size; without the zstandard package it does not ask and works as before."""

from __future__ import annotations

import pytest

import corvid
from corvid import ErrorCode, i32
from corvid import _compression as cz
from corvid._frame import FLAG_ACCEPTS_COMPRESSED, FLAG_COMPRESSED, make_response
from conftest import Server, run
from fake_server import FakeServer, reply
import peer


@corvid.remote
def add(a: i32, b: i32) -> i32: ...
@corvid.remote
def echo(s: str) -> str: ...


def json_like(n: int) -> str:
    parts = []
    i = 0
    while sum(map(len, parts)) < n:
        parts.append(f'{{"id":{i},"name":"item","tags":["a","b"]}},')
        i += 1
    return "".join(parts)[:n]


def str_body(s: str) -> bytes:
    return corvid.encode(str, s)


def test_deflate_and_inflate_round_trip_and_refuse_lies() -> None:
    body, att = json_like(40000).encode(), json_like(5000).encode()
    packed = cz.deflate(body, att, 1)
    assert packed is not None and len(packed) < (len(body) + len(att)) // 4
    assert cz.inflate(memoryview(packed), 1 << 20) == (body, att)
    big = cz.deflate(b"z" * (1 << 20), b"", 1)
    assert big is not None
    liar = cz.HEAD.pack(1000, 0) + big[cz.HEAD_SIZE :]
    with pytest.raises(cz.CompressionError, match="inflates to more than its declared 1000 bytes"):
        cz.inflate(memoryview(liar), 1 << 22)
    with pytest.raises(cz.CompressionError, match="over max_frame_size 65536"):
        cz.inflate(memoryview(big), 65536)  # refused from its head
    small = cz.deflate(b"z" * 1000, b"", 1)
    assert small is not None
    short = cz.HEAD.pack(5000, 0) + small[cz.HEAD_SIZE :]
    with pytest.raises(cz.CompressionError, match="inflates to 1000 bytes, not its declared 5000"):
        cz.inflate(memoryview(short), 1 << 20)


def test_big_calls_and_stream_items_against_the_cpp_server(server: Server) -> None:
    async def main() -> None:
        async with await corvid.connect(server.endpoint, compression=True) as c:
            assert await c.call(peer.echo, "hi") == "hi"  # the reply says it accepts
            text = json_like(64 * 1024)
            assert await c.call(peer.echo, text) == text
            assert c._conn is not None and c._conn.compress_from == 4096
            blobs = [b async for b in c.stream(peer.blobs, 40 * 1024, 3)]
            assert blobs == [chr(ord("a") + i) * (40 * 1024) for i in range(3)]
            async with c.open_stream(peer.chat) as s:
                await s.write(text)
                assert await s.__anext__() == "re: " + text
                await s.done_writing()
                assert [r async for r in s] == []

    run(main())


def test_the_client_asks_and_compresses_only_once_the_server_accepts() -> None:
    async def main() -> None:
        async with FakeServer() as srv:
            c = await corvid.connect(srv.endpoint, heartbeat_interval=None, compression=True)
            text = json_like(20000)
            first = c.send_request(echo, text)
            f = await srv.frame()
            # Asked for, not yet compressed: the server has not said it accepts.
            assert f.flags == FLAG_ACCEPTS_COMPRESSED and len(f.payload) > 20000
            # A compressed reply that says the server accepts compressed requests.
            packed = cz.deflate(str_body(text), b"", 1)
            assert packed is not None
            head = bytearray(make_response(f.rid, len(packed)))
            head[2], head[4] = 3, FLAG_COMPRESSED | FLAG_ACCEPTS_COMPRESSED
            await srv.send(bytes(head) + packed)
            assert await first == text
            second = c.send_request(echo, text)
            f = await srv.frame()
            assert f.flags == FLAG_ACCEPTS_COMPRESSED | FLAG_COMPRESSED
            assert len(f.payload) < 5000
            assert cz.inflate(memoryview(f.payload), 1 << 20) == (str_body(text), b"")
            await srv.send(reply(f.rid, str_body("ok")))
            assert await second == "ok"
            await c.close()

    run(main())


def test_a_reply_that_lies_about_its_size_fails_its_call_only() -> None:
    async def main() -> None:
        async with FakeServer() as srv:
            c = await corvid.connect(srv.endpoint, heartbeat_interval=None, compression=True)
            lied, honest = c.send_request(echo, "x"), c.send_request(add, 1, 2)
            r1, r2 = (await srv.frame()).rid, (await srv.frame()).rid
            big = cz.deflate(str_body("z" * (1 << 20)), b"", 1)
            assert big is not None
            liar = cz.HEAD.pack(64, 0) + big[cz.HEAD_SIZE :]
            head = bytearray(make_response(r1, len(liar)))
            head[2], head[4] = 3, FLAG_COMPRESSED
            await srv.send(bytes(head) + liar + reply(r2, (3).to_bytes(4, "little")))
            with pytest.raises(corvid.RpcError) as e:
                await lied
            assert e.value.code == ErrorCode.PROTOCOL_ERROR
            assert "inflates to more than its declared 64 bytes" in e.value.message
            assert await honest == 3  # the connection goes on
            await c.close()

    run(main())


def test_without_zstandard_the_client_does_not_ask(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(cz, "zstd", None)
    assert not corvid.compression_available()

    async def main() -> None:
        async with FakeServer() as srv:
            c = await corvid.connect(srv.endpoint, heartbeat_interval=None, compression=True)
            assert not c.compression
            call = c.send_request(add, 1, 2)
            f = await srv.frame()
            assert f.flags == 0
            await srv.send(reply(f.rid, (3).to_bytes(4, "little")))
            assert await call == 3
            await c.close()

    run(main())


def test_a_method_or_a_call_may_say_no(server: Server) -> None:
    async def main() -> None:
        methods = corvid.MethodConfig().set("echo", corvid.MethodPolicy(compress=False))
        assert corvid.MethodConfig.parse(
            '{"methods": [{"name": "echo", "compress": false}]}'
        ).resolve("echo").compress is False
        with pytest.raises(ValueError, match='"compress" must be true or false'):
            corvid.MethodConfig.parse('{"methods": [{"name": "echo", "compress": 1}]}')
        async with await corvid.connect(
            server.endpoint, compression=True, methods=methods
        ) as c:
            assert await c.call(peer.echo, "hi") == "hi"
            conn = c._conn
            assert conn is not None
            text = json_like(64 * 1024)
            sent: list[int] = []
            write = conn.write

            def counting(*parts: bytes | bytearray) -> None:
                sent.append(sum(map(len, parts)))
                write(*parts)

            conn.write = counting  # type: ignore[method-assign]
            assert await c.call(peer.echo, text) == text  # the method says no
            assert await c.call(peer.echo, text, compress=True) == text  # the call says yes
            assert await c.call(peer.echo_blob, text.encode()) == text.encode()  # no entry
            assert await c.call(peer.echo_blob, text.encode(), compress=False) == text.encode()
            big, small, small2, big2 = sent
            assert big > len(text) and big2 > len(text)
            assert small < len(text) // 4 and small2 < len(text) // 4

    run(main())
