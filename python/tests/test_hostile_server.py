"""What the client writes stays bounded whatever the server does: a server that reads nothing
(and floods pings, whose arrival alone would keep a heartbeat content) cannot make the client
buffer without end, and is closed once nothing it was sent moves for heartbeat_timeout; a slow
server that does read is not closed. A frame at the size limit is copied once each way."""

from __future__ import annotations

import asyncio
import subprocess
import sys
import tracemalloc

import pytest

import corvid
from corvid import ErrorCode, u32
from corvid._frame import DEFAULT_MAX_FRAME_SIZE, PING, REQUEST, make_ping, make_pong
from conftest import SLOWDOWN, run
from fake_server import FakeServer, reply

LIMIT = 256 * 1024
# What the write buffer may hold over the limit: the frame that crossed it, and what asyncio's
# transport holds of the piece it was last handed (corvid._outgoing.CHUNK).
SLACK = 256 * 1024 + 64 * 1024


@corvid.remote
def size_of(b: bytes) -> u32: ...
@corvid.remote
def echo_blob(b: bytes) -> bytes: ...


async def watch_bounded(c: corvid.Client, bound: int) -> None:
    """Checks the client's write buffer against `bound` until the connection ends."""
    while not c.closed:
        assert c.write_buffer_size <= bound, f"{c.write_buffer_size} bytes unsent"
        await asyncio.sleep(0.002)


async def flood_pings(w: asyncio.StreamWriter) -> None:
    burst = make_ping(7) * 2048
    try:
        while True:
            w.write(burst)
            await w.drain()
    except ConnectionError:
        pass


def test_a_server_that_reads_nothing_and_floods_pings_is_closed() -> None:
    async def main() -> None:
        async with FakeServer() as srv:
            c = await corvid.connect(
                srv.endpoint,
                heartbeat_interval=0.05,
                heartbeat_timeout=0.5 * SLOWDOWN,
                write_buffer_limit=LIMIT,
            )
            pending = c.send_request(size_of, b"x")
            flood = asyncio.ensure_future(flood_pings(await srv.writer()))
            watch = asyncio.ensure_future(watch_bounded(c, LIMIT + SLACK))
            closed = asyncio.ensure_future(c.wait_closed())  # (the "it hung" bound: run()'s)
            await asyncio.wait({watch, closed}, return_when=asyncio.FIRST_COMPLETED)
            await watch  # raises if the bound was passed
            err = await closed
            flood.cancel()
            assert err is not None and err.code == ErrorCode.CONNECTION_CLOSED
            assert "the server read nothing of what was sent" in err.message, err.message
            with pytest.raises(corvid.RpcError) as e:
                await pending
            assert e.value is err

    run(main())


def test_callers_wait_while_the_server_reads_nothing() -> None:
    # 256 callers of 64 KiB each: more than the socket buffers take. Over the limit, call()
    # waits before queueing its frame; when the connection closes, the waiting callers and the
    # sent calls all fail with the reason. (No pings: the server's silence is not the point.)
    async def main() -> None:
        async with FakeServer() as srv:
            c = await corvid.connect(
                srv.endpoint,
                heartbeat_interval=None,
                heartbeat_timeout=0.5 * SLOWDOWN,
                write_buffer_limit=LIMIT,
            )
            await srv.writer()
            watch = asyncio.ensure_future(watch_bounded(c, LIMIT + SLACK))
            calls = [c.call(size_of, bytes(65536)) for _ in range(256)]
            done = asyncio.gather(*calls, return_exceptions=True)  # (it hung: run()'s bound)
            await asyncio.wait({watch, done}, return_when=asyncio.FIRST_COMPLETED)
            await watch  # raises if the bound was passed
            results = await done
            for r in results:
                assert isinstance(r, corvid.RpcError), r
                assert r.code == ErrorCode.CONNECTION_CLOSED
                assert "the server read nothing of what was sent" in r.message, r.message

    run(main())


def test_a_slow_server_that_reads_is_not_closed() -> None:
    # The server reads 24 of 32 MiB in 64 KiB steps, a few ms apart (longer in all than
    # heartbeat_timeout), and answers nothing meanwhile, pongs included: that the full socket
    # keeps taking our bytes is what proves it alive. A second caller waits meanwhile, then is
    # sent.
    async def main() -> None:
        async with FakeServer(rcvbuf=65536) as srv:
            c = await corvid.connect(
                srv.endpoint,
                heartbeat_interval=0.05,
                heartbeat_timeout=0.5 * SLOWDOWN,
                write_buffer_limit=LIMIT,
            )
            big = bytes(32 << 20)
            first = asyncio.ensure_future(c.call(size_of, big))
            r = await srv.reader()
            head = await r.readexactly(32)
            assert head[3] == REQUEST
            left = int.from_bytes(head[20:24], "little")
            second = asyncio.ensure_future(c.call(size_of, b"abc"))
            while left:
                chunk = await r.read(min(left, 65536))
                assert chunk, "the client closed the connection"
                left -= len(chunk)
                if left > 8 << 20:  # (the rest, which may all be in socket buffers: at once)
                    await asyncio.sleep(0.002)  # a slow reader, not a synchronisation
            rid = int.from_bytes(head[8:16], "little")
            await srv.send(reply(rid, (32 << 20).to_bytes(4, "little")))
            assert await first == 32 << 20
            while True:  # the pings sent meanwhile, then the second call
                f = await srv.frame()
                if f.type == PING:
                    await srv.send(make_pong(f.rid))
                elif f.type == REQUEST:
                    await srv.send(reply(f.rid, (len(f.body) - 1).to_bytes(4, "little")))
                    break
            assert await second == 3
            assert not c.closed
            await c.close()

    run(main())


# A server in a process of its own (so that its buffers are not in our tracemalloc count):
# reads one request, says "read", waits for a line, then answers it with the request's body.
ECHO_SERVER = r"""
import socket, struct, sys
s = socket.socket()
s.bind(("127.0.0.1", 0))
s.listen(1)
print(s.getsockname()[1], flush=True)
c, _ = s.accept()
def read(n):
    buf = bytearray(n)
    view = memoryview(buf)
    got = 0
    while got < n:
        k = c.recv_into(view[got:])
        if not k:
            sys.exit(0)
        got += k
    return buf
head = read(32)
blen, alen = struct.unpack_from("<II", head, 20)
body = read(blen + alen)
print("read", flush=True)
sys.stdin.readline()
c.sendall(struct.pack("<2sBBBBHQIIII", b"CV", 2, 2, 0, 0, 0,
                      int.from_bytes(head[8:16], "little"), 0, blen, 0, 0))
c.sendall(memoryview(body)[:blen])
c.recv(1)
"""


def test_a_frame_at_the_size_limit_is_copied_once_each_way() -> None:
    # echo_blob's body: a 4-byte varint length, then the bytes: the frame is exactly
    # max_frame_size. Sending, the encoded frame is the one copy (asyncio's transport is
    # handed views of it); receiving, the frame's buffer is read into by the socket and the
    # value decoded from it is the one copy.
    n = DEFAULT_MAX_FRAME_SIZE - 4

    async def main() -> None:
        proc = await asyncio.create_subprocess_exec(
            sys.executable, "-c", ECHO_SERVER, stdin=subprocess.PIPE, stdout=subprocess.PIPE
        )
        assert proc.stdin is not None and proc.stdout is not None
        try:
            port = int(await proc.stdout.readline())
            c = await corvid.connect(f"127.0.0.1:{port}")
            payload = bytes(n)
            tracemalloc.start()
            try:
                base = tracemalloc.get_traced_memory()[0]
                call = asyncio.ensure_future(c.call(echo_blob, payload))
                assert await proc.stdout.readline() == b"read\n"
                sent_peak = tracemalloc.get_traced_memory()[1] - base
                tracemalloc.reset_peak()
                base = tracemalloc.get_traced_memory()[0]
                proc.stdin.write(b"go\n")
                got = await call
                received_peak = tracemalloc.get_traced_memory()[1] - base
            finally:
                tracemalloc.stop()
            assert got == payload
            mib = 1 << 20
            assert sent_peak < n + 2 * mib, f"sending took {sent_peak / mib:.1f} MiB"
            assert received_peak < 2 * n + 2 * mib, f"receiving took {received_peak / mib:.1f} MiB"
            await c.close()
        finally:
            if proc.returncode is None:
                proc.kill()
            await proc.wait()

    run(main())
