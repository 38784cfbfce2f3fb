"""corvid-stubgen on the C++ server's own describe_schema output: the generated declarations
have the server's fingerprints, call it successfully, and pass mypy --strict."""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
from typing import Any

import pytest

import corvid
from corvid.stubgen import SchemaError, generate, main
from conftest import ROOT, Server, peer_schema_text, run


def schema() -> Any:
    return json.loads(peer_schema_text())


def load(path: Any) -> Any:
    spec = importlib.util.spec_from_file_location("peer_stubs", path)
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    sys.modules["peer_stubs"] = mod
    spec.loader.exec_module(mod)
    return mod


def test_generated_stubs_call_the_server(server: Server, tmp_path: Any) -> None:
    s = schema()
    path = tmp_path / "stubs.py"
    path.write_text(generate(s, "python_peer_server --schema"))
    stubs = load(path)
    by_name = {f["name"]: f for f in s["functions"]}
    checked = 0
    for value in vars(stubs).values():
        if isinstance(value, corvid.Remote):
            want = by_name[value.name]
            assert value.signature == int(want["signature"], 16), value.name
            assert value.canonical_signature == "(" + ",".join(want["params"]) + ")->" + want[
                "result"
            ]
            checked += 1
    assert checked == len(by_name)

    async def main_() -> None:
        async with await corvid.connect(server.endpoint) as c:
            assert await c.call(stubs.echo, "stub") == "stub"
            assert await c.call(stubs.ns_twice, 4) == 8
            p = stubs.point(1, 0.5, "p", [2])
            assert await c.call(stubs.shift, p, 1) == stubs.point(2, 0.5, "p", [2, 1])
            sample = await c.call(stubs.geo_make_sample)
            assert sample.f11 == 2  # color::green: enumerators are not in the schema
            assert await c.call(stubs.geo_check_sample, sample) == "ok"
            assert [n async for n in c.stream(stubs.count_to, 3)] == [1, 2, 3]
            up = c.open_stream(stubs.upload)  # a client stream: its parameter is in the schema
            await up.write("abc")
            await up.done_writing()
            assert await up.result() == 3

    run(main_())


def test_stubs_pass_mypy_strict(tmp_path: Any) -> None:
    pytest.importorskip("mypy")
    path = tmp_path / "stubs.py"
    path.write_text(generate(schema()))
    r = subprocess.run(
        [sys.executable, "-m", "mypy", "--strict", "--disable-error-code", "empty-body",
         "--cache-dir", str(tmp_path / "cache"), str(path)],
        capture_output=True,
        text=True,
    )
    assert r.returncode == 0, r.stdout + r.stderr


def test_schema_errors(tmp_path: Any, capsys: Any) -> None:
    examples = json.loads((ROOT / "examples" / "echo_api.schema.json").read_text())
    assert "def move(p0: point, p1: corvid.i32) -> point" in generate(examples)
    examples["functions"][0]["signature"] = "0x1234"
    with pytest.raises(SchemaError, match="fingerprint"):
        generate(examples)
    with pytest.raises(SchemaError):
        generate({"corvid_schema": 2})
    bad = tmp_path / "bad.json"
    bad.write_text("{")
    assert main([str(bad)]) == 2
    assert "corvid-stubgen:" in capsys.readouterr().err
