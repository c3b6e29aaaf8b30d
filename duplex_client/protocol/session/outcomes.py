"""Outcomes of client requests by `event_id`, sans-I/O: what a late waiter still finds."""

from __future__ import annotations

from duplex_client.protocol import server_events as se
from duplex_client.protocol.errors import DuplexProtocolError

#: How many settled request outcomes are kept for waiters that arrive late.
SETTLED_CACHE = 256


class Outcomes:
    """The answer (acknowledgement or echoing error) of each request, kept for later waiters."""

    def __init__(self, limit: int = SETTLED_CACHE) -> None:
        self.limit = limit
        self._settled: dict[str, se.ServerEvent] = {}

    def settle(self, event_id: str, event: se.ServerEvent) -> None:
        """Remember the outcome of `event_id` (the oldest are forgotten beyond `limit`)."""
        self._settled.pop(event_id, None)
        self._settled[event_id] = event
        while len(self._settled) > self.limit:
            self._settled.pop(next(iter(self._settled)))

    def get(self, event_id: str) -> se.ServerEvent | None:
        """The outcome of `event_id`, if it arrived (and is still kept)."""
        return self._settled.get(event_id)


def unwrap(outcome: se.ServerEvent) -> se.ServerEvent:
    """The acknowledgement itself; an error echoing the request raises `DuplexProtocolError`."""
    if isinstance(outcome, se.ErrorEvent):
        raise DuplexProtocolError.from_error(outcome.error, outcome.raw)
    return outcome
