"""The 32-byte frame header (docs/protocol.md, "Frame header") and FNV-1a function ids."""

from __future__ import annotations

import struct

MAGIC = b"CV"
# Frames are sent as version 2 unless their flags carry a must-understand bit: those go out as
# version 3, which a version-2-only peer refuses instead of misreading. Versions 2 and 3 are
# both accepted, and the must-understand rule applies to both.
base_version = 2
current_version = 3
REQUEST, RESPONSE, CANCEL, PING, PONG, RDMA_SETUP, STREAM_ITEM, STREAM_END, STREAM_CREDIT = range(
    1, 10
)
FLAG_TRACE = 1
TRACE_CONTEXT_SIZE = 25  # what a traced request's body starts with
# Flags bits 0-3: a receiver that does not know a set bit refuses the frame. Bits 4-7 are
# optional: unknown ones are ignored.
must_understand_flags = 0x0F
HEADER_SIZE = 32
DEFAULT_MAX_FRAME_SIZE = 64 << 20
INITIAL_STREAM_CREDIT = 262_144

# magic(2) version type flags status signature(u16) id(u64) function(u32) body att timeout
HEADER = struct.Struct("<2sBBBBHQIIII")
pack_header = HEADER.pack
unpack_header = HEADER.unpack_from
pack_header_into = HEADER.pack_into


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
        version_for(flags),
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


def header_into(
    frame: bytearray,
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
) -> None:
    """As header(), written over the first 32 bytes of `frame` (whose payload follows them:
    no copy of the payload to put a header in front of it)."""
    pack_header_into(
        frame,
        0,
        MAGIC,
        version_for(flags),
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


def version_for(flags: int) -> int:
    """The version byte a frame with these flags is sent with."""
    return current_version if flags & must_understand_flags else base_version


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
