"""Side by side, in one run: pipelined 128-byte calls on one connection from Python, with
corvid's client against a corvid C++ server and grpcio's asyncio client against the gRPC C++
reference server (bench/reference/grpc, built by the reference-benchmark branch), both servers
on one thread. Each client keeps `--window` calls in flight. Prints one line per client.

    scripts/python-venv build/dev/pyvenv --bench
    build/dev/pyvenv/bin/python python/bench/grpc_compare.py \\
        --corvid-server build/dev/examples/python_example_server \\
        --grpc-server build/reference/grpc/grpc-reference-server

The gRPC stubs are generated at run time with grpcio-tools from bench/reference/grpc/echo.proto
(package corvid_ref; service Echo { rpc Call(Payload) returns (Payload); } message Payload
{ bytes data = 1; }).
"""

from __future__ import annotations

import argparse
import asyncio
import importlib
import os
import pathlib
import re
import socket
import subprocess
import sys
import tempfile
import time
from typing import Any

import corvid

ROOT = pathlib.Path(__file__).resolve().parents[2]
PROTO = ROOT / "bench" / "reference" / "grpc" / "echo.proto"
# The contract of that file, for a checkout where it is not there yet.
PROTO_TEXT = """syntax = "proto3";
package corvid_ref;
service Echo { rpc Call(Payload) returns (Payload); }
message Payload { bytes data = 1; }
"""


@corvid.remote
def echo(s: bytes) -> bytes: ...


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


async def bench_corvid(endpoint: str, calls: int, payload: bytes, window: int) -> float:
    async with await corvid.connect(endpoint) as c:
        await asyncio.gather(*[c.send_request(echo, payload) for _ in range(window)])
        start = time.perf_counter()
        done = 0
        while done < calls:
            n = min(window, calls - done)
            await asyncio.gather(*[c.send_request(echo, payload) for _ in range(n)])
            done += n
        return calls / (time.perf_counter() - start)


def grpc_stubs(out: str) -> tuple[Any, Any]:
    from grpc_tools import protoc  # type: ignore[import-untyped]

    proto = PROTO
    if not proto.exists():
        proto = pathlib.Path(out) / "echo.proto"
        proto.write_text(PROTO_TEXT)
    rc = protoc.main(
        ["protoc", f"-I{proto.parent}", f"--python_out={out}", f"--grpc_python_out={out}",
         str(proto)]
    )
    if rc != 0:
        raise SystemExit(f"grpc_tools.protoc failed on {PROTO}")
    sys.path.insert(0, out)
    return importlib.import_module("echo_pb2"), importlib.import_module("echo_pb2_grpc")


async def bench_grpc(target: str, calls: int, payload: bytes, window: int, stubs: Any) -> float:
    import grpc  # type: ignore[import-untyped]

    pb2, pb2_grpc = stubs
    async with grpc.aio.insecure_channel(target) as channel:
        stub = pb2_grpc.EchoStub(channel)
        msg = pb2.Payload(data=payload)
        await asyncio.gather(*[stub.Call(msg) for _ in range(window)])
        start = time.perf_counter()
        done = 0
        while done < calls:
            n = min(window, calls - done)
            await asyncio.gather(*[stub.Call(msg) for _ in range(n)])
            done += n
        return calls / (time.perf_counter() - start)


def start(cmd: list[str], port: int) -> subprocess.Popen[bytes]:
    """Starts a server and waits until its port accepts connections."""
    p = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline and p.poll() is None:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return p
        except OSError:
            time.sleep(0.05)
    p.kill()
    raise SystemExit(f"{cmd[0]} did not start")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--corvid-server", default=str(ROOT / "build/dev/examples/python_example_server"))
    ap.add_argument("--grpc-server", default=str(ROOT / "build/reference/grpc/grpc-reference-server"))
    ap.add_argument("--calls", type=int, default=100_000)
    ap.add_argument("--size", type=int, default=128)
    ap.add_argument("--window", type=int, default=1000)
    ap.add_argument("--uvloop", action="store_true")
    a = ap.parse_args()
    if a.uvloop:
        import uvloop

        uvloop.install()
    payload = b"x" * a.size
    loop_name = "uvloop" if a.uvloop else "asyncio"

    port = free_port()
    srv = start([a.corvid_server, str(port)], port)
    try:
        rate = asyncio.run(bench_corvid(f"127.0.0.1:{port}", a.calls, payload, a.window))
        print(f"corvid Python client ({loop_name}) -> corvid C++ server, 1 thread: "
              f"{rate:,.0f} calls/s")
    finally:
        srv.kill()
        srv.wait()

    if not os.access(a.grpc_server, os.X_OK):
        print(f"grpcio asyncio client -> gRPC C++ reference server: skipped ({a.grpc_server} "
              "is not built)")
        return
    with tempfile.TemporaryDirectory() as tmp:
        stubs = grpc_stubs(tmp)
        port = free_port()
        srv = start([a.grpc_server, "--port", str(port), "--threads", "1"], port)
        try:
            rate = asyncio.run(bench_grpc(f"127.0.0.1:{port}", a.calls, payload, a.window, stubs))
            print(f"grpcio asyncio client ({loop_name}) -> gRPC C++ reference server, 1 thread: "
                  f"{rate:,.0f} calls/s")
        finally:
            srv.kill()
            srv.wait()


if __name__ == "__main__":
    main()
