"""`corvid call`'s JSON <-> schema types (corvid._json_args, corvid._schema) without a server:
what is refused and how it is named, and that what is taken encodes as the codec says."""

from __future__ import annotations

import json
from typing import Any

import pytest

from corvid import fingerprint
from corvid._json_args import ArgError, from_json, parse_json, to_json
from corvid._schema import Schema, Type
from corvid.stubgen import SchemaError, read_json


def fn(name: str, params: list[str], result: str) -> dict[str, Any]:
    sig = fingerprint("(" + ",".join(params) + ")->" + result)
    return {"name": name, "signature": f"{sig:#06x}", "params": params, "result": result}


POINT = {"name": "point", "layout": "evolvable", "fields": ["i32", "f64", "bytes", "[i32]"]}


def schema(*fns: dict[str, Any], structs: list[Any] | None = None) -> Schema:
    return Schema({"corvid_schema": 1, "functions": list(fns), "structs": structs or []})


def param(type_text: str, structs: list[Any] | None = None) -> Type:
    return schema(fn("f", [type_text], "void"), structs=structs).methods["f"].params[0]


def refused(type_text: str, value: Any, structs: list[Any] | None = None) -> str:
    with pytest.raises(ArgError) as e:
        from_json(param(type_text, structs), value)
    return e.value.describe("argument 2")


def roundtrip(type_text: str, value: Any, structs: list[Any] | None = None) -> Any:
    """JSON -> value -> the codec's bytes -> value -> JSON."""
    t = param(type_text, structs)
    m = schema(fn("f", [type_text], type_text), structs=structs).methods["f"]
    r = m.remote.resolve()
    body = r.encode_args((from_json(t, value),))
    return to_json(m.result, r.decode_result(body))


@pytest.mark.parametrize(
    "t,bad,lo,hi",
    [
        ("u8", 256, 0, 255),
        ("u8", -1, 0, 255),
        ("i8", 128, -128, 127),
        ("i8", -129, -128, 127),
        ("u16", 65536, 0, 65535),
        ("i16", -32769, -32768, 32767),
        ("u32", 1 << 32, 0, (1 << 32) - 1),
        ("i32", 1 << 31, -(1 << 31), (1 << 31) - 1),
        ("u64", 1 << 64, 0, (1 << 64) - 1),
        ("i64", -(1 << 63) - 1, -(1 << 63), (1 << 63) - 1),
    ],
)
def test_integers_are_checked_against_their_width(t: str, bad: int, lo: int, hi: int) -> None:
    assert refused(t, bad) == f"argument 2 ({t}): {bad} is out of range {lo}..{hi}"
    assert from_json(param(t), lo) == lo and from_json(param(t), hi) == hi


def test_an_enum_is_checked_against_its_underlying_type() -> None:
    assert refused("enum color:u8", 300) == "argument 2 (enum color:u8): 300 is out of range 0..255"
    assert roundtrip("enum color:u8", 7) == 7  # values without an enumerator (open enum)


def test_wrong_json_kinds_are_named() -> None:
    assert refused("i32", "5") == 'argument 2 (i32): "5" is a string, not an integer'
    assert refused("i32", True) == "argument 2 (i32): true is a boolean, not an integer"
    assert refused("i32", 2.5) == "argument 2 (i32): 2.5 is a number, not an integer"
    assert "write it without a fraction" in refused("i32", 2.0)
    assert refused("bool", 1) == "argument 2 (bool): 1 is a number, not a boolean"
    assert refused("bytes", None) == "argument 2 (bytes): null is not a string"
    assert refused("f64", "x") == 'argument 2 (f64): "x" is a string, not a number'
    assert refused("f32", 1e39) == "argument 2 (f32): 1e+39 is out of the range of f32"
    assert "not UTF-8 text" in refused("bytes", "\ud800")
    assert "not base64" in refused("bytes", {"base64": "!!"})


def test_bad_json_text() -> None:
    t = param("bytes")
    with pytest.raises(ArgError) as e:
        parse_json("hello", t)
    msg = e.value.describe("argument 1")
    assert msg.startswith("argument 1 (bytes): not JSON (Expecting value")
    assert "'hello'" in msg and """'"hello"'""" in msg  # the hint: quote it
    with pytest.raises(ArgError):
        parse_json("[1,", param("[i32]"))
    assert parse_json('"hello"', t) == "hello"


def test_nested_errors_say_where() -> None:
    bad = [1, 0.5, "p", [2, 1 << 31]]
    assert refused("struct point", bad, [POINT]) == (
        "argument 2 at .f3[1] (i32): 2147483648 is out of range -2147483648..2147483647"
    )
    assert refused("{bytes:u8}", {"a": 1, "b": 256}) == (
        'argument 2 at ["b"] (u8): 256 is out of range 0..255'
    )
    assert refused("?[(u8,bool)]", [[1, True], [2, 3]]) == (
        "argument 2 at [1][1] (bool): 3 is a number, not a boolean"
    )


def test_lengths_and_fields() -> None:
    assert refused("[i8;3]", [1, 2]) == "argument 2 ([i8;3]): 3 element(s) needed, 2 given"
    assert refused("(u8,bytes)", [1]) == "argument 2 ((u8,bytes)): 2 element(s) needed, 1 given"
    assert refused("struct point", [1, 2.0], [POINT]) == (
        "argument 2 (struct point): 4 field(s) needed, 2 given"
    )
    assert refused("struct point", {"f0": 1, "f1": 2.0, "f2": "", "x": 1}, [POINT]) == (
        "argument 2 (struct point): the fields are f0, f1, f2, f3; missing f3; no field 'x'"
    )
    assert "is there twice" in refused("{u16}", [1, 2, 1])
    assert "is there twice" in refused("{i32:bool}", [[1, True], [1, False]])


def test_values_round_trip_through_the_codec() -> None:
    p = [1, 0.5, "p", [2, 3]]
    assert roundtrip("struct point", p, [POINT]) == p
    assert roundtrip("struct point", {"f0": 1, "f1": 0.5, "f2": "p", "f3": [2, 3]}, [POINT]) == p
    assert roundtrip("{bytes:i64}", {"a": 1, "b": -2}) == {"a": 1, "b": -2}
    assert roundtrip("{i32:bytes}", {"5": "x", "-1": "y"}) == {"-1": "y", "5": "x"}
    assert roundtrip("{i32:bytes}", [[5, "x"]]) == {"5": "x"}
    assert roundtrip("{(u8,u8):bool}", [[[1, 2], True]]) == [[[1, 2], True]]
    assert roundtrip("{u16}", [3, 1, 2]) == [1, 2, 3]
    assert roundtrip("?u32", None) is None and roundtrip("?u32", 7) == 7
    assert roundtrip("[i8;3]", [1, -2, 3]) == [1, -2, 3]
    assert roundtrip("(u8,bytes,bool)", [1, "x", True]) == [1, "x", True]
    assert roundtrip("bytes", {"base64": "AP8="}) == {"base64": "AP8="}  # not UTF-8
    assert roundtrip("bytes", "h\u00e9") == "h\u00e9"
    assert roundtrip("f32", 0.1) == 0.1  # the shortest decimal of the f32
    assert roundtrip("u64", (1 << 64) - 1) == (1 << 64) - 1
    assert roundtrip("frozen v3{f32,f32,f32}", [1, 2, 3]) == [1.0, 2.0, 3.0]


def test_variants() -> None:
    t = "<()|i32|bytes>"
    assert roundtrip(t, None) is None
    assert roundtrip(t, 5) == 5
    assert roundtrip(t, "s") == "s"
    assert roundtrip(t, {"index": 2, "value": "5"}) == "5"
    assert "index 3 is not 0..2" in refused(t, {"index": 3, "value": 1})
    assert "none of the alternatives" in refused(t, [1])
    # The same type twice, and nested optionals and variants, keep their shape.
    assert roundtrip("<i32|i32>", {"index": 1, "value": 4}) == 4
    assert roundtrip("?<i32|bytes>", "x") == "x"
    assert roundtrip("??i32", 3) == 3
    assert roundtrip("<<u8|bool>|bytes>", True) is True


def test_schema_errors() -> None:
    bad_sig = {"name": "f", "signature": "0x0001", "params": ["i32"], "result": "i32"}
    with pytest.raises(SchemaError, match="fingerprint"):
        schema(bad_sig)
    with pytest.raises(SchemaError, match="not in the schema's structs"):
        schema(fn("f", ["struct nope"], "void"))
    rec = {"name": "node", "layout": "evolvable", "fields": ["[struct node]"]}
    with pytest.raises(SchemaError, match="recursive"):
        schema(fn("f", ["struct node"], "void"), structs=[rec])
    with pytest.raises(SchemaError, match="unknown type"):
        schema(fn("f", ["int"], "void"))
    with pytest.raises(SchemaError, match="not a corvid schema"):
        Schema({"functions": []})
    with pytest.raises(SchemaError, match="malformed"):
        Schema({"corvid_schema": 1, "functions": [{"name": "f"}]})


def test_nesting_too_deep_is_an_error_not_a_crash() -> None:
    """A schema may come from a server: nesting that would exhaust Python's recursion is a
    SchemaError (or the ValueError of bad JSON), with the text shown cut short."""
    deep = "[" * 5000 + "u8" + "]" * 5000
    with pytest.raises(SchemaError, match="nest more than 64 deep") as e:
        schema(fn("f", [deep], "void"))
    assert len(str(e.value)) < 200
    with pytest.raises(ValueError, match="nested too deeply"):
        read_json("[" * 100000)
    with pytest.raises(ArgError, match="nested too deeply") as a:
        parse_json("[" * 100000, param("[i32]"))
    assert len(str(a.value)) < 200


def test_streams_in_a_schema() -> None:
    s = schema(fn("chat", ["u8", "stream bytes"], "stream [i32]"))
    m = s.methods["chat"]
    assert [a.text for a in m.args] == ["u8"]
    assert m.in_stream is not None and m.in_stream.text == "bytes"
    assert m.out_stream is not None and m.out_stream.text == "[i32]"
    assert json.dumps(to_json(m.out_stream, [1, 2])) == "[1, 2]"
