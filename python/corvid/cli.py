"""corvid: lists, describes and calls the methods of a running corvid server.

    corvid list ADDRESS                      the methods: name(parameters) -> result
    corvid describe ADDRESS METHOD           a method's parameter and result types
    corvid call ADDRESS METHOD [ARG...]      calls it: JSON arguments, the result as JSON

The methods come from the server itself (it must answer corvid::reflection_service::describe)
or from `--schema FILE`, the output of C++ describe_schema<F...>() (then `list` and
`describe` read only the file). Exit status: 0, 1 when the call or the connection failed
("error: timeout: ..."), 2 for a usage error (bad option, method or argument). Uses only the
standard library (a /usr/bin/corvid may call corvid.cli.main directly).
"""

from __future__ import annotations

import argparse
import asyncio
import difflib
import json
import os
import ssl
import sys
import threading
from typing import Any

from ._client import Client, connect, parse_endpoint
from ._errors import ErrorCode, RpcError
from ._json_args import ArgError, from_json, parse_json, to_json
from ._metadata import normalize
from ._remote import remote
from ._schema import Method, Schema, Type
from ._stream import StreamCall
from .stubgen import SchemaError, read_json
from ._version import __version__

REFLECTION = "corvid::reflection_service::describe"
COMMANDS = {
    "list": "list the server's methods",
    "describe": "show a method's parameter and result types",
    "call": "call a method with JSON arguments; print the result as JSON",
}
_CALL_EPILOG = """\
arguments: one JSON value each, in the method's parameter order (a JSON string needs its
quotes: '"text"'). Integers must fit their width; bytes are a string or {"base64": "..."};
a struct is an array of its fields in order, or an object with keys f0, f1, ...; a map an
object or an array of [key, value] pairs; a variant the value (the first alternative it
fits) or {"index": i, "value": v}. An argument that starts with '-' and is not a plain
number goes after '--'. A server stream's items print as JSON lines; a client stream's
items are read from stdin, one JSON value per line. docs/python.md has the details."""


class UsageError(Exception):
    """Exit status 2: the command line (or stdin) is wrong, nothing of it reached a server."""


def _describe() -> str:
    """The server's describe_schema JSON (only servers with reflection enabled answer)."""
    raise NotImplementedError  # called through a client


_describe_remote = remote(name=REFLECTION)(_describe)


def _positive(text: str) -> float:
    try:
        v = float(text)
    except ValueError:
        v = -1.0
    if not v > 0 or v == float("inf"):
        raise argparse.ArgumentTypeError(f"{text!r} is not a positive number of seconds")
    return v


def _parser(command: str) -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog=f"corvid {command}",
        description=COMMANDS[command],
        epilog=_CALL_EPILOG if command == "call" else None,
        formatter_class=argparse.RawDescriptionHelpFormatter,
        allow_abbrev=False,
    )
    p.add_argument("address", help="host:port, [v6]:port or unix:/path")
    if command != "list":
        p.add_argument("method", help="the method's qualified name (ns::f)")
    if command == "call":
        p.add_argument("args", nargs="*", metavar="ARG", help="a JSON value per parameter")
    p.add_argument("--schema", metavar="FILE", help="describe_schema JSON, instead of asking")
    p.add_argument(
        "--timeout", type=_positive, metavar="SECONDS", help="connect and call deadline"
    )
    p.add_argument(
        "-H",
        "--metadata",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="call metadata sent with every request (the schema's too), e.g. "
        "'authorization=Bearer T'; repeatable",
    )
    tls = p.add_argument_group("TLS")
    tls.add_argument("--tls", action="store_true", help="TLS, trusting the system's CAs")
    tls.add_argument("--cacert", metavar="FILE", help="TLS, trusting this CA (PEM)")
    tls.add_argument("--cert", metavar="FILE", help="client certificate (PEM): mutual TLS")
    tls.add_argument("--key", metavar="FILE", help="the client certificate's key (PEM)")
    tls.add_argument("--server-name", metavar="NAME", help="the name the certificate has")
    return p


def _top_help() -> str:
    lines = ["usage: corvid COMMAND ADDRESS [options] ...", "", "commands:"]
    lines += [f"  {c:<10}{h}" for c, h in COMMANDS.items()]
    lines += ["", "corvid COMMAND -h: a command's options.  corvid --version: " + __version__]
    return "\n".join(lines)


def _tls(a: argparse.Namespace) -> ssl.SSLContext | None:
    if a.key and not a.cert:
        raise UsageError("--key needs --cert")
    if not (a.tls or a.cacert or a.cert):
        if a.server_name:
            raise UsageError("--server-name is for TLS (add --tls or --cacert)")
        return None
    try:
        ctx = ssl.create_default_context(cafile=a.cacert)
        if a.cert:
            ctx.load_cert_chain(a.cert, a.key)
    except (OSError, ssl.SSLError) as e:
        raise UsageError(f"TLS files: {e}") from None
    return ctx


def _read_schema(path: str) -> Schema:
    try:
        with open(path, encoding="utf-8") as f:
            return Schema(read_json(f.read()))
    except (OSError, ValueError, SchemaError) as e:
        raise UsageError(f"schema {path}: {e}") from None


async def _ask_schema(client: Client, timeout: float | None) -> Schema:
    try:
        text = await client.call(_describe_remote, timeout=timeout)
    except RpcError as e:
        if e.code in (ErrorCode.FUNCTION_NOT_FOUND, ErrorCode.SIGNATURE_MISMATCH):
            raise RpcError(
                e.code,
                f"{e.message} (the server does not answer {REFLECTION}: enable reflection "
                "on it, or pass --schema FILE)",
            ) from None
        raise
    try:
        return Schema(read_json(text))
    except (ValueError, SchemaError) as e:
        raise RpcError(ErrorCode.PROTOCOL_ERROR, f"the server's schema does not read: {e}")


def _method(schema: Schema, name: str) -> Method:
    m = schema.methods.get(name)
    if m is None:
        near = difflib.get_close_matches(name, list(schema.methods), n=3)
        hint = f"; did you mean {' or '.join(near)}?" if near else " (corvid list shows them)"
        raise UsageError(f"no method {name!r}{hint}")
    return m


def _signature(m: Method) -> str:
    return f"{m.name}({', '.join(p.text for p in m.params)}) -> {m.result.text}"


def _structs(t: Type, out: dict[str, Type]) -> None:
    if t.kind == "struct" and t.name not in out:
        out[t.name] = t
    for a in t.args:
        _structs(a, out)


def _describe_text(m: Method) -> str:
    lines = [_signature(m), f"  signature {m.signature:#06x}"]
    for i, p in enumerate(m.args, 1):
        lines.append(f"  argument {i}: {p.text}")
    if m.in_stream is not None:
        lines.append(f"  stdin: a stream of {m.in_stream.text}, one JSON value per line")
    if m.out_stream is not None:
        lines.append(f"  result: a stream of {m.out_stream.text}, one JSON value per line")
    else:
        lines.append(f"  result: {m.result.text}")
    structs: dict[str, Type] = {}
    for t in [*m.params, m.result]:
        _structs(t, structs)
    for st in structs.values():
        lines.append(f"struct {st.name} ({'frozen' if st.frozen else 'evolvable'})")
        lines += [f"  f{i}: {f.text}" for i, f in enumerate(st.args)]
    return "\n".join(lines)


def _args(m: Method, texts: list[str]) -> list[Any]:
    if len(texts) != len(m.args):
        types = ", ".join(p.text for p in m.args) or "none"
        raise UsageError(
            f"{m.name} takes {len(m.args)} argument(s) ({types}), {len(texts)} given"
        )
    values = []
    for i, (t, text) in enumerate(zip(m.args, texts), 1):
        try:
            values.append(from_json(t, parse_json(text, t)))
        except ArgError as e:
            raise UsageError(e.describe(f"argument {i}")) from None
    return values


def _print(t: Type, v: Any) -> None:
    print(json.dumps(to_json(t, v), ensure_ascii=False), flush=True)


def _stdin_lines(loop: asyncio.AbstractEventLoop) -> asyncio.Queue[str | None]:
    """stdin's lines (None at its end), read by a daemon thread: a stream that ends while
    stdin is still open does not keep the process."""
    q: asyncio.Queue[str | None] = asyncio.Queue()

    def pump() -> None:
        try:
            for line in sys.stdin:
                loop.call_soon_threadsafe(q.put_nowait, line)
            loop.call_soon_threadsafe(q.put_nowait, None)
        except (RuntimeError, OSError, ValueError):  # the loop closed, or stdin did
            pass

    threading.Thread(target=pump, daemon=True).start()
    return q


async def _feed(s: StreamCall, t: Type) -> None:
    q = _stdin_lines(asyncio.get_running_loop())
    n = 0
    while (line := await q.get()) is not None:
        n += 1
        if not line.strip():
            continue
        try:
            v = from_json(t, parse_json(line.strip(), t))
        except ArgError as e:
            s.cancel()
            raise UsageError(e.describe(f"stdin line {n}")) from None
        await s.write(v)
    await s.done_writing()


async def _call(client: Client, m: Method, values: list[Any], timeout: float | None) -> None:
    out = m.out_stream
    if m.in_stream is None:
        if out is None:
            _print(m.result, await client.call(m.remote, *values, timeout=timeout))
            return
        async for item in client.stream(m.remote, *values, timeout=timeout):
            _print(out, item)
        return
    s = client.open_stream(m.remote, *values, timeout=timeout)
    feeder = asyncio.create_task(_feed(s, m.in_stream))
    try:
        if out is None:
            _print(m.result, await s.result())
        else:
            async for item in s:
                _print(out, item)
    except RpcError:
        failed = feeder.exception() if feeder.done() and not feeder.cancelled() else None
        if failed is not None:
            raise failed from None  # bad input on stdin, which cancelled the stream
        raise
    finally:
        if not feeder.done():
            feeder.cancel()
        try:
            await feeder
        except (asyncio.CancelledError, RpcError):
            pass  # the stream's own end says what happened


async def _run(command: str, a: argparse.Namespace) -> int:
    try:
        parse_endpoint(a.address)
    except RpcError as e:
        raise UsageError(e.message) from None
    ctx = _tls(a)
    schema = _read_schema(a.schema) if a.schema else None
    if schema is not None and _show(command, schema, a):
        return 0
    values = _args(_method(schema, a.method), a.args) if schema else []  # before connecting
    pairs = _metadata_pairs(a.metadata)
    connect_timeout = a.timeout if a.timeout is not None else 10.0
    async with await connect(
        a.address,
        ssl=ctx,
        server_hostname=a.server_name,
        connect_timeout=connect_timeout,
        credentials=(lambda name: pairs) if pairs else None,
    ) as client:
        if schema is None:
            schema = await _ask_schema(client, a.timeout)
            if _show(command, schema, a):
                return 0
            values = _args(_method(schema, a.method), a.args)
        await _call(client, _method(schema, a.method), values, a.timeout)
    return 0


def _metadata_pairs(texts: list[str]) -> list[tuple[str, str]]:
    """--metadata KEY=VALUE arguments as checked pairs; UsageError on a bad one."""
    pairs = []
    for text in texts:
        key, sep, value = text.partition("=")
        if not sep:
            raise UsageError(f"--metadata {text!r} is not KEY=VALUE")
        pairs.append((key, value))
    try:
        normalize(pairs)
    except ValueError as e:
        raise UsageError(str(e)) from None
    return pairs


def _show(command: str, schema: Schema, a: argparse.Namespace) -> bool:
    """Prints what `list` and `describe` ask for; False for `call`."""
    if command == "list":
        print("\n".join(_signature(m) for m in schema.methods.values()))
    elif command == "describe":
        print(_describe_text(_method(schema, a.method)))
    else:
        return False
    return True


def main(argv: list[str] | None = None) -> int:
    """The command line: `corvid COMMAND ADDRESS ...`. Returns the exit status."""
    argv = sys.argv[1:] if argv is None else list(argv)
    if not argv or argv[0] in ("-h", "--help"):
        print(_top_help(), file=sys.stdout if argv else sys.stderr)
        return 0 if argv else 2
    if argv[0] == "--version":
        print(f"corvid {__version__}")
        return 0
    command = argv[0]
    if command not in COMMANDS:
        print(f"{_top_help()}\n\ncorvid: error: unknown command {command!r}", file=sys.stderr)
        return 2
    try:
        a = _parser(command).parse_intermixed_args(argv[1:])
    except SystemExit as e:  # argparse: -h (0) or a usage error (2), already printed
        return e.code if isinstance(e.code, int) else 2
    try:
        return asyncio.run(_run(command, a))
    except UsageError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    except RpcError as e:
        print(f"error: {e}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:  # the reader went away (| head): say nothing more
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return 1


if __name__ == "__main__":
    sys.exit(main())
