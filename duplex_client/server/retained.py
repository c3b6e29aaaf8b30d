"""Committed turns that wait for a response (manual lane, or deferred behind another)."""

from __future__ import annotations

from duplex_client.protocol.capabilities import UnitKind
from duplex_client.server.conversation import Turn
from duplex_client.server.engine.base import Speak, TurnView


def camera_only(turn: Turn) -> bool:
    """Whether the turn carries frames and no audio (it joins retained speech, §3.3)."""
    return bool(turn.units) and all(u.kind is UnitKind.VISION for u in turn.units)


class RetainedTurns:
    """The committed turns a later response will answer, oldest first."""

    def __init__(self) -> None:
        self._turns: list[Turn] = []

    def __len__(self) -> int:
        """How many turns wait."""
        return len(self._turns)

    def __bool__(self) -> bool:
        """Whether any turn waits."""
        return bool(self._turns)

    def views(self) -> list[TurnView]:
        """The engine's view of the waiting turns."""
        return [t.view() for t in self._turns]

    def host_for(self, turn: Turn) -> Turn | None:
        """The retained speech turn a camera-only turn joins (None: it stands alone)."""
        if not camera_only(turn):
            return None
        return next((t for t in reversed(self._turns) if t.speech), None)

    def join(self, turn: Turn) -> Turn | None:
        """Join a camera-only turn to the retained speech it follows; that turn, or None."""
        host = self.host_for(turn)
        if host is not None:
            host.units.extend(turn.units)
        return host

    def judged(self, turn: Turn) -> TurnView:
        """The turn the engine decides on: a camera-only turn joins the speech it follows."""
        host = self.host_for(turn)
        if host is None:
            return turn.view()
        return Turn(turn.turn_id, host.item_id, host.units + turn.units, speech=True).view()

    def retain(self, turn: Turn, deferred: Speak | None) -> None:
        """Keep a committed turn (with the decision deferred behind another response)."""
        turn.deferred = deferred
        self._turns.append(turn)

    def snapshot(self) -> list[Turn]:
        """The waiting turns, left in place."""
        return list(self._turns)

    def take(self) -> list[Turn]:
        """Every waiting turn (they are answered now)."""
        turns, self._turns = self._turns, []
        return turns

    def latest_deferred(self) -> Speak | None:
        """The newest decision deferred behind a response (None: nothing to start)."""
        decided = [t.deferred for t in self._turns if t.deferred is not None]
        return decided[-1] if decided else None
