"""Waiting for request outcomes: the asyncio futures over the connection's `Outcomes`.

The pure part (the outcomes kept, `unwrap`) is `duplex_client.protocol.session.outcomes`.
"""

from __future__ import annotations

import asyncio

from duplex_client.protocol import server_events as se
from duplex_client.protocol.errors import DuplexSessionClosedError


class Waiters:
    """Callers waiting for the outcome of a request, by `event_id` (several may wait on one)."""

    def __init__(self) -> None:
        self._pending: dict[str, list[asyncio.Future[se.ServerEvent]]] = {}
        self._closed: str | None = None

    async def wait(self, event_id: str) -> se.ServerEvent:
        """Until `settle(event_id, ...)`; `DuplexSessionClosedError` once the session ended."""
        if self._closed is not None:
            raise DuplexSessionClosedError(self._closed)
        future: asyncio.Future[se.ServerEvent] = asyncio.get_running_loop().create_future()
        waiting = self._pending.setdefault(event_id, [])
        waiting.append(future)
        try:
            return await future
        finally:  # a cancelled wait leaves nothing behind
            waiting.remove(future)
            if not waiting:
                self._pending.pop(event_id, None)

    def settle(self, event_id: str, outcome: se.ServerEvent) -> None:
        """Wake every waiter for `event_id` with its outcome."""
        for future in self._pending.get(event_id, ()):
            if not future.done():
                future.set_result(outcome)

    def close(self, reason: str) -> None:
        """Fail every current and later waiter with `DuplexSessionClosedError(reason)`."""
        self._closed = reason
        for waiting in self._pending.values():
            for future in waiting:
                if not future.done():
                    future.set_exception(DuplexSessionClosedError(reason))
