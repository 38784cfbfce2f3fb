"""Calls against the real C++ server: every codec type both ways, computed results, struct
evolution, enums, attachments, qualified names, pipelining, deadlines and cancellation."""

from __future__ import annotations

import asyncio
import math
import struct
from typing import Any

import pytest

import corvid
from conftest import SLOWDOWN, Server, eventually, run
import peer

CASES: list[tuple[Any, Any]] = [
    (peer.echo_bool, True),
    (peer.echo_bool, False),
    (peer.echo_i8, -128),
    (peer.echo_i8, 127),
    (peer.echo_u8, 255),
    (peer.echo_i16, -32768),
    (peer.echo_u16, 65535),
    (peer.echo_i32, -(2**31)),
    (peer.echo_i32, 2**31 - 1),
    (peer.echo_u32, 2**32 - 1),
    (peer.echo_i64, -(2**63)),
    (peer.echo_u64, 2**64 - 1),
    (peer.echo_f32, 1.5),
    (peer.echo_f32, -0.0),
    (peer.echo_f64, -2.5e300),
    (peer.echo_f64, math.inf),
    (peer.echo, ""),
    (peer.echo, "h\u00e9llo \U0001f426"),
    (peer.echo, "x" * 100_000),
    (peer.echo_blob, bytes(range(256))),
    (peer.echo_list, [1, -2, 2**31 - 1]),
    (peer.echo_list, []),
    (peer.echo_strings, ["a", "", "\u00e9" * 200]),
    (peer.echo_bools, [True, False, True]),
    (peer.echo_map, {"b": -1, "a": 2**62, "": 0}),
    (peer.echo_set, {3, 1, 65535}),
    (peer.echo_opt, None),
    (peer.echo_opt, 5),
    (peer.echo_tuple, (7, "ab", True)),
    (peer.echo_variant, corvid.Monostate()),
    (peer.echo_variant, 7),
    (peer.echo_variant, "x"),
    (peer.echo_array, [1, -1, 2]),
    (peer.echo_color, peer.color.green),
    (peer.echo_shape, peer.shape.square),
    (peer.shift, peer.point(1, 0.5, "p", [2])),
    (peer.scale3, peer.point3f(1.0, 2.0, 0.5)),
    (peer.echo_everything, peer.SAMPLE),
]


def test_every_codec_type_round_trips_through_cpp(server: Server) -> None:
    async def main() -> None:
        async with await corvid.connect(server.endpoint) as c:
            for f, value in CASES:
                if f is peer.shift:
                    assert await c.call(f, value, 3) == peer.point(4, 0.5, "p", [2, 3])
                elif f is peer.scale3:
                    assert await c.call(f, value, 2.0) == peer.point3f(2.0, 4.0, 1.0)
                else:
                    got = await c.call(f, value)
                    assert got == value, f.name
                    assert type(got) is type(value), f.name

    run(main())


def test_nan_payload_and_f32_rounding(server: Server) -> None:
    async def main() -> None:
        async with await corvid.connect(server.endpoint) as c:
            nan = struct.unpack("<d", struct.pack("<Q", 0x7FF8000000000123))[0]
            got = await c.call(peer.echo_f64, nan)
            assert struct.pack("<d", got) == struct.pack("<d", nan)  # payload kept
            assert await c.call(peer.echo_f32, 0.1) == struct.unpack("<f", struct.pack("<f", 0.1))[0]

    run(main())


def test_cpp_computes_on_what_python_encoded(server: Server) -> None:
    async def main() -> None:
        async with await corvid.connect(server.endpoint) as c:
            assert await c.call(peer.add, 1, 2) == 3
            assert await c.call(peer.sum_list, [2**31 - 1] * 4) == 4 * (2**31 - 1)
            assert await c.call(peer.describe_variant, corvid.Monostate()) == "none"
            assert await c.call(peer.describe_variant, -4) == "int -4"
            assert await c.call(peer.describe_variant, "s") == "string s"
            assert await c.call(peer.describe_variant, corvid.Alt(2, "7")) == "string 7"
            assert await c.call(peer.utf8_len, "h\u00e9") == "3"
            assert await c.call(peer.shape_code, peer.shape.square) == 1
            assert await c.call(peer.twice, 21) == 42  # a qualified name: ns::twice
            assert await c.call(peer.check_sample, peer.SAMPLE) == "ok"
            assert await c.call(peer.make_sample) == peer.SAMPLE

    run(main())


def test_struct_evolution_with_a_newer_server(server: Server) -> None:
    async def main() -> None:
        async with await corvid.connect(server.endpoint) as c:
            # The server's user has two more fields: it defaults what we did not send ...
            assert await c.call(peer.user_age, peer.user(7, "al")) == 18
            # ... and we skip what we do not know.
            assert await c.call(peer.get_user, 7) == peer.user(7, "al")

    run(main())


def test_enums_open_and_closed(server: Server) -> None:
    @corvid.remote(name="echo_color", signature=0)
    def echo_raw_color(c: corvid.u8) -> peer.color: ...

    async def main() -> None:
        async with await corvid.connect(server.endpoint) as c:
            # Open enum: a value with no enumerator arrives as its int.
            assert await c.call(echo_raw_color, 9) == 9
            assert await c.call(echo_raw_color, 2) is peer.color.green
            # Closed enum: refused, as an undecodable reply.
            with pytest.raises(corvid.RpcError) as e:
                await c.call(peer.raw_shape_as_shape, 2)
            assert e.value.code == corvid.ErrorCode.PROTOCOL_ERROR
            assert "unknown_alternative" in str(e.value)

    run(main())


def test_attachments_both_ways(server: Server) -> None:
    async def main() -> None:
        async with await corvid.connect(server.endpoint) as c:
            r = await c.call_reply(peer.attach, "k:", attachment=b"\xde\xad\xbe\xef")
            assert r.value == 4
            assert r.attachment == b"k:\xef\xbe\xad\xde"
            assert await c.call(peer.attach, "k", attachment=b"abc") == 3
            r = await c.call_reply(peer.attach, "")
            assert (r.value, r.attachment) == (0, b"")

    run(main())


def test_pipelined_calls_match_their_replies(server: Server) -> None:
    async def main() -> None:
        async with await corvid.connect(server.endpoint) as c:
            pending = [c.send_request(peer.add, i, i) for i in range(10_000)]
            assert await asyncio.gather(*pending) == [2 * i for i in range(10_000)]
            # Replies out of order: a slow call does not hold back later ones.
            slow = c.send_request(peer.nap, int(300 * SLOWDOWN))
            fast = c.send_request(peer.echo, "fast")
            done, _ = await asyncio.wait([slow, fast], return_when=asyncio.FIRST_COMPLETED)
            assert done == {fast}
            assert await slow is True

    run(main())


def test_deadline_travels_with_the_request(server: Server) -> None:
    async def main() -> None:
        async with await corvid.connect(server.endpoint) as c:
            left = await c.call(peer.deadline_ms, timeout=5)
            assert 0 < left <= 5000
            assert await c.call(peer.deadline_ms) == -1
            async with await corvid.connect(server.endpoint, request_timeout=2.0) as c2:
                assert 0 < await c2.call(peer.deadline_ms) <= 2000

    run(main())


def test_timeout_ends_the_call_and_cancels_it_on_the_server(server: Server) -> None:
    async def main() -> None:
        async with await corvid.connect(server.endpoint) as c:
            before = await c.call(peer.naps_cancelled)
            with pytest.raises(corvid.RpcError) as e:
                await c.call(peer.nap, 30_000, timeout=0.2)
            assert e.value.code == corvid.ErrorCode.TIMEOUT
            await eventually(lambda: c.call(peer.naps_cancelled), before + 1)
            assert await c.call(peer.echo, "still open") == "still open"

    run(main())


def test_a_call_without_a_timeout_takes_its_methods(server: Server) -> None:
    async def main() -> None:
        methods = corvid.MethodConfig.parse(
            '{"methods": [{"name": "nap", "timeout_ms": 100},'
            ' {"name": "*", "timeout_ms": 3000}]}'
        )
        async with await corvid.connect(
            server.endpoint, request_timeout=600.0, methods=methods
        ) as c:
            before = await c.call(peer.naps_cancelled)
            with pytest.raises(corvid.RpcError) as e:
                await c.call(peer.nap, 30_000)
            assert e.value.code == corvid.ErrorCode.TIMEOUT
            await eventually(lambda: c.call(peer.naps_cancelled), before + 1)
            # "*"'s deadline travels with the request; one given with the call wins.
            assert 0 < await c.call(peer.deadline_ms) <= 3000
            assert await c.call(peer.deadline_ms, timeout=None) == -1
            assert await c.call(peer.nap, 1, timeout=30.0) is True

    run(main())


def test_cancelling_the_task_sends_the_cancel_frame(server: Server) -> None:
    async def main() -> None:
        async with await corvid.connect(server.endpoint) as c:
            before = await c.call(peer.naps_cancelled)
            running = await c.call(peer.naps_running)
            task = asyncio.create_task(c.call(peer.nap, 30_000))
            await eventually(lambda: c.call(peer.naps_running), running + 1)
            task.cancel()
            with pytest.raises(asyncio.CancelledError):
                await task
            await eventually(lambda: c.call(peer.naps_cancelled), before + 1)
            # A pipelined future cancelled the same way.
            fut = c.send_request(peer.nap, 30_000)
            await eventually(lambda: c.call(peer.naps_running), running + 1)
            fut.cancel()
            await eventually(lambda: c.call(peer.naps_cancelled), before + 2)

    run(main())


def test_unix_socket(fresh_server: Any, tmp_path: Any) -> None:
    path = str(tmp_path / "peer.sock")
    fresh_server("--unix", path)

    async def main() -> None:
        async with await corvid.connect(f"unix:{path}") as c:
            assert await c.call(peer.echo, "over unix") == "over unix"

    run(main())


def test_server_reactor_count(server: Server) -> None:
    async def main() -> None:
        async with await corvid.connect(server.endpoint, ask_server_reactors=True) as c:
            assert c.server_reactors == 1  # python_peer_server's io_threads
            assert await c.call(peer.echo, "after the ping") == "after the ping"
        async with await corvid.connect(server.endpoint) as c:
            assert c.server_reactors is None

    run(main())
