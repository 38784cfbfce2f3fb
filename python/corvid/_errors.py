"""Status codes (docs/protocol.md, "Status byte") and the exception calls raise."""

from __future__ import annotations

import enum

from ._codec import Buffer, DecodeError, get_varint


class ErrorCode(enum.IntEnum):
    """`rpc_errc`: the values are fixed forever. A status the server sends that is not listed
    (15-255) still fails the call: RpcError.code is then the raw int."""

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


class RpcError(Exception):
    """A call that ended without a value: `code` says why, the message is for people."""

    def __init__(self, code: ErrorCode | int, message: str) -> None:
        try:
            code = ErrorCode(code)
        except ValueError:
            pass
        name = code.name.lower() if isinstance(code, ErrorCode) else f"status {code}"
        super().__init__(f"{name}: {message}" if message else name)
        self.code = code
        self.message = message


def reply_error(status: int, body: Buffer) -> RpcError:
    """An error response as an RpcError: its body is a codec string, read leniently (it is for
    people)."""
    try:
        n, pos = get_varint(body, 0, len(body))
        message = bytes(body[pos : pos + n]).decode("utf-8", "replace")
    except DecodeError:
        message = bytes(body).decode("utf-8", "replace")
    return RpcError(status, message)
