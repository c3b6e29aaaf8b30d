"""What a run watches while it goes: the session's events, the end of the turn, live figures.

The end of a turn is waited for on the session's own events (each server event wakes the
waiter, the session's end too) and on two timers (the settle time, the deadline): nothing
polls. The live figures read running state (the timeline's sorted lateness and unit
counts), so refreshing them does not grow with the number of rows sent.
"""

from __future__ import annotations

import asyncio
import itertools
import time
from collections.abc import Callable
from typing import Any

from duplex_client.client.session import DuplexClientBase
from duplex_client.framing.timeline import InputTimeline
from duplex_client.run.options import RunFailed
from duplex_client.run.progress import RunProgress
from duplex_client.run.result import session_handles


class SessionActivity:
    """An event listener: when the last server event came, and a wake-up for waiters."""

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self.last_event_at = clock()
        #: Server events seen so far (a change says the responses may have changed).
        self.events = 0
        self._waiters: list[asyncio.Future[None]] = []

    def on_event(self, event: Any, received_at: float) -> None:
        """Note one server event (a client listener: `received_at` on the client's clock)."""
        self.last_event_at = received_at
        self.events += 1
        for waiter in self._waiters:
            if not waiter.done():
                waiter.set_result(None)

    async def next_event(self, timeout_s: float, *also: asyncio.Future[Any]) -> None:
        """Return at the next event, once one of `also` is done, or after `timeout_s`."""
        waiter: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._waiters.append(waiter)
        try:
            await asyncio.wait(
                [waiter, *also], timeout=timeout_s, return_when=asyncio.FIRST_COMPLETED
            )
        finally:
            self._waiters.remove(waiter)
            waiter.cancel()


def turn_wait_s(
    now: float,
    *,
    busy: bool,
    decided: bool,
    due: bool,
    last_event_at: float,
    settle_s: float,
    deadline: float,
    timeout_s: float,
) -> float | None:
    """None once the turn is over, else how long to wait (at most) for the next event.

    Over: no response is running, the decision arrived (or none is due) and no event came
    for `settle_s`. Past `deadline` (without that) raises `RunFailed`.
    """
    ready = not busy and (decided or not due)
    quiet_at = last_event_at + settle_s
    if ready and now >= quiet_at:
        return None
    if now >= deadline:
        what = "a response did not finish" if busy else "no decision arrived"
        raise RunFailed(f"{what} within {timeout_s:g} s after the commit")
    wake = min(quiet_at, deadline) if ready else deadline
    return max(0.0, wake - now)


def decided_since(client: DuplexClientBase, t: float) -> bool:
    """Whether a response or standalone listen created at `t` or later has a decision."""
    tracker = client.tracker
    return any(
        h.decision is not None and h.created_at >= t
        for h in itertools.chain(tracker.handles.values(), tracker.listens)
    )


async def settle_turn(
    client: DuplexClientBase,
    activity: SessionActivity,
    *,
    since: float,
    due: bool,
    settle_s: float,
    deadline: float,
    timeout_s: float,
    clock: Callable[[], float] = time.monotonic,
) -> bool:
    """Wait until the turn is over (`turn_wait_s`): True, or False if the session ended.

    Woken by every server event and by the session's end; otherwise only by the settle
    time or the deadline coming due.
    """
    closed = asyncio.ensure_future(client.wait_closed())
    try:
        while client.is_open:
            active = client.tracker.active
            wait_s = turn_wait_s(
                clock(),
                busy=active is not None and not active.done,
                decided=decided_since(client, since),
                due=due,
                last_event_at=activity.last_event_at,
                settle_s=settle_s,
                deadline=deadline,
                timeout_s=timeout_s,
            )
            if wait_s is None:
                return True
            await activity.next_event(wait_s, closed)
        return False
    finally:
        closed.cancel()


async def finish_stream(
    client: DuplexClientBase,
    activity: SessionActivity,
    *,
    settle_s: float,
    timeout_s: float,
    clock: Callable[[], float] = time.monotonic,
) -> float | None:
    """Finish input no commit ends; the seconds left to hear it out (None: the session ended).

    A continuous stream (Nemotron-style) ends at `session.close`, which drains its one
    response (`end_stream`; the input's trailing silence let the answer finish); then what
    arrived is heard out. A commit-free model (PersonaPlex-style) is only waited for: the
    session settles as after a turn with nothing due.
    """
    since = clock()
    deadline = since + timeout_s
    if client.continuous_stream:
        await client.end_stream(timeout=timeout_s)
        return max(0.0, deadline - clock())
    settled = await settle_turn(
        client,
        activity,
        since=since,
        due=False,
        settle_s=settle_s,
        deadline=deadline,
        timeout_s=timeout_s,
        clock=clock,
    )
    return max(0.0, deadline - clock()) if settled else None


class LiveFigures:
    """Keeps a `RunProgress`'s live figures from running state, not by re-reading rows."""

    def __init__(
        self,
        progress: RunProgress,
        timeline: InputTimeline,
        client: DuplexClientBase,
        activity: SessionActivity,
    ) -> None:
        self.progress = progress
        self.timeline = timeline
        self.client = client
        self.activity = activity
        self._seen: tuple[int, bool] | None = None

    def refresh(self, wall_s: float) -> None:
        """Update the figures: O(1) in the rows sent; responses only after a new event."""
        p, timeline = self.progress, self.timeline
        p.wall_s = wall_s
        rows = timeline.appends
        p.appends = len(rows)
        if rows:
            p.media_ms = rows[-1]["media_end_ms"]
        for kind in p.units:
            p.units[kind] = timeline.unit_counts.get(kind, 0)
        late = timeline.lateness
        if late.max is not None:
            p.lateness_p50_ms, p.lateness_max_ms = late.middle, late.max
        seen = (self.activity.events, self.client.is_open)
        if seen != self._seen:  # responses change with events and with the session's end
            self._seen = seen
            handles = session_handles(self.client)
            p.decisions = [(h.metadata.get("unit_index"), h.decision or "?") for h in handles]
            p.transcript = " ".join(
                h.transcript or h.text for h in handles if h.transcript or h.text
            )
