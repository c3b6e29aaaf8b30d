"""The live part of the `session` object: turn state, turn count and the active response."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

from duplex_client.server.conversation import Conversation
from duplex_client.server.input_buffer import InputBuffer
from duplex_client.server.retained import RetainedTurns

#: Cancel reasons that are a barge-in (the user spoke over the answer).
BARGE_IN_REASONS: Final = frozenset({"barge_in", "turn_detected"})


@dataclass(frozen=True, slots=True)
class LiveState:
    """`turn_state`, `turn_id` and the `active_*` ids of the `session` object.

    `turn_state` is one of `protocol.objects.TURN_STATES`: `assistant_playing` once the active
    response sent audio (`assistant_generating` before), `user_speaking` while uncommitted input
    is open, `user_committed` while committed turns wait for an answer, `barge_in` after an
    answer was cut by the user and nothing came since, else `idle`. `turn_id` counts the
    committed turns.
    """

    turn_state: str = "idle"
    turn_id: int = 0
    active_request_id: str | None = None
    active_response_id: str | None = None
    active_response_turn_id: int | None = None


def live_state(conv: Conversation, inputs: InputBuffer, retained: RetainedTurns) -> LiveState:
    """The live state of a session from its parts."""
    turn_id = inputs.next_turn_id - 1
    active = conv.active
    if active is not None:
        turns = active.metadata.get("turn_ids") or []
        return LiveState(
            turn_state="assistant_playing" if active.next_chunk > 0 else "assistant_generating",
            turn_id=turn_id,
            active_request_id=active.request_id,
            active_response_id=active.response_id,
            active_response_turn_id=turns[-1] if turns else None,
        )
    if inputs.has_input():
        state = "user_speaking"
    elif retained:
        state = "user_committed"
    elif conv.last_cancel_reason in BARGE_IN_REASONS:
        state = "barge_in"
    else:
        state = "idle"
    return LiveState(turn_state=state, turn_id=turn_id)
