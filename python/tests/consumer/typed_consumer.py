"""A user's module, checked with `mypy --strict` against the INSTALLED package (by
tests/python/run_python_tests.sh, from outside the source tree): the wheel's py.typed makes
mypy read corvid's annotations, so the types below are what a user's checker sees."""

from __future__ import annotations

import asyncio
import dataclasses
from typing import assert_type

import corvid
import corvid.cli
from corvid import Stream, i32, u64


@dataclasses.dataclass
class point:
    x: i32
    y: float


@corvid.remote
def shift(p: point, dx: i32) -> point: ...
@corvid.remote(name="ns::count_to")
def count_to(n: i32) -> Stream[i32]: ...
@corvid.remote
def upload(chunks: Stream[str]) -> u64: ...


async def use(endpoint: str) -> None:
    async with await corvid.connect(endpoint, request_timeout=1.0) as client:
        assert_type(client, corvid.Client)
        p = await client.call(shift, point(1, 2.0), 3, timeout=0.5)
        assert_type(p, point)
        r = await client.call_reply(shift, p, 1)
        assert_type(r, corvid.Reply[point])
        assert_type(r.attachment, bytes)
        async for n in client.stream(count_to, 3):
            assert_type(n, int)
        up = client.open_stream(upload)
        assert_type(up, corvid.StreamCall)
        try:
            await client.call(shift, p, 1)
        except corvid.RpcError as e:
            assert_type(e.code, corvid.ErrorCode | int)


def run_cli(argv: list[str]) -> int:
    status = corvid.cli.main(argv)
    assert_type(status, int)
    return status


assert_type(corvid.__version__, str)
declared: corvid.Remote[..., point] = shift

if __name__ == "__main__":
    asyncio.run(use("127.0.0.1:1"))
