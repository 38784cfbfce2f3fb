"""The 32-byte frame header (docs/protocol.md, "Frame header") and FNV-1a function ids."""

from __future__ import annotations

import struct

MAGIC = b"CV"
VERSION = 2
REQUEST, RESPONSE, CANCEL, PING, PONG, RDMA_SETUP, STREAM_ITEM, STREAM_END, STREAM_CREDIT = range(
    1, 10
)
FLAG_TRACE = 1
HEADER_SIZE = 32
DEFAULT_MAX_FRAME_SIZE = 64 << 20
INITIAL_STREAM_CREDIT = 262_144

# magic(2) version type flags status signature(u16) id(u64) function(u32) body att timeout
HEADER = struct.Struct("<2sBBBBHQIIII")
pack_header = HEADER.pack
unpack_header = HEADER.unpack_from


def header(
    type_: int,
    request_id: int,
    *,
    flags: int = 0,
    status: int = 0,
    signature: int = 0,
    function_id: int = 0,
    body_len: int = 0,
    attachment_len: int = 0,
    timeout_ms: int = 0,
) -> bytes:
    return pack_header(
        MAGIC,
        VERSION,
        type_,
        flags,
        status,
        signature,
        request_id,
        function_id,
        body_len,
        attachment_len,
        timeout_ms,
    )


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
