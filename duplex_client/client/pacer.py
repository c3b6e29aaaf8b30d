"""Deadline waits of every stream on an event loop, from one heap and one loop timer.

`asyncio.sleep` puts a `TimerHandle` on the loop's heap for each wait. With hundreds of
streams on one loop that heap holds hundreds of handles, and every push and pop compares them
with `TimerHandle.__lt__`, a Python method: about 13 calls of it per append at N = 400. A
`Pacer` keeps the waits in a heap of plain tuples (compared in C) and keeps a single handle
on the loop's heap, for its earliest deadline. A wait ends as `asyncio.sleep`'s would: its
future is resolved once the loop's clock is within the clock's resolution of the deadline.
"""

from __future__ import annotations

import asyncio
import heapq
import itertools
import time
import weakref

#: The loop runs a timer once the clock is within this of its deadline; so do the waits.
_RESOLUTION_S = time.get_clock_info("monotonic").resolution
_NEVER = float("inf")

_pacers: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, Pacer] = weakref.WeakKeyDictionary()


class Pacer:
    """Waits of one event loop ordered by deadline, woken by one loop timer at a time.

    The pacer keeps no reference to its loop besides its waits' futures (the loop's heap
    holds the pacer's handle, not the other way round).
    """

    def __init__(self) -> None:
        self._waits: list[tuple[float, int, asyncio.Future[None]]] = []
        self._order = itertools.count()
        #: When the one live handle fires (a handle for another time has been superseded).
        self._timer_at = _NEVER

    def sleep(self, delay: float) -> asyncio.Future[None]:
        """A future resolved `delay` seconds from now (what `await asyncio.sleep(delay)` waits)."""
        loop = asyncio.get_running_loop()
        when = loop.time() + delay
        future: asyncio.Future[None] = loop.create_future()
        heapq.heappush(self._waits, (when, next(self._order), future))
        if when < self._timer_at:
            self._timer_at = when
            loop.call_at(when, self._fire, when)
        return future

    def _fire(self, when: float) -> None:
        if when != self._timer_at:
            return  # an earlier wait came after this handle was set, and has its own
        self._timer_at = _NEVER
        loop = asyncio.get_running_loop()
        waits = self._waits
        due = loop.time() + _RESOLUTION_S
        while waits and waits[0][0] <= due:
            future = heapq.heappop(waits)[2]
            if not future.done():  # a cancelled waiter's future is done already
                future.set_result(None)
        if waits:
            self._timer_at = nxt = waits[0][0]
            loop.call_at(nxt, self._fire, nxt)


def loop_pacer() -> Pacer:
    """The running loop's pacer (made on first use)."""
    loop = asyncio.get_running_loop()
    pacer = _pacers.get(loop)
    if pacer is None:
        # A loop closed while waits were pending stays referenced by their futures, which its
        # pacer holds: closed loops' pacers go here (there are as many pacers as loops).
        for closed in [other for other in _pacers if other.is_closed()]:
            del _pacers[closed]
        pacer = _pacers[loop] = Pacer()
    return pacer
