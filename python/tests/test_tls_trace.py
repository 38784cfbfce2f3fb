"""TLS and mutual TLS through the ssl module; W3C trace context in and out."""

from __future__ import annotations

import ssl
from typing import Any

import pytest

import corvid
from corvid import ErrorCode, TraceContext
from conftest import Server, run
import peer


def test_tls(fresh_server: Any) -> None:
    s = fresh_server("--tls")
    ca = s.certs[0]

    async def main() -> None:
        ctx = ssl.create_default_context(cafile=ca)
        async with await corvid.connect(s.endpoint, ssl=ctx) as c:
            assert await c.call(peer.echo, "secret") == "secret"
            assert [n async for n in c.stream(peer.count_to, 3)] == [1, 2, 3]
        # A server whose certificate we do not trust.
        with pytest.raises(corvid.RpcError) as e:
            await corvid.connect(s.endpoint, ssl=ssl.create_default_context())
        assert e.value.code == ErrorCode.CONNECT_FAILED
        # A plaintext client is told the server requires TLS.
        async with await corvid.connect(s.endpoint) as c:
            with pytest.raises(corvid.RpcError) as e:
                await c.call(peer.echo, "plain")
            assert e.value.code == ErrorCode.PROTOCOL_ERROR
            assert "requires TLS" in e.value.message

    run(main())


def test_mutual_tls(fresh_server: Any) -> None:
    s = fresh_server("--mtls")
    ca, cert, key = s.certs

    async def main() -> None:
        ctx = ssl.create_default_context(cafile=ca)
        ctx.load_cert_chain(cert, key)
        async with await corvid.connect(s.endpoint, ssl=ctx) as c:
            assert await c.call(peer.echo, "mutual") == "mutual"
        # Without a client certificate the server refuses us (at the handshake or the call).
        bare = ssl.create_default_context(cafile=ca)
        with pytest.raises(corvid.RpcError) as e:
            async with await corvid.connect(s.endpoint, ssl=bare) as c:
                await c.call(peer.echo, "no cert")
        assert e.value.code in (ErrorCode.CONNECT_FAILED, ErrorCode.CONNECTION_CLOSED)

    run(main())


W3C = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"


def test_traceparent_in_and_out(server: Server) -> None:
    async def main() -> None:
        async with await corvid.connect(server.endpoint) as c:
            assert await c.call(peer.trace_of) == ""  # untraced: no flag sent
            incoming = TraceContext.from_traceparent(W3C)  # e.g. from an HTTP request
            assert incoming.traceparent == W3C
            with corvid.trace_scope(W3C):
                server_span, parent = (await c.call(peer.trace_of)).split()
            version, trace_id, span_id, flags = server_span.split("-")
            assert (version, trace_id, flags) == ("00", incoming.trace_id.hex(), "01")
            assert parent == incoming.span_id.hex()  # the server's span is our child
            assert span_id != incoming.span_id.hex()
            mine = incoming.child()
            got = await c.call(peer.trace_of, trace=mine)
            assert got.split()[1] == mine.span_id.hex()
            # An all-zero context is invalid: sent untraced.
            zero = TraceContext(bytes(16), bytes(8), 1)
            assert await c.call(peer.trace_of, trace=zero) == ""
            with pytest.raises(ValueError):
                TraceContext.from_traceparent("00-" + "0" * 32 + "-00f067aa0ba902b7-01")

    run(main())
