"""A session's turn state as `turn.event` reports it (upstream's vocabulary, protocol.md §4.5)."""

from __future__ import annotations

from typing import Final

#: Turn state after each signal that moves it (other signals leave it as it is).
TRANSITIONS: Final = {
    "user_started": "user_speaking",
    "user_committed": "user_committed",
    "assistant_started": "assistant_generating",
    "assistant_done": "idle",
    "barge_in": "barge_in",
}


class TurnTracker:
    """The turn state (starts `idle`); turn signals and barge-ins move it."""

    __slots__ = ("state",)

    def __init__(self) -> None:
        self.state = "idle"

    def signal(self, name: str) -> str:
        """Apply one signal; the resulting state."""
        self.state = TRANSITIONS.get(name, self.state)
        return self.state
