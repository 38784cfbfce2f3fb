"""Status codes (docs/protocol.md, "Status byte") and the exception calls raise."""

from __future__ import annotations

import enum

from ._codec import Buffer, DecodeError, get_varint
from ._metadata import Metadata


class ErrorCode(enum.IntEnum):
    """`rpc_errc`: the values are fixed forever. A status the server sends that is not listed
    (19-255) still fails the call: RpcError.code is then the raw int."""

    OK = 0
    TIMEOUT = 1
    CONNECTION_CLOSED = 2
    FUNCTION_NOT_FOUND = 3
    BAD_REQUEST = 4
    SERVER_BUSY = 5
    MESSAGE_TOO_LARGE = 6
    HANDLER_ERROR = 7
    CANCELLED = 8
    PROTOCOL_ERROR = 9
    CONNECT_FAILED = 10
    INVALID_ARGUMENT = 11
    NO_RDMA_DEVICE = 12
    CLIENT_BUSY = 13
    SIGNATURE_MISMATCH = 14
    # Refused before the handler ran: the caller proved no identity the server accepts (a
    # missing or bad credential) ...
    UNAUTHENTICATED = 15
    # ... or it did, and that identity may not call this method.
    PERMISSION_DENIED = 16
    # A quota or limit was reached (an interceptor's quota; call metadata over the server's
    # max_metadata_entries or _bytes).
    RESOURCE_EXHAUSTED = 17
    # A fault in the call path, not the handler: a server interceptor, or this client's
    # credentials hook, raised.
    INTERNAL = 18


class RpcError(Exception):
    """A call that ended without a value: `code` says why, the message is for people.
    `metadata`: the call metadata the server's error reply carried ([] when none)."""

    def __init__(
        self, code: ErrorCode | int, message: str, metadata: Metadata | None = None
    ) -> None:
        try:
            code = ErrorCode(code)
        except ValueError:
            pass
        name = code.name.lower() if isinstance(code, ErrorCode) else f"status {code}"
        super().__init__(f"{name}: {message}" if message else name)
        self.code = code
        self.message = message
        self.metadata: Metadata = metadata if metadata is not None else []


def reply_error(status: int, body: Buffer, metadata: Metadata | None = None) -> RpcError:
    """An error response as an RpcError: its body (after its metadata block) is a codec
    string, read leniently (it is for people)."""
    try:
        n, pos = get_varint(body, 0, len(body))
        message = bytes(body[pos : pos + n]).decode("utf-8", "replace")
    except DecodeError:
        message = bytes(body).decode("utf-8", "replace")
    return RpcError(status, message, metadata)
