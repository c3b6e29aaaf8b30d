"""The session's function calls by `call_id`, and the follow-ups waiting for the response lane."""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from duplex_client.protocol.errors import ErrorCode
from duplex_client.server.engine.base import CallTool, ToolCallView
from duplex_client.server.errors import Reject

#: Calls remembered per session (the oldest finished ones are forgotten first).
_MAX_CALLS = 256


class CallStatus(StrEnum):
    """Where one call stands."""

    OPEN = "open"
    COMPLETED = "completed"


@dataclass
class CallRecord:
    """One function call the server made."""

    call_id: str
    name: str
    arguments: str
    response_id: str
    status: CallStatus = CallStatus.OPEN


class ToolLedger:
    """The session's calls by `call_id`, and the follow-ups waiting for the response lane."""

    def __init__(self) -> None:
        self.calls: dict[str, CallRecord] = {}
        #: Outputs accepted so far (the engine numbers follow-ups by it).
        self.answered = 0
        #: Accepted outputs whose follow-up waits for the active response to end.
        self.waiting: list[ToolCallView] = []
        #: Calls decided while another response was active, with their metadata.
        self.calls_waiting: list[tuple[CallTool, dict[str, Any]]] = []

    def open(self, record: CallRecord) -> None:
        """Remember a new call."""
        self.calls[record.call_id] = record
        while len(self.calls) > _MAX_CALLS:
            oldest = next(iter(self.calls))
            self.calls.pop(oldest)

    def accept(self, call_id: str) -> CallRecord:
        """Mark a call answered; `Reject` for an unknown call or a second output."""
        record = self.calls.get(call_id)
        if record is None:
            raise Reject(
                ErrorCode.UNKNOWN_FUNCTION_CALL,
                f"function_call_output names call_id {call_id!r}, which is no open call",
                "item.call_id",
            )
        if record.status is CallStatus.COMPLETED:
            raise Reject(
                ErrorCode.DUPLICATE_FUNCTION_OUTPUT,
                f"function_call_output already given for call_id {call_id!r}",
                "item.call_id",
            )
        record.status = CallStatus.COMPLETED
        return record
