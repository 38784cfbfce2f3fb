"""Pipelined calls on one connection: `--calls` echo calls of a `--size`-byte string, at most
`--window` in flight (sent in bursts of `--window`, each awaited as a whole), against a corvid
server that registers `echo(std::string_view) -> std::string_view` (examples/echo_server,
examples/python_example_server). Prints calls/s. Figures: docs/benchmarks.md.

    python bench/pipelined_calls.py 127.0.0.1:9000 [--uvloop] [--calls 200000]
    python bench/pipelined_calls.py --server build/dev/examples/python_example_server
(--server starts that server on a free port, 1 reactor thread, and stops it at the end.)
"""

from __future__ import annotations

import argparse
import asyncio
import time

import corvid


@corvid.remote
def echo(s: str) -> str: ...


async def run(endpoint: str, calls: int, size: int, window: int) -> float:
    payload = "x" * size
    async with await corvid.connect(endpoint) as c:
        for _ in range(2):  # warm up
            await asyncio.gather(*[c.send_request(echo, payload) for _ in range(window)])
        start = time.perf_counter()
        done = 0
        while done < calls:
            n = min(window, calls - done)
            results = await asyncio.gather(*[c.send_request(echo, payload) for _ in range(n)])
            if results[-1] != payload:
                raise SystemExit("wrong reply")
            done += n
        return calls / (time.perf_counter() - start)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("endpoint", nargs="?")
    ap.add_argument("--server", help="start this corvid server (argument: port) and call it")
    ap.add_argument("--calls", type=int, default=200_000)
    ap.add_argument("--size", type=int, default=128)
    ap.add_argument("--window", type=int, default=1000)
    ap.add_argument("--uvloop", action="store_true", help="run on uvloop (PyPI) instead of asyncio's loop")
    ap.add_argument("--repeat", type=int, default=3)
    a = ap.parse_args()
    if a.uvloop:
        import uvloop

        uvloop.install()
    server = None
    endpoint = a.endpoint
    if a.server:
        from grpc_compare import free_port, start

        port = free_port()
        server = start([a.server, str(port)], port)
        endpoint = f"127.0.0.1:{port}"
    if endpoint is None:
        ap.error("give an endpoint or --server")
    best = 0.0
    try:
        for _ in range(a.repeat):
            rate = asyncio.run(run(endpoint, a.calls, a.size, a.window))
            print(f"corvid-python {'uvloop' if a.uvloop else 'asyncio'}: {rate:,.0f} calls/s "
                  f"({a.size} B, window {a.window})")
            best = max(best, rate)
    finally:
        if server is not None:
            server.kill()
            server.wait()
    print(f"best: {best:,.0f} calls/s")


if __name__ == "__main__":
    main()
