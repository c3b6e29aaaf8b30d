"""Output overflow (protocol.md §8): endings that never reached the client are re-sent failed.

When the attachment's output buffer refuses a batch, the `response.done` events in it were
never queued; upstream turns such a not-yet-queued ending into a failed one with the same
identity and output (reason `output_backpressure`).
"""

from __future__ import annotations

from collections.abc import Sequence

from duplex_client.protocol.codec import loads
from duplex_client.protocol.errors import ErrorCode
from duplex_client.protocol.objects import ResponseObject, StatusDetails
from duplex_client.protocol.response_events import ResponseDone
from duplex_client.server.emitter import Output, Send


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
