"""One socket attached to a session (ordered, bounded send queue) and the session's timer driver."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import math
from collections import deque
from collections.abc import Callable
from concurrent.futures import Future
from typing import Any, Final

from websockets.asyncio.server import ServerConnection
from websockets.exceptions import ConnectionClosed

from duplex_client.protocol.errors import ErrorCode
from duplex_client.server.backpressure import failed_endings
from duplex_client.server.emitter import CloseSocket, Output, Send
from duplex_client.server.session import DuplexSession

log = logging.getLogger("duplex_client.server")
_DRAIN_WAIT_S: Final = 5.0
#: Event types logged at INFO (one line each); everything else is DEBUG-quiet.
LOGGED: Final = frozenset(
    {
        "session.created",
        "session.resumed",
        "session.closed",
        "session.expired",
        "session.resync_required",
        "input_audio_buffer.committed",
        "response.created",
        "response.done",
    }
)


class Attachment:
    """One socket attached to a session: an ordered, bounded send queue and its writer task."""

    def __init__(self, ws: ServerConnection, runner: Runner) -> None:
        self.ws = ws
        self.runner = runner
        self.replaced = False
        self.closing = False
        self._queue: deque[Output] = deque()
        self._bytes = 0
        self._wake = asyncio.Event()
        self.low_water = asyncio.Event()
        self.low_water.set()
        self._task = asyncio.create_task(self._write())

    def push(self, outputs: list[Output], *, reserve: bool = False) -> bool:
        """Queue outputs; False if the output buffer limit would be exceeded (nothing queued)."""
        if not outputs:  # most appends answer nothing: waking the writer would be a loop pass
            return True
        limits = self.runner.session.limits
        max_bytes = limits.output_buffer_bytes + (limits.output_reserve_bytes if reserve else 0)
        max_events = limits.output_buffer_events + (limits.output_reserve_events if reserve else 0)
        size = sum(len(o.data) for o in outputs if isinstance(o, Send))
        if self._bytes + size > max_bytes or len(self._queue) + len(outputs) > max_events + 1:
            return False
        self._queue.extend(outputs)
        self._bytes += size
        self._wake.set()
        if self._bytes > self._low_mark():
            self.low_water.clear()
        return True

    def _low_mark(self) -> int:
        return self.runner.session.limits.output_buffer_bytes // 4

    @property
    def backlog_bytes(self) -> int:
        """Bytes queued but not yet written."""
        return self._bytes

    async def _write(self) -> None:
        try:
            while True:
                while not self._queue:
                    self._wake.clear()
                    await self._wake.wait()
                item = self._queue.popleft()
                if isinstance(item, CloseSocket):
                    self.closing = True
                    await self.ws.close(item.code, item.reason[:120])
                    return
                self._bytes -= len(item.data)
                if self._bytes <= self._low_mark():
                    self.low_water.set()
                await self.ws.send(item.data, text=True)
                self.runner.sent(self, item)
        except ConnectionClosed:
            pass

    async def stop(self) -> None:
        """Stop writing (the socket is gone or replaced)."""
        self._task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await self._task

    async def drain(self) -> None:
        """Wait until the writer finished (it ends after a close)."""
        with contextlib.suppress(asyncio.CancelledError):
            await self._task


class Runner:
    """Binds a sans-I/O session to its current attachment and drives its timers."""

    def __init__(
        self, session: DuplexSession, on_finished: Callable[[Runner], None] | None = None
    ) -> None:
        self.session = session
        self._on_finished = on_finished
        self.attachment: Attachment | None = None
        self._loop = asyncio.get_running_loop()
        self._wake = asyncio.Event()
        #: The deadline the timers wait for (None while they are not waiting).
        self._waiting_until: float | None = None
        self._sent_total = 0
        self._drops = 0
        self._timer = asyncio.create_task(self._timers())
        session.on_pending = self._watch

    def _watch(self, job: Future[Any]) -> None:
        """Tick once off-loop work a decision waits for is done (it finishes in a worker)."""
        job.add_done_callback(self._wake_from_thread)

    def _wake_from_thread(self, _job: Future[Any]) -> None:
        with contextlib.suppress(RuntimeError):  # the loop is already closed: nothing to wake
            self._loop.call_soon_threadsafe(self._wake.set)

    def now(self) -> float:
        """The session clock (the event loop's monotonic time)."""
        return self._loop.time()

    def deliver(self, outputs: list[Output], *, wake: bool = True) -> None:
        """Route outputs to the attached socket; a detached session only journals them."""
        for out in outputs:
            if isinstance(out, Send) and (out.type in LOGGED or out.code):
                log.info("session %s: %s%s", self.session.session_id, out.type,
                         f" {out.code}" if out.code else "")  # fmt: skip
        att = self.attachment
        if att is not None and not att.push(outputs):
            self.session.fail(
                ErrorCode.OUTPUT_BACKPRESSURE,
                "output buffer overflow: the client is not reading",
                self.now(),
                close_code=1008,
                reason=ErrorCode.OUTPUT_BACKPRESSURE,
                endings=failed_endings(outputs),
            )
            if not att.push(self.session.emitter.drain(), reserve=True):
                att.ws.transport.abort()
        if wake:
            self._wake_if_sooner()

    def _wake_if_sooner(self) -> None:
        """Wake the timers if the session's next deadline moved before the one they wait for.

        Most events only push the idle deadline later: waking for them cost a loop pass, a
        timeout and a tick per client event.
        """
        until = self._waiting_until
        if until is None:  # not waiting: the timers look at the deadlines again anyway
            self._wake.set()
            return
        deadline = self.session.next_deadline()
        if deadline is None or deadline < until:
            self._wake.set()

    def handle(self, event: dict[str, Any]) -> None:
        """Feed one client event to the session."""
        self.deliver(self.session.handle(event, self.now()))

    def sent(self, att: Attachment, send: Send) -> None:
        """Count sent events; the drop fault aborts the socket every N of them, K times."""
        self._sent_total += 1
        faults = self.session.faults
        every = faults.drop_after_events
        if (
            every is not None
            and self._drops < faults.drop_times
            and self._sent_total >= every * (self._drops + 1)
        ):
            self._drops += 1
            log.info(
                "session %s: fault: dropping the socket (%d/%d)",
                self.session.session_id,
                self._drops,
                faults.drop_times,
            )
            att.ws.transport.abort()

    async def _timers(self) -> None:
        while not self.session.closed:
            deadline = self.session.next_deadline()
            self._waiting_until = math.inf if deadline is None else deadline
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout_at(deadline):
                    await self._wake.wait()
            self._waiting_until = None
            self._wake.clear()
            att = self.attachment
            if att is not None and not att.low_water.is_set():
                # Let the socket drain before producing more output (the output buffer's guard).
                with contextlib.suppress(TimeoutError):
                    async with asyncio.timeout(_DRAIN_WAIT_S):
                        await att.low_water.wait()
            else:
                await asyncio.sleep(0)
            if not self.session.closed:
                self.deliver(self.session.tick(self.now()), wake=False)
        if self._on_finished is not None:
            self._on_finished(self)

    async def stop(self) -> None:
        """Stop the timer task."""
        self._timer.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await self._timer
