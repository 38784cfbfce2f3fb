"""The `corvid` command (corvid.cli) against python_peer_server: list, describe and call with
the server's describe_schema file, reflection, streams, TLS, unix sockets, and what it says
(and its exit status) for bad input and failed calls."""

from __future__ import annotations

import asyncio
import io
import json
import os
import pathlib
import socket
import subprocess
import sys
from typing import Any, Callable

import pytest

import corvid
from corvid import fingerprint, fnv1a32
from corvid.cli import REFLECTION, main
from conftest import Server, peer_schema_text, run
from fake_server import FakeServer, reply

Cli = Callable[..., "tuple[int, str, str]"]


@pytest.fixture(scope="module")
def schema_file(tmp_path_factory: Any) -> str:
    path = tmp_path_factory.mktemp("schema") / "peer.json"
    path.write_text(peer_schema_text())
    return str(path)


@pytest.fixture
def cli(capsys: Any, monkeypatch: Any) -> Cli:
    """Runs `corvid ARGV...` in this process: (exit status, stdout, stderr)."""

    def go(*argv: str, stdin: str = "") -> tuple[int, str, str]:
        monkeypatch.setattr(sys, "stdin", io.StringIO(stdin))
        rc = main(list(argv))
        out, err = capsys.readouterr()
        return rc, out, err

    return go


@pytest.fixture
def call(cli: Cli, server: Server, schema_file: str) -> Cli:
    """`corvid call SERVER --schema FILE ARGV...`."""

    def go(*argv: str, stdin: str = "") -> tuple[int, str, str]:
        return cli("call", server.endpoint, "--schema", schema_file, *argv, stdin=stdin)

    return go


def test_list_and_describe(cli: Cli, server: Server, schema_file: str) -> None:
    rc, out, _ = cli("list", server.endpoint, "--schema", schema_file)
    assert rc == 0
    lines = out.splitlines()
    assert "add(i32, i32) -> i32" in lines
    assert "chat(stream bytes) -> stream bytes" in lines
    assert "geo::echo_everything(struct geo::everything) -> struct geo::everything" in lines
    assert len(lines) == len(json.load(open(schema_file))["functions"])
    rc, out, _ = cli("describe", server.endpoint, "shift", "--schema", schema_file)
    assert rc == 0
    assert out.splitlines() == [
        "shift(struct point, i32) -> struct point",
        f"  signature {fingerprint('(struct point,i32)->struct point'):#06x}",
        "  argument 1: struct point",
        "  argument 2: i32",
        "  result: struct point",
        "struct point (evolvable)",
        "  f0: i32",
        "  f1: f64",
        "  f2: bytes",
        "  f3: [i32]",
    ]
    rc, out, _ = cli("describe", server.endpoint, "upload", "--schema", schema_file)
    assert "  stdin: a stream of bytes, one JSON value per line" in out.splitlines()


def test_calls(call: Cli) -> None:
    def ok(*argv: str) -> str:
        rc, out, err = call(*argv)
        assert (rc, err) == (0, ""), argv
        return out.strip()

    assert ok("add", "1", "2") == "3"
    assert ok("add", "--", "-5", "2") == "-3"  # after --: anything is an argument
    assert ok("echo", '"h\u00e9llo"') == '"h\u00e9llo"'
    assert ok("shift", '[1, 0.5, "p", [2]]', "3") == '[4, 0.5, "p", [2, 3]]'
    assert ok("shift", '{"f0": 1, "f1": 0.5, "f2": "p", "f3": []}', "1") == '[2, 0.5, "p", [1]]'
    assert ok("scale3", "[1, 2, 3]", "0.5") == "[0.5, 1.0, 1.5]"
    assert ok("echo_u64", str((1 << 64) - 1)) == str((1 << 64) - 1)
    assert ok("echo_i8", "-128") == "-128"
    assert ok("echo_f32", "0.1") == "0.1"
    assert ok("echo_f64", "-1.5") == "-1.5"  # a plain negative number is no flag
    assert ok("echo_f64", "--", "-1.5e3") == "-1500.0"  # others go after --
    assert ok("echo_map", '{"b": -2, "a": 1}') == '{"a": 1, "b": -2}'
    assert ok("echo_map", '[["a", 1]]') == '{"a": 1}'
    assert ok("echo_set", "[3, 1, 2]") == "[1, 2, 3]"
    assert ok("echo_opt", "null") == "null"
    assert ok("echo_opt", "7") == "7"
    assert ok("echo_tuple", '[1, "x", true]') == '[1, "x", true]'
    assert ok("echo_array", "[1, -2, 3]") == "[1, -2, 3]"
    assert ok("echo_color", "2") == "2"
    assert ok("echo_blob", '{"base64": "AP8="}') == '{"base64": "AP8="}'
    assert ok("echo_bools", "[true, false]") == "[true, false]"
    assert ok("describe_variant", "null") == '"none"'
    assert ok("describe_variant", "5") == '"int 5"'
    assert ok("describe_variant", '"5"') == '"string 5"'
    assert ok("describe_variant", '{"index": 2, "value": "x"}') == '"string x"'
    assert ok("ns::twice", "21") == "42"
    assert ok("naps_running") == "0"
    # A struct with everything: what C++ made, sent back, checked field by field in C++.
    sample = ok("geo::make_sample")
    assert json.loads(sample) == [
        True, -7, (1 << 64) - 1, 1.5, "h\u00e9llo",
        [[1, 0.5, "p", [2]], [-3, -2.25, "", []]],
        {"a": [1.0, 2.0, 3.0]}, [9, 9.5, "m", [1, 2, 3]],
        "alt", [-5, 0, 5], [-2, "two"], 2,
    ]  # fmt: skip
    assert ok("geo::check_sample", sample) == '"ok"'
    assert ok("geo::echo_everything", sample) == sample
    # A newer struct than the schema's reader would be is still decoded by position.
    assert ok("get_user", "7") == '[7, "al", 30, "al@x"]'


def test_streams(call: Cli) -> None:
    rc, out, err = call("count_to", "3")
    assert (rc, out, err) == (0, "1\n2\n3\n", "")
    rc, out, _ = call("blobs", "2", "2")
    assert out == '"aa"\n"bb"\n'
    rc, out, _ = call("upload", stdin='"ab"\n\n"cde"\n')
    assert (rc, out) == (0, "5\n")
    rc, out, _ = call("chat", stdin='"a"\n"b"\n')
    assert (rc, out) == (0, '"re: a"\n"re: b"\n')
    # A stream that fails part way: its items, then the error.
    rc, out, err = call("fails_after", "2")
    assert (rc, out) == (1, "0\n1\n")
    assert err == "error: handler_error: producer broke\n"
    rc, out, err = call("upload", stdin='"ab"\n5\n')
    assert rc == 2
    assert err == 'error: stdin line 2 (bytes): 5 is a number, not a string\n'


def test_failed_calls(call: Cli, cli: Cli, schema_file: str) -> None:
    rc, out, err = call("divide", "1", "0")
    assert (rc, out, err) == (1, "", "error: handler_error: division by zero\n")
    rc, out, err = call("nap", "5000", "--timeout", "0.2")
    assert rc == 1 and err.startswith("error: timeout: ")
    with socket.socket() as s:  # a port nobody listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    rc, out, err = cli("call", f"127.0.0.1:{port}", "--schema", schema_file, "add", "1", "2")
    assert rc == 1 and err.startswith("error: connect_failed: cannot connect to 127.0.0.1:")


def test_call_metadata(call: Cli, cli: Cli, server: Server) -> None:
    """-H KEY=VALUE: sent with every request (python_peer_server's guard wants a token)."""
    rc, out, err = call("guarded_echo", '"x"')
    assert (rc, out, err) == (1, "", "error: unauthenticated: a bearer token is required\n")
    assert call("guarded_echo", '"x"', "-H", "authorization=Bearer let-me-in") == (0, '"x"\n', "")
    rc, out, _ = call("metadata_of", "--metadata", "a=1=2", "-H", "b=")
    assert (rc, out) == (0, '["a=1=2", "b="]\n')
    for bad, words in [("nokey", "is not KEY=VALUE"), ("Bad=v", "is not a lowercase token")]:
        rc, out, err = call("metadata_of", "-H", bad)
        assert rc == 2 and words in err, err
    # Through reflection too: the schema's request carries it.
    assert cli("call", server.endpoint, "-H", "role=x", "metadata_of") == (0, '["role=x"]\n', "")


def test_bad_input(call: Cli, cli: Cli, schema_file: str) -> None:
    def usage(*argv: str) -> str:
        rc, out, err = call(*argv)
        assert (rc, out) == (2, ""), argv
        assert "Traceback" not in err
        return err.strip()

    assert usage("echo_u8", "300") == "error: argument 1 (u8): 300 is out of range 0..255"
    assert usage("repeat", '"a"', str(1 << 32)) == (
        "error: argument 2 (u32): 4294967296 is out of range 0..4294967295"
    )
    assert usage("add", "1") == "error: add takes 2 argument(s) (i32, i32), 1 given"
    assert usage("naps_running", "1") == "error: naps_running takes 0 argument(s) (none), 1 given"
    assert usage("echo", "hello").startswith("error: argument 1 (bytes): not JSON (")
    assert usage("add", "1", "[2").startswith("error: argument 2 (i32): not JSON (")
    assert usage("shift", "[1, 0.5, 3, []]", "1") == (
        "error: argument 1 at .f2 (bytes): 3 is a number, not a string"
    )
    assert usage("nosuch") == "error: no method 'nosuch' (corvid list shows them)"
    assert usage("ecoh", '"x"') == "error: no method 'ecoh'; did you mean echo?"
    # Unknown flags are errors, never arguments.
    assert "unrecognized arguments: --frobnicate" in usage("add", "1", "2", "--frobnicate")
    assert "unrecognized arguments: -x" in usage("echo", "-x")
    assert "unrecognized arguments: -1e3" in usage("echo_f64", "-1e3")
    assert "expected one argument" in usage("add", "1", "2", "--timeout")
    assert "not a positive number" in usage("add", "1", "2", "--timeout", "-1")
    assert usage("add", "1", "2", "--key", "k") == "error: --key needs --cert"
    # Bad commands, addresses and schema files.
    assert cli("frob")[0] == 2 and "unknown command 'frob'" in cli("frob")[2]
    assert cli()[0] == 2
    assert cli("--help")[0] == 0
    rc, _, err = cli("list", "nohost", "--schema", schema_file)
    assert rc == 2 and "is not host:port" in err
    rc, _, err = cli("list", "127.0.0.1:1", "--schema", "/nonexistent.json")
    assert rc == 2 and err.startswith("error: schema /nonexistent.json: ")
    rc, _, err = cli("list", "127.0.0.1:1", "--schema", __file__)
    assert rc == 2 and "not JSON" not in err and err.startswith("error: schema ")


def test_tls_and_unix(cli: Cli, fresh_server: Any, schema_file: str, tmp_path: Any) -> None:
    s = fresh_server("--tls")
    ca = s.certs[0]
    args = ("call", s.endpoint, "--schema", schema_file, "echo", '"secret"')
    assert cli(*args, "--cacert", ca) == (0, '"secret"\n', "")
    rc, _, err = cli(*args)  # plaintext to a TLS server
    assert rc == 1 and err.startswith("error: protocol_error: ") and "requires TLS" in err
    rc, _, err = cli(*args, "--tls")  # the system's CAs do not know the test CA
    assert rc == 1 and err.startswith("error: connect_failed: ")
    m = fresh_server("--mtls")
    ca, cert, key = m.certs
    args = ("call", m.endpoint, "--schema", schema_file, "add", "2", "3")
    assert cli(*args, "--cacert", ca, "--cert", cert, "--key", key) == (0, "5\n", "")
    assert cli(*args, "--cacert", ca)[0] == 1  # no client certificate
    rc, _, err = cli(*args, "--cacert", ca, "--cert", "/nonexistent.pem")
    assert rc == 2 and err.startswith("error: TLS files: ")
    path = str(tmp_path / "peer.sock")
    fresh_server("--unix", path)
    assert cli("call", f"unix:{path}", "--schema", schema_file, "add", "1", "2") == (0, "3\n", "")


def test_reflection(cli: Cli, server: Server, schema_file: str) -> None:
    """Without --schema the methods come from the server (corvid::reflection_service)."""
    rc, out, err = cli("list", server.endpoint)
    if rc != 0:
        assert rc == 1 and err.startswith("error: function_not_found: ")
        assert "pass --schema FILE" in err
        pytest.skip(f"python_peer_server does not answer {REFLECTION} yet")
    assert out == cli("list", server.endpoint, "--schema", schema_file)[1]
    assert cli("describe", server.endpoint, "shift")[1] == cli(
        "describe", server.endpoint, "shift", "--schema", schema_file
    )[1]
    assert cli("call", server.endpoint, "add", "40", "2") == (0, "42\n", "")
    assert cli("call", server.endpoint, "echo_u8", "256")[0] == 2


def list_against_fake(answer: Callable[[Any], bytes]) -> tuple[int, bytes, bytes]:
    """`corvid list` against a fake server whose reply to the command's one request (a frame,
    checked by the caller in `answer`) is `answer(frame)`'s body: exit status, stdout, stderr."""

    async def main_() -> tuple[int, bytes, bytes]:
        async with FakeServer() as fake:
            proc = await asyncio.create_subprocess_exec(
                sys.executable, "-m", "corvid.cli", "list", fake.endpoint,
                stdout=subprocess.PIPE, stderr=subprocess.PIPE,
            )  # fmt: skip
            f = await fake.frame()
            await fake.send(reply(f.rid, answer(f)))
            out, err = await proc.communicate()
            return proc.returncode or 0, out, err

    return run(main_())


def test_reflection_request() -> None:
    """What the command asks a server without --schema, answered by a fake server."""
    schema = {
        "corvid_schema": 1,
        "functions": [{"name": "ns::f", "signature": f"{fingerprint('(u8)->bool'):#06x}",
                       "params": ["u8"], "result": "bool"}],
    }  # fmt: skip

    def answer(f: Any) -> bytes:
        assert f.head.function_id == fnv1a32(REFLECTION)
        assert f.head.signature == fingerprint("()->bytes")
        assert f.body == b""
        return corvid.encode(str, json.dumps(schema))

    assert list_against_fake(answer) == (0, b"ns::f(u8) -> bool\n", b"")


def test_a_hostile_reflection_reply_is_a_clean_error() -> None:
    """A server's schema nested past what Python's parsers recurse into: exit 1, no traceback."""
    code, out, err = list_against_fake(lambda f: corvid.encode(str, "[" * 100000))
    assert (code, out) == (1, b"")
    assert err.startswith(b"error: protocol_error: the server's schema does not read"), err
    assert b"Traceback" not in err and len(err) < 300


def test_console_script_and_module(server: Server, schema_file: str) -> None:
    """The installed `corvid` script and `python -m corvid.cli`: exit statuses, no traceback."""
    script = pathlib.Path(sys.executable).parent / "corvid"
    commands = [[sys.executable, "-m", "corvid.cli"]]
    if os.environ.get("CORVID_REQUIRE_INSTALLED") or script.exists():
        commands.append([str(script)])
    for cmd in commands:
        base = [*cmd, "call", server.endpoint, "--schema", schema_file]
        p = subprocess.run([*base, "add", "1", "2"], capture_output=True, text=True)
        assert (p.returncode, p.stdout, p.stderr) == (0, "3\n", "")
        p = subprocess.run([*base, "divide", "1", "0"], capture_output=True, text=True)
        assert (p.returncode, p.stderr) == (1, "error: handler_error: division by zero\n")
        p = subprocess.run([*base, "echo_u8", "256"], capture_output=True, text=True)
        bad = "error: argument 1 (u8): 256 is out of range 0..255\n"
        assert (p.returncode, p.stderr) == (2, bad)
        p = subprocess.run([*cmd, "--version"], capture_output=True, text=True)
        assert p.stdout == f"corvid {corvid.__version__}\n"
