"""Fixtures: the C++ servers the tests call (built by the project's CMake), started per
session and killed at the end. Paths come from the environment that ctest sets
(tests/python/run_python_tests.sh), or the dev build by default."""

from __future__ import annotations

import asyncio
import os
import pathlib
import subprocess
from typing import Any, Awaitable, Callable, Iterator, TypeVar

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
T = TypeVar("T")

# Sanitizer builds of the servers run slower: the tests' time margins scale by this (the
# build's CORVID_TEST_SLOWDOWN, passed by ctest).
SLOWDOWN = float(os.environ.get("CORVID_TEST_SLOWDOWN", "1"))
# "It hung": no test should come near this; it bounds every asyncio.run in the suite.
HANG_LIMIT = 60 * SLOWDOWN


def binary(env: str, default: str) -> str:
    path = os.environ.get(env) or str(ROOT / "build" / "dev" / default)
    if not os.access(path, os.X_OK):
        pytest.fail(f"{path} is not built (set {env} or build the dev preset)")
    return path


def peer_schema_text() -> str:
    """The peer server's schema: its describe_schema output (`--schema`)."""
    return subprocess.run(
        [binary("CORVID_PEER_SERVER", "tests/python/python_peer_server"), "--schema"],
        check=True,
        capture_output=True,
        text=True,
    ).stdout


class Server:
    """A running python_peer_server: its endpoint, and the TLS files it made."""

    def __init__(self, *args: str) -> None:
        self.proc = subprocess.Popen(
            [binary("CORVID_PEER_SERVER", "tests/python/python_peer_server"), *args],
            stdout=subprocess.PIPE,
            text=True,
        )
        assert self.proc.stdout is not None
        self.certs: list[str] = []
        self.port = -1
        for line in self.proc.stdout:
            words = line.split()
            if words and words[0] == "certs":
                self.certs = words[1:]
            elif words and words[0] == "port":
                self.port = int(words[1])
                break
        if self.port < 0:
            self.proc.kill()
            raise RuntimeError(f"python_peer_server {' '.join(args)} did not start")
        self.endpoint = f"127.0.0.1:{self.port}"

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait()


@pytest.fixture(scope="session")
def server() -> Iterator[Server]:
    s = Server()
    yield s
    s.stop()


@pytest.fixture
def fresh_server() -> Iterator[Callable[..., Server]]:
    """Servers of a test's own (with options, or to be killed)."""
    started: list[Server] = []

    def start(*args: str) -> Server:
        s = Server(*args)
        started.append(s)
        return s

    yield start
    for s in started:
        s.stop()


def run(coro: Awaitable[T]) -> T:
    async def bounded() -> T:
        return await asyncio.wait_for(coro, HANG_LIMIT)

    return asyncio.run(bounded())


async def eventually(probe: Callable[[], Awaitable[Any]], want: Any, limit: float = 20) -> None:
    limit *= SLOWDOWN
    """Waits until `await probe()` returns `want` (asks again on each reply; `limit` means it
    hung)."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + limit
    got = None
    while loop.time() < deadline:
        got = await probe()
        if got == want:
            return
        await asyncio.sleep(0.005)
    raise AssertionError(f"still {got!r}, waited for {want!r}")
