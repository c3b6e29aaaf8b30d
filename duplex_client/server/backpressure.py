"""Output limits (protocol.md §8): endings re-sent failed after an overflow, compacted closes.

When the attachment's output buffer refuses a batch, the `response.done` events in it were
never queued; upstream turns such a not-yet-queued ending into a failed one with the same
identity and output (reason `output_backpressure`). A close notice above 4 KiB is compacted.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Final

from duplex_client.protocol.codec import loads
from duplex_client.protocol.errors import ErrorCode
from duplex_client.protocol.objects import ClosedInfo, ResponseObject, StatusDetails
from duplex_client.protocol.response_events import ResponseDone
from duplex_client.protocol.server_events import SessionClosed
from duplex_client.server.emitter import Emitter, Output, Send

#: A `session.closed` longer than this (encoded) is sent with its `reason` compacted.
MAX_CLOSE_NOTICE_BYTES: Final = 4096
CLOSE_DETAILS_TOO_LONG: Final = "close_details_exceed_output_limit"


def failed_endings(dropped: Sequence[Output]) -> list[ResponseDone]:
    """The failed twin of every `response.done` among outputs that were not queued."""
    out: list[ResponseDone] = []
    for send in dropped:
        if isinstance(send, Send) and send.type == ResponseDone.TYPE:
            done = ResponseDone.from_raw(loads(send.data))
            response = ResponseObject.from_raw(done.response)
            response.status = "failed"
            response.status_details = StatusDetails(
                type="failed", reason=ErrorCode.OUTPUT_BACKPRESSURE
            )
            out.append(ResponseDone(response_id=done.response_id, response=response.to_dict()))
    return out


def close_notice(session_id: str, epoch: int, reason: str, emitter: Emitter) -> SessionClosed:
    """`session.closed {epoch, reason, event}`, with upstream's compacted reason when over-long."""

    def notice(why: str) -> SessionClosed:
        info = ClosedInfo(session_id=session_id, epoch=epoch, reason=why)
        return SessionClosed(session_id=session_id, epoch=epoch, reason=why, event=info.to_dict())

    closed = notice(reason)
    if len(emitter.build(closed).data) > MAX_CLOSE_NOTICE_BYTES:
        closed = notice(CLOSE_DETAILS_TOO_LONG)
    return closed
