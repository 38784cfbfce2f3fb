"""Server, client and bidirectional streams against the C++ server, with credit flow control."""

from __future__ import annotations

from typing import Any

import pytest

import corvid
from corvid import ErrorCode
from conftest import Server, eventually, run
import peer


def test_server_stream(server: Server) -> None:
    async def main() -> None:
        async with await corvid.connect(server.endpoint) as c:
            assert [n async for n in c.stream(peer.count_to, 5)] == [1, 2, 3, 4, 5]
            assert [n async for n in c.stream(peer.count_to, 0)] == []

    run(main())


def test_server_stream_error_after_items(server: Server) -> None:
    async def main() -> None:
        async with await corvid.connect(server.endpoint) as c:
            got: list[int] = []
            with pytest.raises(corvid.RpcError) as e:
                async for n in c.stream(peer.fails_after, 3):
                    got.append(n)
            assert got == [0, 1, 2]
            assert e.value.code == ErrorCode.HANDLER_ERROR
            assert e.value.message == "producer broke"

    run(main())


@pytest.mark.parametrize("window", [4096, 262_144, 1 << 20])
def test_flow_control_over_many_windows(server: Server, window: int) -> None:
    # 8 MiB through windows of 4 KiB to 1 MiB: the server can only send it all if we grant
    # credit back as we read (and a window above the initial 256 KiB is granted up front).
    async def main() -> None:
        async with await corvid.connect(server.endpoint, stream_window=window) as c:
            count = 0
            async for blob in c.stream(peer.blobs, 8192, 1024):
                assert blob == chr(ord("a") + count % 26) * 8192
                count += 1
            assert count == 1024

    run(main())


def test_slow_reader_holds_the_server_back(server: Server) -> None:
    # The endless producer stops after one window while we do not read; then leaving the
    # loop cancels it on the server (its coroutine is destroyed).
    async def main() -> None:
        async with await corvid.connect(server.endpoint, stream_window=65536) as c:
            ends = await c.call(peer.endless_ends)
            before = await c.call(peer.endless_yields)
            s = c.stream(peer.endless, 1000)
            first = await s.__anext__()
            assert first == "x" * 1000
            # Yields stop within a window (about 65536 / 1032 items) plus a little.
            settled = -1
            for _ in range(200):
                now = await c.call(peer.endless_yields)
                if now == settled:
                    break
                settled = now
            # The server starts with 256 KiB of credit (protocol.md), whatever our window.
            assert settled - before <= 262_144 // 1032 + 4
            await s.aclose()
            await eventually(lambda: c.call(peer.endless_ends), ends + 1)

    run(main())


def test_client_stream(server: Server) -> None:
    async def main() -> None:
        async with await corvid.connect(server.endpoint) as c:
            up = c.open_stream(peer.upload)
            total = 0
            for i in range(2000):  # ~2 MiB: past the server's 256 KiB window many times
                chunk = "u" * (1000 + i % 7)
                total += len(chunk)
                await up.write(chunk)
            await up.done_writing()
            assert await up.result() == total

    run(main())


def test_bidirectional_stream(server: Server) -> None:
    async def main() -> None:
        async with await corvid.connect(server.endpoint) as c:
            async with c.open_stream(peer.chat) as s:
                replies = []
                for m in ["a", "b", "c"]:
                    await s.write(m)
                    replies.append(await s.__anext__())
                await s.done_writing()
                replies += [r async for r in s]
                assert replies == ["re: a", "re: b", "re: c"]
                assert await s.result() is None

    run(main())


def test_cancelled_stream(server: Server) -> None:
    async def main() -> None:
        async with await corvid.connect(server.endpoint) as c:
            up = c.open_stream(peer.upload)
            await up.write("x")
            up.cancel()
            with pytest.raises(corvid.RpcError) as e:
                await up.write("y")
            assert e.value.code == ErrorCode.CANCELLED
            with pytest.raises(corvid.RpcError) as e:
                await up.result()
            assert e.value.code == ErrorCode.CANCELLED
            assert await c.call(peer.echo, "open") == "open"

    run(main())


def test_stream_deadline_and_busy(fresh_server: Any) -> None:
    srv = fresh_server("--max-streams", "2")

    async def main() -> None:
        async with await corvid.connect(srv.endpoint, stream_window=4096) as c:
            with pytest.raises(corvid.RpcError) as e:
                async for _ in c.stream(peer.endless, 10, timeout=0.3):
                    pass
            assert e.value.code == ErrorCode.TIMEOUT
        async with await corvid.connect(srv.endpoint) as c:
            a = c.open_stream(peer.upload)
            b = c.open_stream(peer.upload)
            with pytest.raises(corvid.RpcError) as e:
                await c.open_stream(peer.upload).result()
            assert e.value.code == ErrorCode.SERVER_BUSY
            for s in (a, b):
                await s.write("x")
                await s.done_writing()
                assert await s.result() == 1

    run(main())
