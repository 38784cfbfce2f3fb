"""The README's "From Python" example, runnable against examples/python/example_server:

    build/dev/examples/python_example_server 9000 &
    python3 examples/python/example.py 127.0.0.1:9000

(with the package installed: `pip install ./python`, or scripts/python-venv).
"""

from __future__ import annotations

import asyncio
import dataclasses
import sys

import corvid
from corvid import f64, i32


@corvid.remote  # the schema is the declaration, as in C++:
def echo(s: str) -> str: ...  # name "echo" (name="ns::f" for a qualified name)


@corvid.remote
def add(a: i32, b: i32) -> i32: ...


@dataclasses.dataclass
class point:
    x: i32
    y: f64
    tag: str
    v: list[i32]


@corvid.remote
def shift(p: point, dx: i32) -> point: ...


@corvid.remote
def count_to(n: i32) -> corvid.Stream[i32]: ...  # stream<int> count_to(int) in C++


@corvid.remote
def secret(n: i32) -> i32: ...  # not registered on the server


async def main(endpoint: str) -> None:
    async with await corvid.connect(endpoint) as client:  # also "unix:/path", ssl=ctx
        assert await client.call(echo, "hello") == "hello"
        r = await client.call(add, 1, 2, timeout=0.5)  # deadline on the wire
        assert r == 3
        p = await client.call(shift, point(1, 0.5, "p", [2]), 3)
        assert p == point(4, 0.5, "p", [2, 3])
        pending = [client.send_request(add, i, i) for i in range(10_000)]  # pipelined
        results = await asyncio.gather(*pending)
        assert results == [2 * i for i in range(10_000)]
        items = [n async for n in client.stream(count_to, 5)]  # server stream
        assert items == [1, 2, 3, 4, 5]
        try:
            await client.call(secret, 1)
        except corvid.RpcError as e:  # e.code: corvid.ErrorCode
            assert e.code == corvid.ErrorCode.FUNCTION_NOT_FOUND
        print(f"echo, add, shift, {len(results)} pipelined adds and count_to: ok")


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1] if len(sys.argv) > 1 else "127.0.0.1:9000"))
