"""corvid: an asyncio client for corvid RPC servers (docs/protocol.md, docs/codec.md).

    @corvid.remote
    def add(a: corvid.i32, b: corvid.i32) -> corvid.i32: ...

    async with await corvid.connect("127.0.0.1:9000") as client:
        assert await client.call(add, 1, 2) == 3
"""

from ._client import Client, connect, parse_endpoint
from ._compression import available as compression_available
from ._codec import Codec, DecodeError, canonical, codec_for, decode, encode
from ._connection import Reply
from ._errors import ErrorCode, RpcError
from ._frame import fingerprint, fnv1a32
from ._method_config import HedgingPolicy, MethodConfig, MethodPolicy
from ._remote import Remote, remote
from ._stream import StreamCall
from ._trace import TraceContext, current_trace, trace_scope
from ._types import (
    Alt,
    Fixed,
    Monostate,
    Stream,
    enum_type,
    f32,
    f64,
    i8,
    i16,
    i32,
    i64,
    struct,
    u8,
    u16,
    u32,
    u64,
)
from ._version import __version__

__all__ = [
    "Alt",
    "Client",
    "Codec",
    "DecodeError",
    "ErrorCode",
    "Fixed",
    "HedgingPolicy",
    "MethodConfig",
    "MethodPolicy",
    "Monostate",
    "Remote",
    "Reply",
    "RpcError",
    "Stream",
    "StreamCall",
    "TraceContext",
    "__version__",
    "canonical",
    "codec_for",
    "compression_available",
    "connect",
    "current_trace",
    "decode",
    "encode",
    "enum_type",
    "f32",
    "f64",
    "fingerprint",
    "fnv1a32",
    "i16",
    "i32",
    "i64",
    "i8",
    "parse_endpoint",
    "remote",
    "struct",
    "trace_scope",
    "u16",
    "u32",
    "u64",
    "u8",
]
