"""What became of each input event: written to a socket, and acknowledged by the server.

A timeline row is added when an append is handed to the session, which may only queue it
(the socket is down, a resume is under way). `InputLedger` keeps, per kept input (an append
or commit with an id), when it was first written to a socket and when the server confirmed
having it (an acknowledged commit, a decision on the unit it closes, a resume's view of the
input: `Outbox.confirm`), so the record can say which inputs never left and which the
server never confirmed (`InputTimeline.deliveries`).
"""

from __future__ import annotations

import time
from collections.abc import Callable


class InputLedger:
    """Per kept input event id: handed over, first written, confirmed (client clock)."""

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self.clock = clock
        self._kept: set[str] = set()
        self._written: dict[str, float] = {}
        self._acknowledged: dict[str, float] = {}

    def kept(self, event_id: str) -> None:
        """The input was handed to the session (written at once, or queued)."""
        self._kept.add(event_id)

    def written(self, event_id: str) -> None:
        """The input was written to a socket (the first time counts)."""
        self._written.setdefault(event_id, self.clock())

    def acknowledged(self, event_id: str) -> None:
        """The server confirmed having the input (the first confirmation counts)."""
        self._acknowledged.setdefault(event_id, self.clock())

    def tracks(self, event_id: str) -> bool:
        """Whether the input was kept (so `written_at` None means it never left)."""
        return event_id in self._kept

    def written_at(self, event_id: str) -> float | None:
        """When the input was first written to a socket (None: never, or not kept)."""
        return self._written.get(event_id)

    def acknowledged_at(self, event_id: str) -> float | None:
        """When the server confirmed the input (None: not confirmed, or not known)."""
        return self._acknowledged.get(event_id)
