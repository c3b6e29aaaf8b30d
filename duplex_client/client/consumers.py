"""Where a session's output goes: listeners, subscriptions, decided responses, request waiters."""

from __future__ import annotations

import contextlib
import logging
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Protocol

from duplex_client.client.queues import Broadcaster, DropOldestQueue, Subscription
from duplex_client.client.responses import ResponseHandle
from duplex_client.client.resume import ReconnectListener, ReconnectReport
from duplex_client.client.waiters import Waiters
from duplex_client.protocol import server_events as se

log = logging.getLogger("duplex_client")


class EventListener(Protocol):
    """A synchronous observer of every server event as received (never drops)."""

    def __call__(self, event: se.ServerEvent, received_at: float) -> None:
        """Called from the reader task, in arrival order."""
        ...


class Consumers:
    """The asyncio side of delivery: what the connection's effects are handed to."""

    def __init__(self, queue_size: int, clock: Callable[[], float]) -> None:
        self.clock = clock
        self._decided: DropOldestQueue[ResponseHandle] = DropOldestQueue(queue_size)
        self._events: Broadcaster[se.ServerEvent] = Broadcaster(queue_size)
        self._waiters = Waiters()
        self._listeners: list[EventListener] = []
        self._reconnect_listeners: list[ReconnectListener] = []

    def responses(
        self, until: Awaitable[object] | None = None, *, idle_s: float | None = None
    ) -> AsyncIterator[ResponseHandle]:
        """Handles as their decision becomes known, from one queue every caller shares."""
        if until is None and idle_s is None:
            return self._decided
        return self._decided.until(until, idle_s=idle_s)

    def subscribe(self) -> Subscription[se.ServerEvent]:
        """Every server event from now on (bounded; a slow consumer loses its oldest)."""
        return self._events.subscribe()

    def add_listener(self, listener: EventListener) -> None:
        """Call `listener` for every event, synchronously, in arrival order."""
        self._listeners.append(listener)

    def remove_listener(self, listener: EventListener) -> None:
        """Stop calling `listener` (unknown ones are ignored)."""
        with contextlib.suppress(ValueError):
            self._listeners.remove(listener)

    def add_reconnect_listener(self, listener: ReconnectListener) -> None:
        """Call `listener` with each reconnection report (once per listener)."""
        if listener not in self._reconnect_listeners:
            self._reconnect_listeners.append(listener)

    def deliver(self, event: se.ServerEvent) -> None:
        """Hand an event to every listener (a failing one is logged), then to subscribers."""
        now = self.clock()
        for listener in self._listeners:
            try:
                listener(event, now)
            except Exception:
                log.exception("event listener failed")
        self._events.publish(event)

    def decide(self, handle: ResponseHandle) -> None:
        """A response's decision is known."""
        self._decided.put(handle)

    def settle(self, event_id: str, outcome: se.ServerEvent) -> None:
        """The outcome of request `event_id` arrived: wake its waiters."""
        self._waiters.settle(event_id, outcome)

    async def outcome(self, event_id: str) -> se.ServerEvent:
        """Wait for the outcome of request `event_id` (`DuplexSessionClosedError` at the end)."""
        return await self._waiters.wait(event_id)

    def report(self, report: ReconnectReport) -> None:
        """A reconnection ended (or its outcome changed): tell the reconnect listeners."""
        for listener in self._reconnect_listeners:
            try:
                listener(report)
            except Exception:
                log.exception("reconnect listener failed")

    def end(self, reason: str) -> None:
        """The session ended: iterations stop once drained, waiters fail."""
        self._decided.close()
        self._events.close()
        self._waiters.close(reason)
