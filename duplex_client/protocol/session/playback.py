"""When playback acks go out (§5), built from the response tracker's state, sans-I/O."""

from __future__ import annotations

from typing import Any

from duplex_client.protocol import client_events as ce
from duplex_client.protocol import response_events as r
from duplex_client.protocol.server_events import ServerEvent
from duplex_client.protocol.session.responses import AckPolicy, ResponseTracker


class PlaybackAcks:
    """When playback acks go out (§5): at `response.done` under `received`, before commits.

    Builds `playback.ack` events from the tracker's handles; the connection sends them.
    """

    def __init__(self, tracker: ResponseTracker[Any], policy: AckPolicy) -> None:
        self.tracker = tracker
        #: `received`: what arrived counts as played; `manual`: `played_ms` as reported.
        self.policy: AckPolicy = policy
        self._armed = False

    def arm(self, event: ServerEvent) -> bool:
        """Whether `event` asks for acks soon (a response finished and nothing is armed yet)."""
        if not isinstance(event, r.ResponseDone) or self.policy != "received" or self._armed:
            return False
        self._armed = True
        return True

    def ack(
        self, played_ms: int, response_id: str, committed_ms: int | None, truncate: bool
    ) -> ce.PlaybackAck:
        """The ack for one response (its handle records it; acks never move back)."""
        played = self.tracker.record_ack(response_id, played_ms)
        return ce.PlaybackAck(
            response_id=response_id, played_ms=played, committed_ms=committed_ms, truncate=truncate
        )

    def disarm(self) -> None:
        """The timer fired with nothing to send (the next `response.done` arms it again)."""
        self._armed = False

    def due(self, *, skip_sealed: bool) -> list[ce.PlaybackAck]:
        """Acks for finished responses played past their last ack (disarms the timer).

        `skip_sealed` (`ack_only`): a response a later commit sealed is left out, as the
        server would refuse its ack.
        """
        self._armed = False
        due = self.tracker.acks_due(
            received_counts=self.policy == "received", skip_sealed=skip_sealed
        )
        return [self.ack(played, rid, None, truncate) for rid, played, truncate in due]
