"""Outcomes of requests by `event_id`: futures for waiters, a bounded cache for late ones."""

from __future__ import annotations

import asyncio

from duplex_client.protocol import server_events as se
from duplex_client.protocol.errors import DuplexProtocolError, DuplexSessionClosedError

#: How many settled request outcomes are kept for waiters that arrive late.
SETTLED_CACHE = 256


class Outcomes:
    """The answer (acknowledgement or echoing error) of each client request, by `event_id`."""

    def __init__(self) -> None:
        self._pending: dict[str, asyncio.Future[se.ServerEvent]] = {}
        self._settled: dict[str, se.ServerEvent] = {}
        self._closed: str | None = None

    def future(self, event_id: str) -> asyncio.Future[se.ServerEvent]:
        """A future for the outcome of `event_id` (already settled, pending, or failed)."""
        fut = self._pending.get(event_id)
        if fut is None:
            fut = asyncio.get_running_loop().create_future()
            settled = self._settled.pop(event_id, None)
            if settled is not None:
                _resolve(fut, settled)
            elif self._closed is not None:
                fut.set_exception(DuplexSessionClosedError(self._closed))
            else:
                self._pending[event_id] = fut
        return fut

    def settle(self, event_id: str, event: se.ServerEvent) -> None:
        """Resolve a waiter for `event_id`, or remember the outcome for a later waiter."""
        fut = self._pending.pop(event_id, None)
        if fut is not None:
            _resolve(fut, event)
            return
        self._settled[event_id] = event
        while len(self._settled) > SETTLED_CACHE:
            self._settled.pop(next(iter(self._settled)))

    def close(self, reason: str) -> None:
        """Fail every pending and later waiter with `DuplexSessionClosedError(reason)`."""
        self._closed = reason
        for fut in self._pending.values():
            if not fut.done():
                fut.set_exception(DuplexSessionClosedError(reason))
        self._pending.clear()


def _resolve(fut: asyncio.Future[se.ServerEvent], event: se.ServerEvent) -> None:
    if fut.done():
        return
    if isinstance(event, se.ErrorEvent):
        fut.set_exception(DuplexProtocolError.from_error(event.error, event.raw))
    else:
        fut.set_result(event)
