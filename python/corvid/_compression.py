"""Per-message zstd (docs/protocol.md, "Compression"), with the `zstandard` package where it
is installed. Without it the client neither asks for compression nor is sent a compressed
frame: `available` is False and everything else works as before.

A compressed payload is an 8-byte head (the body and attachment lengths it inflates to, u32
LE each) and one zstd frame of the body followed by the attachment. Inflating reads the
declared lengths first, refuses them over the frame limit, and never produces more than they
declare: a payload that would inflate to more, or to less, is refused."""

from __future__ import annotations

import io
import struct
from typing import Any

zstd: Any
try:
    import zstandard as zstd
except ImportError:  # pragma: no cover - depends on the environment
    zstd = None

HEAD = struct.Struct("<II")
HEAD_SIZE = HEAD.size


def available() -> bool:
    return zstd is not None


class CompressionError(Exception):
    """A compressed frame that cannot be believed (its message says why)."""


def deflate(body: bytes | bytearray | memoryview, attachment: bytes, level: int) -> bytes | None:
    """The compressed payload of `body` + `attachment`, or None when it would not be smaller."""
    total = len(body) + len(attachment)
    c = zstd.ZstdCompressor(level=level)
    packed: bytes = c.compress(bytes(body) + attachment) if attachment else c.compress(bytes(body))
    if HEAD_SIZE + len(packed) >= total:
        return None
    return HEAD.pack(len(body), len(attachment)) + packed


def declared(payload: memoryview, max_frame: int) -> tuple[int, int]:
    """The lengths a compressed payload declares, checked against the frame limit."""
    if len(payload) < HEAD_SIZE:
        raise CompressionError("a compressed frame shorter than its 8-byte head")
    body, att = HEAD.unpack_from(payload)
    if body + att > max_frame:
        raise CompressionError(
            f"a compressed frame declares {body + att} bytes inflated, "
            f"over max_frame_size {max_frame}"
        )
    return body, att


def inflate(payload: memoryview, max_frame: int) -> tuple[bytes, bytes]:
    """The body and attachment a compressed payload stands for."""
    body_len, att_len = declared(payload, max_frame)
    total = body_len + att_len
    if zstd is None:
        raise CompressionError("a compressed frame, and no zstandard package to inflate it")
    try:
        reader = zstd.ZstdDecompressor().stream_reader(io.BytesIO(payload[HEAD_SIZE:]))
        out: bytes = reader.read(total + 1)  # one byte more tells "more than declared"
        while len(out) <= total:
            more: bytes = reader.read(total + 1 - len(out))
            if not more:
                break
            out += more
    except zstd.ZstdError as e:
        raise CompressionError(f"a compressed payload does not inflate: {e}") from None
    if len(out) > total:
        raise CompressionError(
            f"a compressed payload inflates to more than its declared {total} bytes"
        )
    if len(out) != total:
        raise CompressionError(
            f"a compressed payload inflates to {len(out)} bytes, not its declared {total}"
        )
    return out[:body_len], out[body_len:]
