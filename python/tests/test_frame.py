"""The frame header on its own (corvid._frame, corvid._incoming): each kind's builder writes
the fields of docs/protocol.md, "Header fields by frame kind", and nothing else; parsing
gives them back under the kind's names; a header that is short or not corvid's is a
FrameError that says why, never another exception."""

from __future__ import annotations

from typing import Any

import pytest

from corvid import ErrorCode
from corvid._frame import (
    CANCEL,
    DEFAULT_MAX_FRAME_SIZE,
    FLAG_TRACE,
    HEADER,
    HEADER_SIZE,
    PING,
    PONG,
    RDMA_SETUP,
    REQUEST,
    RESPONSE,
    STREAM_CREDIT,
    STREAM_END,
    STREAM_ITEM,
    FrameError,
    FrameHeader,
    make_cancel,
    make_credit,
    make_error,
    make_ping,
    make_pong,
    make_rdma_setup,
    make_request,
    make_response,
    make_stream_end,
    parse_header,
)
from corvid._incoming import READ_SIZE, Incoming
from fake_server import item

RID = 0x0000000100000007


def request(**fields: Any) -> bytes:
    head = bytearray(HEADER_SIZE)
    make_request(head, RID, **fields)
    return bytes(head)


# Each kind's frame, and its header as the wire has it: magic, version, type, flags, status,
# signature, request id, offset 16, body length, attachment length, offset 28.
KINDS: list[tuple[str, bytes, tuple[Any, ...]]] = [
    (
        "request",
        request(function_id=0xD49DD484, signature=0xC3F0, body_length=6, attachment_length=4,
                timeout_ms=1500),
        (b"CV", 2, REQUEST, 0, 0, 0xC3F0, RID, 0xD49DD484, 6, 4, 1500),
    ),
    (
        "traced request",
        request(function_id=1, signature=2, body_length=31, flags=FLAG_TRACE),
        (b"CV", 3, REQUEST, FLAG_TRACE, 0, 2, RID, 1, 31, 0, 0),
    ),
    ("response", make_response(RID, 5, 3), (b"CV", 2, RESPONSE, 0, 0, 0, RID, 0, 5, 3, 0)),
    (
        "error",
        make_error(RID, ErrorCode.HANDLER_ERROR, 17),
        (b"CV", 2, RESPONSE, 0, 7, 0, RID, 0, 17, 0, 0),
    ),
    ("item", item(RID, b"\x01a")[:HEADER_SIZE], (b"CV", 2, STREAM_ITEM, 0, 0, 0, RID, 0, 2, 0, 0)),
    ("stream_end", make_stream_end(RID), (b"CV", 2, STREAM_END, 0, 0, 0, RID, 0, 0, 0, 0)),
    (
        "credit",
        make_credit(RID, 65536),
        (b"CV", 2, STREAM_CREDIT, 0, 0, 0, RID, 0, 0, 0, 65536),
    ),
    ("ping", make_ping(RID), (b"CV", 2, PING, 0, 0, 0, RID, 0, 0, 0, 0)),
    ("pong", make_pong(RID, 6), (b"CV", 2, PONG, 0, 0, 0, RID, 6, 0, 0, 0)),
    ("cancel", make_cancel(RID), (b"CV", 2, CANCEL, 0, 0, 0, RID, 0, 0, 0, 0)),
    ("rdma_setup", make_rdma_setup(40, 12), (b"CV", 2, RDMA_SETUP, 0, 12, 0, 0, 0, 40, 0, 0)),
]
# What each kind's offsets 16 and 28 read as: every other name reads 0.
MEANINGS = {
    "request": {"function_id": 0xD49DD484, "timeout_ms": 1500},
    "traced request": {"function_id": 1},
    "credit": {"credit": 65536},
    "pong": {"reactors": 6},
}


@pytest.mark.parametrize("name,frame,wire", KINDS, ids=[k[0] for k in KINDS])
def test_each_kind_round_trips(name: str, frame: bytes, wire: tuple[Any, ...]) -> None:
    assert len(frame) == HEADER_SIZE
    assert HEADER.unpack(frame) == wire
    head = parse_header(frame)
    assert head == wire
    assert head.payload_size == wire[8] + wire[9]
    meant = MEANINGS.get(name, {})
    for field in ("function_id", "timeout_ms", "reactors", "credit"):
        assert getattr(head, field) == meant.get(field, 0), field


def test_offsets_16_and_28_mean_nothing_in_other_kinds() -> None:
    # A receiver ignores them there (docs/protocol.md): a response's are not a function id,
    # a timeout, a reactor count or a credit.
    head = parse_header(HEADER.pack(b"CV", 2, RESPONSE, 0, 0, 0, RID, 99, 0, 0, 77))
    assert (head.offset16, head.offset28) == (99, 77)
    assert (head.function_id, head.timeout_ms, head.reactors, head.credit) == (0, 0, 0, 0)
    # A pong's offset 28 is no credit, a credit's offset 16 no reactor count.
    assert parse_header(HEADER.pack(b"CV", 2, PONG, 0, 0, 0, 0, 2, 0, 0, 5)).credit == 0
    assert parse_header(HEADER.pack(b"CV", 2, STREAM_CREDIT, 0, 0, 0, 0, 2, 0, 0, 5)).reactors == 0


def test_a_header_is_read_at_an_offset_of_any_buffer() -> None:
    data = b"\xff" * 5 + make_pong(9, 3) + b"rest"
    for buf in (data, bytearray(data), memoryview(data)):
        head = parse_header(buf, 5)
        assert (head.type, head.request_id, head.reactors) == (PONG, 9, 3)


BAD = [
    ("empty", b"", "short frame header: 0 of 32 bytes"),
    ("short", make_ping(1)[:31], "short frame header: 31 of 32 bytes"),
    ("bad magic", b"HTTP/1.1 200 OK\r\n" + bytes(15), "bad magic (not a corvid stream)"),
    (
        "version 1",
        HEADER.pack(b"CV", 1, RESPONSE, 0, 0, 0, RID, 0, 0, 0, 0),
        "unsupported protocol version (this build speaks corvid protocol versions 2 and 3)",
    ),
    (
        "version 4",
        HEADER.pack(b"CV", 4, RESPONSE, 0, 0, 0, RID, 0, 0, 0, 0),
        "unsupported protocol version",
    ),
    ("type 0", HEADER.pack(b"CV", 2, 0, 0, 0, 0, RID, 0, 0, 0, 0), "bad frame type 0"),
    ("type 10", HEADER.pack(b"CV", 2, 10, 0, 0, 0, RID, 0, 0, 0, 0), "bad frame type 10"),
    (
        "too large",
        make_response(RID, DEFAULT_MAX_FRAME_SIZE, 1),
        f"frame of {DEFAULT_MAX_FRAME_SIZE + 1} bytes exceeds the client limit of "
        f"{DEFAULT_MAX_FRAME_SIZE}",
    ),
    (
        "4 GiB twice",
        make_response(RID, 0xFFFFFFFF, 0xFFFFFFFF),
        "exceeds the client limit",
    ),
]


@pytest.mark.parametrize("name,data,why", BAD, ids=[b[0] for b in BAD])
def test_a_bad_header_is_a_frame_error(name: str, data: bytes, why: str) -> None:
    with pytest.raises(FrameError) as e:
        parse_header(data)
    assert why in str(e.value)


def test_the_payload_limit_is_the_callers() -> None:
    frame = make_response(RID, 1000, 24)
    assert parse_header(frame, max_payload=1024).payload_size == 1024
    with pytest.raises(FrameError, match="of 1025 bytes exceeds the client limit of 1024"):
        parse_header(make_response(RID, 1000, 25), max_payload=1024)
    with pytest.raises(FrameError, match="short frame header: 0 of 32"):
        parse_header(frame, 40)  # past the end


# --- the reader: frames cut from whatever the socket hands over ---

Delivered = tuple[FrameHeader, bytes, bytes, bool]


def feed(incoming: Incoming, data: bytes, step: int) -> list[Delivered]:
    got: list[Delivered] = []

    def deliver(head: FrameHeader, body: memoryview, att: memoryview, owned: bool) -> bool:
        got.append((head, bytes(body), bytes(att), owned))
        return True

    for i in range(0, len(data), step):
        piece = data[i : i + step]
        while piece:
            buf = incoming.get_buffer()
            n = min(len(buf), len(piece))
            buf[:n] = piece[:n]
            piece = piece[n:]
            incoming.received(n, deliver)
    return got


def test_the_reader_cuts_frames_however_they_arrive() -> None:
    data = make_response(5, 4, 2) + b"bodyat" + make_pong(0, 8) + item(6, b"\x01x")
    for step in (1, 7, 32, len(data)):
        got = feed(Incoming(DEFAULT_MAX_FRAME_SIZE), data, step)
        assert [(h.type, h.request_id, b, a) for h, b, a, _ in got] == [
            (RESPONSE, 5, b"body", b"at"),
            (PONG, 0, b"", b""),
            (STREAM_ITEM, 6, b"\x01x", b""),
        ]
        assert got[1][0].reactors == 8


def test_the_reader_gives_a_frame_larger_than_its_buffer_a_buffer_of_its_own() -> None:
    body = bytes(range(256)) * (READ_SIZE // 256 + 1)
    data = make_ping(1) + make_response(2, len(body), 3) + body + b"att" + make_ping(3)
    got = feed(Incoming(DEFAULT_MAX_FRAME_SIZE), data, 65536)
    assert [(h.type, h.request_id) for h, *_ in got] == [(PING, 1), (RESPONSE, 2), (PING, 3)]
    assert got[1][1:] == (body, b"att", True)
    assert not got[0][3] and not got[2][3]


def test_the_reader_refuses_a_bad_header_before_its_payload() -> None:
    incoming = Incoming(1024)
    with pytest.raises(FrameError, match="exceeds the client limit of 1024"):
        feed(incoming, make_response(1, 2048), 32)
    with pytest.raises(FrameError, match="bad magic"):
        feed(Incoming(1024), b"GET / HTTP/1.1\r\n" * 2, 32)
