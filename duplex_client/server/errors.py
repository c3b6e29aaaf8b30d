"""Server-side error events: class per code and the nested `error` envelope (protocol.md §7)."""

from __future__ import annotations

from typing import Any, Final

from duplex_client.protocol.client_events import ClientEvent
from duplex_client.protocol.errors import (
    FATAL_RESUME_CODES,
    INVALID_REQUEST_ERROR,
    RATE_LIMIT_ERROR,
    SERVER_ERROR,
    SESSION_FATAL_CODES,
    ErrorCode,
    ErrorInfo,
)
from duplex_client.protocol.fields import SchemaError
from duplex_client.protocol.server_events import ErrorEvent

_RATE_LIMIT_CODES: Final = frozenset(
    {
        ErrorCode.INPUT_BACKPRESSURE,
        ErrorCode.RESOURCE_EXHAUSTED,
        ErrorCode.DUPLEX_SESSION_BUSY,
        ErrorCode.OUTPUT_BACKPRESSURE,
    }
)
_SERVER_CODES: Final = SESSION_FATAL_CODES | {
    ErrorCode.SERVER_VAD_UNAVAILABLE,
    ErrorCode.COMMIT_ABORTED,
    ErrorCode.CONTEXT_OPERATION_FAILED,
    ErrorCode.CONTEXT_OUTPUT_FAILED,
}

#: Errors scoped to one attachment (socket): never journaled, never carry `server_event_seq`.
ENVELOPE_ERROR_CODES: Final = FATAL_RESUME_CODES | {
    ErrorCode.INVALID_JSON,
    ErrorCode.EVENT_TOO_LARGE,
    ErrorCode.INVALID_EVENT_ACK,
}


def error_class(code: str) -> str:
    """`error.type` for a code: `rate_limit_error`, `server_error` or `invalid_request_error`."""
    if code in _RATE_LIMIT_CODES:
        return RATE_LIMIT_ERROR
    if code in _SERVER_CODES:
        return SERVER_ERROR
    return INVALID_REQUEST_ERROR


def is_session_fatal(code: str) -> bool:
    """Whether an error with this code ends the session (scope S)."""
    return code in SESSION_FATAL_CODES


class Reject(Exception):
    """A client event is refused with an error code (raised inside validation, caught once)."""

    def __init__(self, code: str, message: str, param: str | None = None) -> None:
        super().__init__(f"{code}: {message}")
        self.code = code
        self.message = message
        self.param = param

    @classmethod
    def schema(cls, exc: SchemaError) -> Reject:
        """The refusal of an event the schema rejected (its code, message and param)."""
        return cls(exc.code, exc.message, exc.param)


def error_event(
    code: str, message: str, *, param: str | None = None, client_event_id: str | None = None
) -> ErrorEvent:
    """The nested `error` event (its `event_id` is stamped when emitted)."""
    info = ErrorInfo(
        type=error_class(code), code=code, message=message, param=param, event_id=client_event_id
    )
    return ErrorEvent(error=info)


def client_event_id(event: dict[str, Any]) -> str | None:
    """The `event_id` of a raw client object, if it sent a string one (before decoding)."""
    value = event.get("event_id")
    return value if isinstance(value, str) else None


def event_ref(event: ClientEvent) -> str | None:
    """A decoded client event's `event_id`, None when it sent none."""
    return event.event_id or None
