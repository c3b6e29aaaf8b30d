"""Bounded fan-out queues that drop their oldest item instead of blocking the reader task."""

from __future__ import annotations

import asyncio
from collections import deque
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any, Generic, TypeVar

T = TypeVar("T")

#: Default capacity of a consumer queue (protocol.md §8).
DEFAULT_QUEUE_SIZE = 1024


class _End:
    """Marks the end of a stream."""


_END = _End()


class DropOldestQueue(Generic[T]):
    """A bounded FIFO: `put` never blocks; when full, the oldest item is discarded.

    Several consumers may wait at once: each item goes to one of them, in the order they
    came, and all of them end once the queue is closed and drained. A consumer cancelled
    while it waits takes nothing (an item is removed only as it is handed over).
    """

    def __init__(self, maxsize: int = DEFAULT_QUEUE_SIZE) -> None:
        if maxsize <= 0:
            raise ValueError("maxsize must be positive")
        self._items: deque[T | _End] = deque()
        self._maxsize = maxsize
        self._waiters: list[asyncio.Future[None]] = []
        self._closed = False
        self.dropped = 0

    def __len__(self) -> int:
        return sum(1 for item in self._items if not isinstance(item, _End))

    @property
    def closed(self) -> bool:
        """Whether `close()` was called."""
        return self._closed

    def put(self, item: T) -> None:
        """Append an item, discarding the oldest if the queue is full; ignored after close."""
        if self._closed:
            return
        if len(self._items) >= self._maxsize:
            self._items.popleft()
            self.dropped += 1
        self._items.append(item)
        self._wake()

    def close(self) -> None:
        """End the stream: consumers get the buffered items, then stop."""
        if not self._closed:
            self._closed = True
            self._items.append(_END)
            self._wake()

    def _wake(self) -> None:
        for waiter in self._waiters:
            if not waiter.done():
                waiter.set_result(None)

    async def get(self) -> T:
        """The next item; raises `StopAsyncIteration` once closed and drained."""
        while not self._items:
            waiter = asyncio.get_running_loop().create_future()
            self._waiters.append(waiter)
            try:
                await waiter
            finally:
                self._waiters.remove(waiter)
        item = self._items[0]
        if isinstance(item, _End):
            raise StopAsyncIteration
        self._items.popleft()
        return item

    def get_nowait(self) -> T | None:
        """The next item if one is buffered, else None."""
        if self._items and not isinstance(self._items[0], _End):
            item = self._items.popleft()
            assert not isinstance(item, _End)
            return item
        return None

    def __aiter__(self) -> AsyncIterator[T]:
        return self

    async def __anext__(self) -> T:
        return await self.get()

    async def until(
        self, until: Awaitable[object] | None = None, *, idle_s: float | None = None
    ) -> AsyncIterator[T]:
        """Items until the queue ends, `until` completes, or none came for `idle_s` seconds.

        Items not taken when it stops stay queued for the next consumer.
        """
        if idle_s is not None and not idle_s > 0:
            raise ValueError(f"idle_s must be positive, got {idle_s!r}")
        stop = None if until is None else asyncio.ensure_future(until)
        loop = asyncio.get_running_loop()
        try:
            deadline = None if idle_s is None else loop.time() + idle_s
            while stop is None or not stop.done():
                if not self._items:
                    # Items are taken only here, right before they are yielded: a consumer
                    # cancelled while it waits leaves them all queued.
                    left = None if deadline is None else max(0.0, deadline - loop.time())
                    if not await self._wait_for_put(stop, left):
                        return
                    continue
                item = self._items[0]
                if isinstance(item, _End):
                    return
                self._items.popleft()
                yield item
                deadline = None if idle_s is None else loop.time() + idle_s
        finally:
            if stop is not None and not stop.done():
                stop.cancel()

    async def _wait_for_put(self, stop: asyncio.Future[Any] | None, timeout: float | None) -> bool:
        """Wait for a `put`/`close` without taking anything; False if `stop` or `timeout` won."""
        waiter = asyncio.get_running_loop().create_future()
        self._waiters.append(waiter)
        waits: set[asyncio.Future[Any]] = {waiter} if stop is None else {waiter, stop}
        try:
            done, _ = await asyncio.wait(
                waits, timeout=timeout, return_when=asyncio.FIRST_COMPLETED
            )
        finally:
            self._waiters.remove(waiter)
        return waiter in done


class Subscription(DropOldestQueue[T]):
    """A consumer's queue registered with a broadcaster; `close()` also unregisters it."""

    def __init__(self, on_close: Callable[[Subscription[T]], None], maxsize: int) -> None:
        super().__init__(maxsize)
        self._on_close = on_close

    def close(self) -> None:
        """Stop receiving and end the iteration."""
        super().close()
        self._on_close(self)


class Broadcaster(Generic[T]):
    """Delivers every published item to each current subscriber's bounded queue."""

    def __init__(self, maxsize: int = DEFAULT_QUEUE_SIZE) -> None:
        self._subs: list[Subscription[T]] = []
        self._maxsize = maxsize
        self._closed = False

    def subscribe(self) -> Subscription[T]:
        """A new subscription, receiving items published from now on."""
        sub: Subscription[T] = Subscription(self._remove, self._maxsize)
        if self._closed:
            sub.close()
        else:
            self._subs.append(sub)
        return sub

    def _remove(self, sub: Subscription[T]) -> None:
        if sub in self._subs:
            self._subs.remove(sub)

    def publish(self, item: T) -> None:
        """Give the item to every subscriber (never blocks)."""
        for sub in self._subs:
            sub.put(item)

    def close(self) -> None:
        """End every subscription."""
        self._closed = True
        for sub in list(self._subs):
            sub.close()
