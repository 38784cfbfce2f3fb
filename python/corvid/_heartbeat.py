"""A connection's liveness: from what the server sends (pings after heartbeat_interval of
silence, closed after heartbeat_timeout) and from what it takes of what we send (unsent bytes
that do not move for heartbeat_timeout close the connection, however much it sends)."""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING

from ._errors import ErrorCode, RpcError
from ._frame import make_ping

if TYPE_CHECKING:
    from ._connection import Connection


class Heartbeat:
    def __init__(self, conn: Connection) -> None:
        self.conn = conn
        now = conn.loop.time()
        self.last_heard = now
        self.ping_outstanding = False
        self.timer: asyncio.TimerHandle | None = None
        # Liveness from our writes, sampled at ticks: the bytes the socket had taken; whether
        # the transport held a backlog (the socket's buffer was full); when a full socket last
        # took more (the server acknowledged bytes); since when unsent bytes have not moved.
        self.accepted_seen = 0
        self.backlogged = False
        self.write_moved = now
        self.stuck_since = now

    def start(self) -> None:
        """The connection is up: the clocks start now, and ticks if the client asked."""
        self.last_heard = self.stuck_since = self.conn.loop.time()
        c = self.conn.client
        if c.heartbeat_interval or c.heartbeat_timeout:
            self.schedule()

    def heard(self) -> None:
        """Bytes arrived: whatever they are, the server is alive."""
        self.last_heard = self.conn.loop.time()
        self.ping_outstanding = False

    def stop(self) -> None:
        if self.timer is not None:
            self.timer.cancel()

    def schedule(self) -> None:
        c = self.conn.client
        periods = [p for p in (c.heartbeat_interval, c.heartbeat_timeout) if p]
        self.timer = self.conn.loop.call_later(max(min(periods) / 4, 0.01), self._tick)

    def _tick(self) -> None:
        conn = self.conn
        if conn.closed:
            return
        c = conn.client
        now = conn.loop.time()
        # A socket whose buffer was full and took more proves the server alive (it
        # acknowledged bytes, so it reads); one with room takes bytes from a dead peer too,
        # which proves nothing.
        buffered = conn.out.buffered()
        accepted = conn.out.handed - buffered
        moved = accepted != self.accepted_seen
        self.accepted_seen = accepted
        if moved and self.backlogged:
            self.write_moved = now
        self.backlogged = buffered > 0
        unsent = conn.out.queued + buffered
        if not unsent or moved:
            self.stuck_since = now
        elif c.heartbeat_timeout and now - self.stuck_since >= c.heartbeat_timeout:
            return conn.close_dead(
                f"the server read nothing of what was sent for {c.heartbeat_timeout} s "
                f"({unsent} bytes unsent)"
            )
        # Without heartbeat_interval we never ping, so silence proves nothing.
        if c.heartbeat_interval:
            silent = now - max(self.last_heard, self.write_moved)
            if c.heartbeat_timeout and silent >= c.heartbeat_timeout:
                return conn.close_dead(
                    f"heard nothing from the server for {c.heartbeat_timeout} s"
                )
            if now - self.last_heard >= c.heartbeat_interval and not self.ping_outstanding:
                self.ping_outstanding = True
                c.pings_sent += 1
                conn.write(make_ping(0))
        self.schedule()
