"""Call metadata (docs/protocol.md, "Call metadata"): ordered key/value pairs a call carries
beside its arguments (a bearer token, a tenant id), and a reply beside its value. With
flag_metadata set, the body starts (after a request's trace context) with a block
    u32 entry bytes, u16 count, then `count` entries: u8 key length, key, u32 value length,
    value
all little-endian, the entry bytes counting the entries only. Keys are lowercase ASCII tokens
of 1-255 bytes (a-z 0-9 - _ .); values are bytes. A key may repeat; order is kept."""

from __future__ import annotations

import re
import struct
from typing import Iterable, Mapping, Union

from ._codec import Buffer

HEAD_SIZE = 6
MAX_ENTRIES = 64  # client_config::max_metadata_entries' default
MAX_BYTES = 8192  # the whole block, its head included: client_config::max_metadata_bytes
MAX_VALUE = 0xFFFFFFFF

_HEAD = struct.Struct("<IH")
_U32 = struct.Struct("<I")
_KEY = re.compile(rb"[a-z0-9_.\-]{1,255}")

Value = Union[str, bytes]
# What a caller passes as `metadata=`: pairs (keys may repeat), or a mapping.
MetadataArg = Union[Mapping[str, Value], Iterable[tuple[str, Value]]]
# Metadata as this package hands it back and keeps it: (key, value) in their order.
Metadata = list[tuple[str, bytes]]


class MetadataError(Exception):
    """A reply's metadata block that is malformed or over the client's limits."""


def is_key(key: bytes) -> bool:
    return _KEY.fullmatch(key) is not None


def normalize(md: MetadataArg | None) -> Metadata:
    """`md` as checked (key, bytes value) pairs; raises ValueError on a key that is not a
    token or a value that is not str or bytes."""
    if md is None:
        return []
    pairs = md.items() if isinstance(md, Mapping) else md
    out: Metadata = []
    for pair in pairs:
        try:
            if isinstance(pair, (str, bytes)):
                raise TypeError  # "kv" would unpack as ("k", "v")
            key, value = pair
        except (TypeError, ValueError):
            raise ValueError(f"metadata entry {pair!r} is not a (key, value) pair") from None
        if not isinstance(key, str) or not is_key(key.encode("ascii", "replace")):
            raise ValueError(
                f"metadata key {key!r} is not a lowercase token of 1-255 bytes "
                "(a-z, 0-9, '-', '_', '.')"
            )
        if isinstance(value, str):
            value = value.encode()
        elif isinstance(value, (bytes, bytearray, memoryview)):
            value = bytes(value)
        else:
            raise ValueError(
                f"metadata value of {key!r} is {type(value).__name__}, not str or bytes"
            )
        if len(value) > MAX_VALUE:
            raise ValueError(f"metadata value of {key!r} is over 4 GiB")
        out.append((key, value))
    return out


def encode(md: Metadata) -> bytes:
    """The wire block of checked pairs (see normalize)."""
    parts = [b""]
    for key, value in md:
        k = key.encode()
        parts.append(bytes((len(k),)) + k + _U32.pack(len(value)))
        parts.append(value)
    entries = b"".join(parts)
    if len(md) > 0xFFFF or len(entries) > MAX_VALUE:
        raise ValueError(f"{len(md)} metadata entries of {len(entries)} bytes do not fit a block")
    return _HEAD.pack(len(entries), len(md)) + entries


def decode(
    body: Buffer, max_entries: int = MAX_ENTRIES, max_bytes: int = MAX_BYTES
) -> tuple[Metadata, int]:
    """The block at the front of `body` and the bytes it took; raises MetadataError. The
    limits are judged from the head alone, before any entry is read."""
    n = len(body)
    if n < HEAD_SIZE:
        raise MetadataError(f"a metadata block of {n} bytes is shorter than its head")
    entry_bytes, count = _HEAD.unpack_from(body, 0)
    if HEAD_SIZE + entry_bytes > max_bytes:
        raise MetadataError(
            f"reply metadata of {HEAD_SIZE + entry_bytes} bytes exceeds the limit of {max_bytes}"
        )
    if count > max_entries:
        raise MetadataError(
            f"reply metadata of {count} entries exceeds the limit of {max_entries}"
        )
    end = HEAD_SIZE + entry_bytes
    if end > n:
        raise MetadataError(
            f"a metadata block declares {entry_bytes} bytes of entries; "
            f"the body has {n - HEAD_SIZE}"
        )
    out: Metadata = []
    pos = HEAD_SIZE
    for _ in range(count):
        if pos >= end:
            raise MetadataError(f"metadata entries end before the {count} the block counts")
        klen = body[pos]
        kstart = pos + 1
        if klen == 0 or kstart + klen + 4 > end:
            raise MetadataError("a metadata entry is cut off")
        key = bytes(body[kstart : kstart + klen])
        if not is_key(key):
            raise MetadataError(f"metadata key {key!r} is not a lowercase token")
        (vlen,) = _U32.unpack_from(body, kstart + klen)
        vstart = kstart + klen + 4
        if vstart + vlen > end:
            raise MetadataError("a metadata entry is cut off")
        out.append((key.decode("ascii"), bytes(body[vstart : vstart + vlen])))
        pos = vstart + vlen
    if pos != end:
        raise MetadataError(
            f"metadata entries take {pos - HEAD_SIZE} of the {entry_bytes} bytes the block declares"
        )
    return out, end
