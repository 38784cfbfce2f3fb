"""The 32-byte frame header (docs/protocol.md, "Frame header") and FNV-1a function ids.

Frames are built through one builder per kind, named as the C++ ones
(src/protocol/frames.hpp), each setting only the fields its kind uses, and read through
parse_header(), whose FrameHeader names offsets 16 and 28 by what they mean for the frame's
kind (docs/protocol.md, "Header fields by frame kind")."""

from __future__ import annotations

import struct
from typing import NamedTuple

MAGIC = b"CV"
# Frames are sent as version 2 unless their flags carry a must-understand bit: those go out as
# version 3, which a version-2-only peer refuses instead of misreading. Versions 2 and 3 are
# both accepted, and the must-understand rule applies to both.
base_version = 2
current_version = 3
REQUEST, RESPONSE, CANCEL, PING, PONG, RDMA_SETUP, STREAM_ITEM, STREAM_END, STREAM_CREDIT = range(
    1, 10
)
MAX_TYPE = STREAM_CREDIT
FLAG_TRACE = 1
# Requests and responses: the body holds a call metadata block (after a request's trace
# context; docs/protocol.md, "Call metadata"). Must-understand.
FLAG_METADATA = 0x08
# Requests, responses and stream items: the payload is zstd-compressed (docs/protocol.md,
# "Compression"). Must-understand.
FLAG_COMPRESSED = 0x04
# Optional: on a request, the client accepts compressed responses and items; on a response,
# the server accepts compressed requests and items.
FLAG_ACCEPTS_COMPRESSED = 0x10
TRACE_CONTEXT_SIZE = 25  # what a traced request's body starts with
# Flags bits 0-3: a receiver that does not know a set bit refuses the frame. Bits 4-7 are
# optional: unknown ones are ignored.
must_understand_flags = 0x0F
HEADER_SIZE = 32
DEFAULT_MAX_FRAME_SIZE = 64 << 20
INITIAL_STREAM_CREDIT = 262_144

# magic(2) version type flags status signature(u16) id(u64) offset16 body att offset28
HEADER = struct.Struct("<2sBBBBHQIIII")


class FrameError(Exception):
    """The byte stream is not corvid frames: the connection cannot go on."""


class FrameHeader(NamedTuple):
    """A header as parse_header() read it: the wire's fields in their order. Offsets 16 and
    28 mean one thing per frame kind: read them through function_id and timeout_ms
    (requests), reactors (pongs) and credit (stream credits), which are 0 for every other
    kind, as a receiver ignores them there."""

    magic: bytes
    version: int
    type: int
    flags: int
    status: int
    signature: int
    request_id: int
    offset16: int
    body_length: int
    attachment_length: int
    offset28: int

    @property
    def function_id(self) -> int:
        return self.offset16 if self.type == REQUEST else 0

    @property
    def timeout_ms(self) -> int:
        """The caller's remaining time budget; 0: none."""
        return self.offset28 if self.type == REQUEST else 0

    @property
    def reactors(self) -> int:
        """A server's reactor count; 0: not stated."""
        return self.offset16 if self.type == PONG else 0

    @property
    def credit(self) -> int:
        """The bytes granted to the stream's sender."""
        return self.offset28 if self.type == STREAM_CREDIT else 0

    @property
    def payload_size(self) -> int:
        return self.body_length + self.attachment_length


def parse_header(
    data: bytes | bytearray | memoryview,
    offset: int = 0,
    max_payload: int = DEFAULT_MAX_FRAME_SIZE,
) -> FrameHeader:
    """The header at data[offset:offset + 32], checked as the C++ decode_header() checks it;
    raises FrameError."""
    have = len(data) - offset
    if have < HEADER_SIZE:
        raise FrameError(f"short frame header: {max(have, 0)} of {HEADER_SIZE} bytes")
    fields = HEADER.unpack_from(data, offset)
    magic, version, type_, _, _, _, _, _, body_length, attachment_length, _ = fields
    if magic != MAGIC:
        raise FrameError("bad magic (not a corvid stream)")
    if version != base_version and version != current_version:
        raise FrameError(
            "unsupported protocol version (this build speaks corvid protocol "
            f"versions {base_version} and {current_version})"
        )
    if not REQUEST <= type_ <= MAX_TYPE:
        raise FrameError(f"bad frame type {type_}")
    total = body_length + attachment_length
    if total > max_payload:
        raise FrameError(f"frame of {total} bytes exceeds the client limit of {max_payload}")
    # (tuple.__new__ rather than FrameHeader._make: one call fewer, on every frame read)
    return tuple.__new__(FrameHeader, fields)


def version_for(flags: int) -> int:
    """The version byte a frame with these flags is sent with."""
    return current_version if flags & must_understand_flags else base_version


def _pack(
    type_: int,
    request_id: int,
    *,
    status: int = 0,
    offset16: int = 0,
    body_length: int = 0,
    attachment_length: int = 0,
    offset28: int = 0,
) -> bytes:
    """A header whose flags and signature are 0: every kind but a request."""
    return HEADER.pack(
        MAGIC,
        base_version,
        type_,
        0,
        status,
        0,
        request_id,
        offset16,
        body_length,
        attachment_length,
        offset28,
    )


# Requests and stream items are written over the first 32 bytes of a buffer the payload was
# encoded into behind them, so that the payload is never copied to put a header in front.
def make_request(
    frame: bytearray,
    request_id: int,
    *,
    function_id: int,
    signature: int,
    body_length: int,
    attachment_length: int = 0,
    timeout_ms: int = 0,
    flags: int = 0,
) -> None:
    HEADER.pack_into(
        frame,
        0,
        MAGIC,
        version_for(flags),
        REQUEST,
        flags,
        0,
        signature,
        request_id,
        function_id,
        body_length,
        attachment_length,
        timeout_ms,
    )


def make_item(frame: bytearray, stream: int, body_length: int, flags: int = 0) -> None:
    HEADER.pack_into(
        frame,
        0,
        MAGIC,
        version_for(flags),
        STREAM_ITEM,
        flags,
        0,
        0,
        stream,
        0,
        body_length,
        0,
        0,
    )


def make_response(request_id: int, body_length: int = 0, attachment_length: int = 0) -> bytes:
    return _pack(
        RESPONSE, request_id, body_length=body_length, attachment_length=attachment_length
    )


def make_error(request_id: int, status: int, body_length: int) -> bytes:
    """An error reply: its body is the codec string of the message."""
    return _pack(RESPONSE, request_id, status=status, body_length=body_length)


def make_stream_end(stream: int) -> bytes:
    return _pack(STREAM_END, stream)


def make_credit(stream: int, credit: int) -> bytes:
    return _pack(STREAM_CREDIT, stream, offset28=credit)


def make_ping(request_id: int) -> bytes:
    return _pack(PING, request_id)


def make_pong(request_id: int, reactors: int = 0) -> bytes:
    """A server states its reactor count; a client, 0."""
    return _pack(PONG, request_id, offset16=reactors)


def make_cancel(request_id: int) -> bytes:
    return _pack(CANCEL, request_id)


def make_rdma_setup(body_length: int, status: int = 0) -> bytes:
    return _pack(RDMA_SETUP, 0, status=status, body_length=body_length)


def unknown_must_understand(flags: int, known: int) -> str | None:
    """Why a frame with these flags is refused, when it has a must-understand bit outside
    `known` (those this receiver understands for the frame's kind); None when it has none."""
    unknown = flags & must_understand_flags & ~known
    if not unknown:
        return None
    return f"unknown must-understand flag bit {unknown & -unknown:#04x} (flags {flags:#04x})"


def fnv1a32(name: str | bytes) -> int:
    """A function's id: FNV-1a 32 of its qualified name."""
    h = 0x811C9DC5
    for b in name.encode() if isinstance(name, str) else name:
        h = ((h ^ b) * 0x01000193) & 0xFFFFFFFF
    return h


def fingerprint(canonical_signature: str) -> int:
    """The 16-bit signature fingerprint of a canonical signature "(P1,P2)->R"
    (docs/protocol.md, "Signature fingerprints"): FNV-1a 64, folded, never 0."""
    h = 0xCBF29CE484222325
    for b in canonical_signature.encode():
        h = ((h ^ b) * 0x100000001B3) & 0xFFFFFFFFFFFFFFFF
    x = h ^ (h >> 32)
    x ^= x >> 16
    return (x & 0xFFFF) or 1
