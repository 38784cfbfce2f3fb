"""Every error a call can end with, from the real server or the client itself."""

from __future__ import annotations

import asyncio
import signal
from typing import Any

import pytest

import corvid
from corvid import ErrorCode, i32
from conftest import Server, eventually, run
import peer


@corvid.remote
def secret(n: i32) -> i32: ...


@corvid.remote(name="echo")
def echo_as_int(n: i32) -> i32: ...  # the server's echo takes a string


@corvid.remote(name="echo", signature=0)  # not stated: the server decodes, and fails
def echo_unchecked(n: corvid.u8) -> str: ...


async def code_of(aw: Any) -> ErrorCode | int:
    with pytest.raises(corvid.RpcError) as e:
        await aw
    return e.value.code


def test_server_errors_leave_the_connection_open(server: Server) -> None:
    async def main() -> None:
        async with await corvid.connect(server.endpoint) as c:
            with pytest.raises(corvid.RpcError) as e:
                await c.call(secret, 1)
            assert e.value.code == ErrorCode.FUNCTION_NOT_FOUND
            assert f"{corvid.fnv1a32('secret'):#010x}" in e.value.message
            with pytest.raises(corvid.RpcError) as e:
                await c.call(echo_as_int, 1)
            assert e.value.code == ErrorCode.SIGNATURE_MISMATCH
            assert f"{echo_as_int.signature:#06x}" in e.value.message
            assert await code_of(c.call(echo_unchecked, 200)) == ErrorCode.BAD_REQUEST
            with pytest.raises(corvid.RpcError) as e:
                await c.call(peer.divide, 1, 0)
            assert e.value.code == ErrorCode.HANDLER_ERROR
            assert e.value.message == "division by zero"
            assert await c.call(peer.divide, 7, 2) == 3
            assert not c.closed

    run(main())


def test_client_side_errors(server: Server) -> None:
    async def main() -> None:
        with pytest.raises(corvid.RpcError) as e:
            await corvid.connect("no-port-here")
        assert e.value.code == ErrorCode.INVALID_ARGUMENT
        # A port nobody listens on: take one from a closed listener.
        probe = await asyncio.start_server(lambda r, w: None, "127.0.0.1", 0)
        port = probe.sockets[0].getsockname()[1]
        probe.close()
        await probe.wait_closed()
        assert await code_of(corvid.connect(f"127.0.0.1:{port}")) == ErrorCode.CONNECT_FAILED
        async with await corvid.connect(server.endpoint, max_in_flight=1) as c:
            first = c.send_request(peer.nap, 50)
            with pytest.raises(corvid.RpcError) as e:
                c.send_request(peer.echo, "second")
            assert e.value.code == ErrorCode.CLIENT_BUSY
            assert await first is True
        async with await corvid.connect(server.endpoint) as c:
            with pytest.raises(corvid.RpcError) as e:
                c.send_request(peer.add, "1", 2)  # type: ignore[arg-type]
            assert e.value.code == ErrorCode.INVALID_ARGUMENT
            with pytest.raises(corvid.RpcError) as e:
                c.send_request(peer.add, 2**31, 2)
            assert e.value.code == ErrorCode.INVALID_ARGUMENT
        async with await corvid.connect(server.endpoint, max_frame_size=1000) as c:
            with pytest.raises(corvid.RpcError) as e:
                c.send_request(peer.echo, "x" * 1000)
            assert e.value.code == ErrorCode.MESSAGE_TOO_LARGE
            assert await c.call(peer.echo, "x" * 900) == "x" * 900
            # A reply over our limit: the stream is broken for us.
            with pytest.raises(corvid.RpcError) as e:
                await c.call(peer.repeat, "y" * 100, 20)
            assert e.value.code == ErrorCode.PROTOCOL_ERROR
            assert c.closed

    run(main())


def test_server_limit_message_too_large(fresh_server: Any) -> None:
    s = fresh_server("--max-frame", "4096")

    async def main() -> None:
        async with await corvid.connect(s.endpoint) as c:
            other = c.send_request(peer.nap, 200)
            with pytest.raises(corvid.RpcError) as e:
                await c.call(peer.echo, "z" * 5000)
            assert e.value.code == ErrorCode.MESSAGE_TOO_LARGE
            # The server closes once the calls already started are answered.
            assert await other is True
            err = await c.wait_closed()
            assert err is not None and err.code == ErrorCode.CONNECTION_CLOSED

    run(main())


def test_server_killed_mid_call(fresh_server: Any) -> None:
    s = fresh_server()

    async def main() -> None:
        async with await corvid.connect(s.endpoint) as c:
            pending = [c.send_request(peer.nap, 30_000) for _ in range(3)]
            await eventually(lambda: c.call(peer.naps_running), 3)
            s.proc.send_signal(signal.SIGKILL)
            for p in pending:
                assert await code_of(p) == ErrorCode.CONNECTION_CLOSED
            assert await code_of(c.call(peer.echo, "after")) == ErrorCode.CONNECTION_CLOSED

    run(main())


def test_unassigned_status_values_are_failures() -> None:
    e = corvid.RpcError(200, "from the future")
    assert e.code == 200
    assert corvid.RpcError(3, "").code is ErrorCode.FUNCTION_NOT_FOUND
