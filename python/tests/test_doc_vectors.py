"""The test vectors of docs/codec.md and docs/protocol.md, read from the documents at test
time and checked against this implementation (the C++ tests check the same text:
tests/codec/test_vectors_test.cpp, tests/protocol/doc_vectors_test.cpp, signature_doc_test.cpp).
Protocol requests are checked as the client really sends them: a fake server compares each
frame it receives with the doc's block and answers with the doc's response block."""

from __future__ import annotations

import asyncio
import dataclasses
import enum
import re
from typing import Annotated, Any, Optional, Union

import pytest

import corvid
from corvid import Fixed, Monostate, i8, i32, i64, u8, u16, u32
from conftest import ROOT, run
from corvid._frame import (
    HEADER_SIZE,
    make_credit,
    make_error,
    make_ping,
    make_pong,
    make_request,
    make_response,
    make_stream_end,
    parse_header,
)
from corvid import _metadata
from fake_server import item

PROTOCOL = (ROOT / "docs" / "protocol.md").read_text()
CODEC = (ROOT / "docs" / "codec.md").read_text()


def hex_bytes(lines: list[str], commentary: str = "  ") -> bytes:
    """The bytes of a block: each line's tokens before its commentary (protocol.md: after two
    spaces; codec.md groups bytes with two spaces, and comments after three or more)."""
    out = bytearray()
    for line in lines:
        for tok in re.split(commentary, line)[0].split():
            assert len(tok) == 2, f"bad hex token {tok!r} in {line!r}"
            out.append(int(tok, 16))
    return bytes(out)


def protocol_blocks() -> dict[str, bytes]:
    blocks: dict[str, bytes] = {}
    for m in re.finditer(r"```hex (\w+)\n(.*?)```", PROTOCOL, re.S):
        blocks[m.group(1)] = hex_bytes(m.group(2).splitlines())
    return blocks


# --- codec.md ---


class color(enum.IntEnum):
    red = 1
    green = 2


corvid.enum_type(underlying=u8)(color)


@corvid.enum_type(underlying=u8, closed=True)
class shape(enum.IntEnum):
    circle = 0
    square = 1


@dataclasses.dataclass
class point:
    x: i32
    y: float
    tag: str
    v: list[i32]


@dataclasses.dataclass
class request:
    id: u32
    method: str
    payload: Optional[list[u8]]


@corvid.struct(frozen=True)
@dataclasses.dataclass
class point3f:
    x: corvid.f32
    y: corvid.f32
    z: corvid.f32


@corvid.struct(name="user")
@dataclasses.dataclass
class user_v1:
    id: u32
    name: str


@corvid.struct(name="user")
@dataclasses.dataclass
class user_v2:
    id: u32
    name: str
    age: u8 = 18


V = Union[Monostate, i32, str]

# The C++ value text of each row of "Worked examples" -> (Python annotation, value).
WORKED: dict[str, tuple[Any, Any]] = {
    "`true`": (bool, True),
    "`std::uint8_t{200}`": (u8, 200),
    "`std::uint16_t{0x1234}`": (u16, 0x1234),
    "`std::int32_t{-2}`": (i32, -2),
    "`std::int64_t{1}`": (i64, 1),
    "`1.0f`": (corvid.f32, 1.0),
    "`-2.5` (double)": (float, -2.5),
    "`color::green` (`enum class color : std::uint8_t { red = 1, green = 2 }`)": (
        color,
        color.green,
    ),
    '`std::string("")`': (str, ""),
    '`std::string("hi")`': (str, "hi"),
    "`std::string(300, 'a')`": (str, "a" * 300),
    "`std::vector<std::uint16_t>{1, 2, 3}`": (list[u16], [1, 2, 3]),
    "`std::vector<bool>{true, false, true}`": (list[bool], [True, False, True]),
    '`std::vector<std::string>{"a", ""}`': (list[str], ["a", ""]),
    "`std::array<std::int8_t, 3>{1, -1, 2}`": (Annotated[list[i8], Fixed(3)], [1, -1, 2]),
    '`std::map<std::string, std::uint8_t>{{"a", 1}, {"b", 2}}`': (dict[str, u8], {"a": 1, "b": 2}),
    "`std::set<std::uint8_t>{3, 1}`": (set[u8], {3, 1}),
    "`std::optional<std::uint32_t>{}`": (Optional[u32], None),
    "`std::optional<std::uint32_t>{5}`": (Optional[u32], 5),
    "`std::variant<std::monostate, std::int32_t, std::string>{}`": (V, Monostate()),
    "... holding `7`": (V, 7),
    '... holding `std::string("x")`': (V, "x"),
    '`std::tuple<std::uint8_t, std::string, bool>{7, "ab", true}`': (
        tuple[u8, str, bool],
        (7, "ab", True),
    ),
    "`std::pair<std::uint8_t, std::uint16_t>{1, 2}`": (tuple[u8, u16], (1, 2)),
    '`encode_all(out, std::uint8_t{1}, std::string("ok"))`': (tuple[u8, str], (1, "ok")),
}


def table_rows(text: str, heading: str) -> list[tuple[str, str]]:
    section = text.split(heading, 1)[1]
    rows = []
    started = False
    for line in section.splitlines():
        if line.startswith("|"):
            started = True
            cells = [c.strip() for c in line.strip().strip("|").split(" | ")]
            if cells[0] == "value" or set(line.strip()) <= set("-|: "):
                continue
            rows.append((cells[0], cells[1]))
        elif started:
            break
    return rows


def row_bytes(cell: str) -> bytes:
    cell = cell.strip("`")
    if cell == "`ac 02` then 300 × `61`".strip("`"):
        return bytes([0xAC, 0x02]) + b"a" * 300
    return bytes.fromhex(cell.replace("`", ""))


def test_codec_worked_examples_both_ways() -> None:
    rows = table_rows(CODEC, "### Worked examples")
    assert {r[0] for r in rows} == set(WORKED), "docs/codec.md's table and this test differ"
    for text, cell in rows:
        tp, value = WORKED[text]
        want = row_bytes(cell)
        assert corvid.encode(tp, value) == want, text
        assert corvid.decode(tp, want) == value, text


def test_varint_table() -> None:
    rows = table_rows(CODEC, "### Varints")
    assert len(rows) == 7
    for value, cell in rows:
        want = bytes.fromhex(cell.strip("`"))
        assert corvid.encode(u32, 0) == bytes(4)  # (the codec's u32 is fixed-width)
        from corvid._codec import get_varint, varint_bytes

        assert varint_bytes(int(value)) == want
        assert get_varint(want, 0, len(want)) == (int(value), len(want))


def code_examples() -> dict[str, bytes]:
    """Each ```cpp block's last line -> the hex of the plain ``` block right after it."""
    out: dict[str, bytes] = {}
    for m in re.finditer(r"```cpp\n(.*?)```\n```\n(.*?)```", CODEC, re.S):
        out[m.group(1).strip().splitlines()[-1]] = hex_bytes(m.group(2).splitlines(), "   +")
    return out


def test_struct_examples() -> None:
    ex = code_examples()
    assert set(ex) == {
        'point{1, 0.5, "p", {2}}',
        'request{42, "add", std::vector<std::uint8_t>{1, 2}}',
        "point3f{1, 2, 0}",
    }
    cases: dict[str, tuple[Any, Any]] = {
        'point{1, 0.5, "p", {2}}': (point, point(1, 0.5, "p", [2])),
        'request{42, "add", std::vector<std::uint8_t>{1, 2}}': (request, request(42, "add", [1, 2])),
        "point3f{1, 2, 0}": (point3f, point3f(1.0, 2.0, 0.0)),
    }
    for text, (tp, value) in cases.items():
        assert corvid.encode(tp, value) == ex[text], text
        assert corvid.decode(tp, ex[text]) == value, text


def test_evolution_table() -> None:
    rows = dict(table_rows(CODEC, "Two versions of a struct"))
    v1 = bytes.fromhex(rows['`user_v1{7, "al"}`'].strip("`"))
    v2 = bytes.fromhex(rows['`user_v2{7, "al", 30}`'].strip("`"))
    assert corvid.encode(user_v1, user_v1(7, "al")) == v1
    assert corvid.encode(user_v2, user_v2(7, "al", 30)) == v2
    assert corvid.decode(user_v2, v1) == user_v2(7, "al", 18)  # age takes its default
    assert corvid.decode(user_v1, v2) == user_v1(7, "al")  # the 1e is skipped


def test_closed_enum_and_unknown_alternative() -> None:
    assert "`shape::square` is `01`; the byte `02` decodes to `unknown_alternative`" in CODEC
    assert corvid.encode(shape, shape.square) == b"\x01"
    for tp, data in ((shape, b"\x02"), (V, b"\x03\x00")):
        with pytest.raises(corvid.DecodeError) as e:
            corvid.decode(tp, data)
        assert e.value.kind == "unknown_alternative"


# --- protocol.md ---

# The declarations of the fingerprint table's rows (module level: annotations are resolved
# in the module's namespace).
@dataclasses.dataclass
class docsig_point:
    x: i32

corvid.struct(name="docsig::point")(docsig_point)

@corvid.struct(name="docsig::point3f", frozen=True)
@dataclasses.dataclass
class p3:
    x: corvid.f32
    y: corvid.f32
    z: corvid.f32

@corvid.enum_type(name="docsig::shape", underlying=u8)
class shape_e(enum.IntEnum):
    circle = 0

@corvid.enum_type(name="docsig::color")
class color_e(enum.IntEnum):
    red = 0

@corvid.remote(name="echo")
def fp_echo(s: str) -> str: ...
@corvid.remote(name='store')
def fp_store(key: str) -> None: ...
@corvid.remote(name="ns::calc::add")
def fp_add(a: i32, b: i32) -> i32: ...
@corvid.remote(name='move')
def fp_move(p: docsig_point, dx: i32) -> docsig_point: ...
@corvid.remote(name='kinds')
def fp_kinds(
    m: dict[str, i64],
    s: set[u16],
    v: V,
    p: tuple[u8, bool],
    a: Annotated[list[i8], Fixed(3)],
    b: list[bool],
    d: float,
    f: corvid.f32,
    u: corvid.u64,
) -> Optional[list[u8]]: ...
@corvid.remote(name='paint')
def fp_paint(p: p3, s: shape_e) -> color_e: ...
@corvid.remote(name='count_to')
def fp_count_to(n: i32) -> corvid.Stream[i32]: ...
@corvid.remote(name='upload')
def fp_upload(chunks: corvid.Stream[bytes]) -> corvid.u64: ...
@corvid.remote(name='chat')
def fp_chat(first: str, rest: corvid.Stream[str]) -> corvid.Stream[str]: ...
@corvid.remote(name='ping')
def fp_ping() -> None: ...




def test_function_ids() -> None:
    known = re.search(r"Known values: (.*?)\.\n", PROTOCOL, re.S)
    assert known is not None
    pairs = re.findall(r'`"(.*?)"` → `0x([0-9a-f]{8})`', known.group(1))
    assert len(pairs) == 5
    for name, h in pairs:
        assert corvid.fnv1a32(name) == int(h, 16), name


def test_fingerprint_table() -> None:
    block = re.search(r"```text fingerprints\n(.*?)```", PROTOCOL, re.S)
    assert block is not None
    rows = [re.split(r"  +", line, maxsplit=2) for line in block.group(1).splitlines()]
    assert len(rows) == 10
    for canonical, fp, _decl in rows:
        assert corvid.fingerprint(canonical) == int(fp, 16), canonical

    declared = [fp_echo, fp_store, fp_add, fp_move, fp_kinds, fp_paint, fp_count_to, fp_upload,
                fp_chat, fp_ping]
    for f, (canonical, fp, _decl) in zip(declared, rows):
        assert f.canonical_signature == canonical, f.name
        assert f.signature == int(fp, 16), f.name


@corvid.remote
def echo(s: str) -> str: ...
@corvid.remote
def store(key: str) -> None: ...
@corvid.remote(name="ns::calc::add")
def calc_add(a: i32, b: i32) -> i32: ...
@corvid.remote(name="ns::calc::mod")
def calc_mod(a: i32, b: i32) -> i32: ...
@corvid.remote(name="ns::calc::div")
def calc_div(a: i32, b: i32) -> i32: ...
@corvid.remote(name="echo", signature=0)
def broken_echo() -> str: ...
@corvid.remote(name="chat")
def chat(messages: corvid.Stream[str]) -> corvid.Stream[str]: ...


def test_protocol_frames_as_the_builders_write_and_the_parser_reads_them() -> None:
    blocks = protocol_blocks()
    stream = 0x0000000100000007
    assert make_ping(0) == blocks["ping_frame"]
    assert make_pong(0, reactors=2) == blocks["pong_frame"]
    assert parse_header(blocks["pong_frame"]).reactors == 2
    assert make_credit(stream, 65536) == blocks["stream_credit_frame"]
    assert parse_header(blocks["stream_credit_frame"]).credit == 65536
    assert item(stream, corvid.encode(str, "re: a")) == blocks["stream_item_frame"]
    assert make_stream_end(stream) == blocks["stream_end_frame"]
    error = blocks["protocol_error_response"]
    body_length = len(error) - HEADER_SIZE
    assert make_error(0, corvid.ErrorCode.PROTOCOL_ERROR, body_length) == error[:HEADER_SIZE]
    request = blocks["echo_request"]
    echo = parse_header(request)
    assert echo.function_id == corvid.fnv1a32("echo") and echo.timeout_ms == 0
    assert request_header(echo.request_id, echo.body_length, echo.signature) == request[:32]
    # Call metadata: the blocks as encode writes them and decode reads them.
    md_request, md_response = blocks["metadata_echo_request"], blocks["metadata_echo_response"]
    tenant = _metadata.encode(_metadata.normalize({"tenant": "acme"}))
    assert md_request[HEADER_SIZE:] == tenant + corvid.encode(str, "hello")
    assert _metadata.decode(md_response[HEADER_SIZE:]) == ([("served-by", b"a1")], 22)
    head = parse_header(md_request)
    assert request_header(head.request_id, head.body_length, head.signature,
                          flags=0x08) == md_request[:HEADER_SIZE]


def test_protocol_frames_as_the_client_sends_and_reads_them() -> None:
    blocks = protocol_blocks()
    used: set[str] = set()

    def block(name: str) -> bytes:
        used.add(name)
        return blocks[name]

    async def main() -> None:
        async def serve(r: asyncio.StreamReader, w: asyncio.StreamWriter) -> None:
            async def frame() -> bytes:
                head = await r.readexactly(32)
                n = int.from_bytes(head[20:24], "little") + int.from_bytes(head[24:28], "little")
                return head + await r.readexactly(n)

            async def exchange(request: str | None, response: str) -> None:
                got = await frame()
                if request is not None:
                    assert got == block(request), request
                w.write(block(response))

            await exchange("echo_request", "echo_response")
            await exchange("store_request", "store_response")
            await exchange("add_request", "add_response")
            await exchange(None, "not_found_response")
            await exchange(None, "handler_error_response")
            await exchange(None, "bad_request_response")
            await exchange(None, "too_large_response")
            # The client refuses to send such a request; its header, built by the same code:
            too_large = request_header(0x0000000100000006, body_length=(64 << 20) + 1)
            assert too_large == block("too_large_request")
            # The stream: we grant 64 KiB, the client writes "a", we answer "re: a".
            await frame()  # chat's request
            w.write(block("stream_credit_frame"))
            written = await frame()
            assert written[32:] == b"\x01a"
            w.write(block("stream_item_frame"))
            assert await frame() == block("stream_end_frame")
            w.write(make_response(0x0000000100000007))
            await exchange("traced_echo_request", "traced_echo_response")
            # The client has no way to set an unknown flag: its plain echo("hello") is the
            # doc's request but for the version and flags bytes, and the header with those
            # flags, built by the same code, is the doc's.
            want = block("unknown_flag_request")
            assert request_header(0x0000000100000009, flags=0x12, signature=0xC3F0,
                                  body_length=6) == want[:32]
            got = await frame()
            assert got[:2] + b"\x03" + got[3:4] + b"\x12" + got[5:] == want
            w.write(block("unknown_flag_response"))
            await exchange("metadata_echo_request", "metadata_echo_response")
            assert await frame() == block("ping_frame")  # a heartbeat
            w.write(block("pong_frame"))
            w.write(block("protocol_error_response"))
            await w.drain()
            await r.read()

        srv = await asyncio.start_server(serve, "127.0.0.1", 0)
        port = srv.sockets[0].getsockname()[1]
        c = await corvid.connect(f"127.0.0.1:{port}", heartbeat_interval=None)
        assert await c.call(echo, "hello") == "hello"
        assert await c.call(store, "k1", attachment=b"\xde\xad\xbe\xef") is None
        assert await c.call(calc_add, 1, 2) == 3
        for f, args, code, message in [
            (calc_mod, (1, 2), 3, "no handler registered for function id 0x71574c1d"),
            (calc_div, (1, 0), 7, "division by zero"),
            (broken_echo, (), 4, "arguments do not match the parameters of echo (truncated)"),
            (echo, ("big",), 6, "frame of 67108865 bytes exceeds the server limit of 67108864"),
        ]:
            with pytest.raises(corvid.RpcError) as e:
                await c.call(f, *args)
            assert (e.value.code, e.value.message) == (code, message)
        async with c.open_stream(chat) as s:
            await s.write("a")
            assert await s.__anext__() == "re: a"
            await s.done_writing()
            assert [x async for x in s] == []
        with corvid.trace_scope("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"):
            assert await c.call(echo, "hello") == "hello"
        with pytest.raises(corvid.RpcError) as e:
            await c.call(echo, "hello")
        assert (e.value.code, e.value.message) == (
            4, "unknown must-understand flag bit 0x02 (flags 0x12)")
        c._next_id = 0x0000000100000010  # the doc's metadata vectors' id
        got = await c.call_reply(echo, "hello", metadata=[("tenant", "acme")])
        assert (got.value, got.metadata) == ("hello", [("served-by", b"a1")])
        c.heartbeat_interval = 0.01  # now ping, as a heartbeat does after silence
        c._conn.heartbeat.schedule()  # type: ignore[union-attr]
        err = await c.wait_closed()
        assert err is not None
        assert (err.code, err.message) == (9, "bad magic (not a corvid stream)")
        srv.close()

    run(main())
    assert used == set(blocks), f"blocks of docs/protocol.md not checked: {set(blocks) - used}"


def request_header(rid: int, body_length: int, signature: int = 0, flags: int = 0) -> bytes:
    """An echo request's header, as the client builds it."""
    head = bytearray(HEADER_SIZE)
    make_request(head, rid, function_id=corvid.fnv1a32("echo"), signature=signature,
                 body_length=body_length, flags=flags)
    return bytes(head)
