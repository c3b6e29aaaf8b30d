"""The asyncio side of a session: one reader task, the timers the connection asks for, resumes.

`Driver.perform` carries out a `ClientConnection` output in order. Writes the reader task
is handed go out from tasks of their own (it never waits on the socket's send side); timers
(acks once the buffered events are in, playback acks, heartbeats) call the connection back;
`Reconnect` and `Resend` are run by the reader itself, which reads nothing meanwhile.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Coroutine, Iterable
from typing import Any

from duplex_client.client.consumers import Consumers
from duplex_client.client.link import Link
from duplex_client.client.responses import ResponseHandle
from duplex_client.client.resume import (
    ReconnectPolicy,
    ReconnectReport,
    ResumeFailed,
    ResyncRequired,
    open_new_session,
    resume_attempts,
)
from duplex_client.client.transport import Transport, TransportClosed
from duplex_client.protocol.errors import DuplexSessionClosedError
from duplex_client.protocol.session import (
    ClientConnection,
    Closed,
    Decided,
    Deliver,
    Output,
    Reconnect,
    Resend,
    Resynced,
    ScheduleAck,
    ScheduleHeartbeat,
    SchedulePlaybackAcks,
    Send,
    Settled,
)

#: Timer and write tasks kept before the finished ones are dropped from the set.
_PRUNE_AT = 32

log = logging.getLogger("duplex_client")


class Driver:
    """Runs one session's I/O over its connection, link and consumers."""

    def __init__(
        self,
        connection: ClientConnection[ResponseHandle],
        link: Link,
        consumers: Consumers,
        *,
        clock: Callable[[], float],
        policy: ReconnectPolicy | None,
        sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
    ) -> None:
        self.policy = policy
        #: One report per reconnection, in order.
        self.reconnects: list[ReconnectReport] = []
        #: The task reading the socket (None before `start`).
        self.reader: asyncio.Task[None] | None = None
        self._conn = connection
        self._link = link
        self._consumers = consumers
        self._clock = clock
        self._sleep = sleep
        self._connect_again: Callable[[], Awaitable[Transport]] | None = None
        self._tasks: set[asyncio.Task[None]] = set()

    def start(self, connect_again: Callable[[], Awaitable[Transport]] | None) -> None:
        """Start reading; `connect_again` opens a new socket for resuming (None: never)."""
        self._connect_again = connect_again
        self.reader = asyncio.create_task(self._read(), name="duplex-reader")

    def perform(self, output: Output) -> list[Send]:
        """Carry out `output`'s effects in order; returns its writes, for the caller to make."""
        sends: list[Send] = []
        for effect in output.effects:
            if isinstance(effect, Deliver):
                self._consumers.deliver(effect.event)
            elif isinstance(effect, Decided):
                handle = effect.handle
                assert isinstance(handle, ResponseHandle)  # the session makes only handles
                self._consumers.decide(handle)
            elif isinstance(effect, Settled):
                self._consumers.settle(effect.event_id, effect.outcome)
            elif isinstance(effect, Send):
                sends.append(effect)
            elif isinstance(effect, ScheduleAck):
                # two loop passes from now, when a task's `sleep(0)` would have resumed (every
                # event already buffered is read first); a task only if the write must wait
                asyncio.get_running_loop().call_soon(self._ack_next_pass)
            elif isinstance(effect, SchedulePlaybackAcks):
                self._spawn(self._playback_acks_soon(), "duplex-playback-ack")
            elif isinstance(effect, ScheduleHeartbeat):
                self._spawn(self._beat(effect.delay_s), "duplex-heartbeat")
            elif isinstance(effect, Resynced):
                self._resynced(effect.reason)
            elif isinstance(effect, Closed):
                self._consumers.end(effect.reason)
            # Reconnect and Resend are run by the reader, which awaits them (`_read`).
        self._link.sync()
        return sends

    async def stop(self) -> None:
        """Cancel the reader and every timer (not the calling task) and wait for them."""
        current = asyncio.current_task()
        tasks = [t for t in (self.reader, *self._tasks) if t is not None and t is not current]
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)

    # --- reading ---

    async def _read(self) -> None:
        conn = self._conn
        try:
            while not conn.ended:
                transport = self._link.transport
                assert transport is not None
                try:
                    data = await transport.recv()
                except TransportClosed as exc:
                    if conn.ended:
                        break
                    output = conn.connection_lost(exc.code)
                    self._write_later(self.perform(output))
                    for effect in output.of(Reconnect):
                        await self._reconnect(effect.cause)
                    continue
                if conn.ended:
                    break
                self._write_later(self.perform(conn.receive_data(data)))
        finally:
            if not conn.ended:
                self.perform(conn.terminate("disconnect"))

    async def _reconnect(self, cause: str) -> None:
        """Resume on a new socket (§6.1), or end the session when that fails."""
        assert self.policy is not None and self._connect_again is not None
        await self._link.drop()
        report = ReconnectReport(index=len(self.reconnects), started_at=self._clock(), cause=cause)
        self.reconnects.append(report)
        log.info("connection lost (%s); reconnecting", cause)
        try:
            got = await resume_attempts(self.policy, self._connect_again, self._conn.resume_request)
        except ResyncRequired as exc:
            if self.policy.new_session_on_resync:
                await self._new_session(report, cause, exc)
                return
            self._failed(report, cause, exc)
            return
        except ResumeFailed as exc:
            self._failed(report, cause, exc)
            return
        self._link.attach(got.transport)
        report.ended_at, report.attempts, report.outcome = self._clock(), got.attempt, "resumed"
        output = self._conn.resumed(got.event, got.attempt)
        self._write_later(self.perform(output))
        for resend in output.of(Resend):
            report.unresolved = resend.unresolved
            report.deliveries.extend(await self._link.resend(self._clock))
        if report.unresolved:
            log.warning("resume: %d input event(s) may be lost", report.unresolved)
        self._consumers.report(report)

    def _failed(self, report: ReconnectReport, cause: str, exc: ResumeFailed) -> None:
        report.ended_at, report.attempts = self._clock(), exc.attempts
        report.outcome = "resync_required" if isinstance(exc, ResyncRequired) else "failed"
        report.error = str(exc)
        self._consumers.report(report)
        self.perform(self._conn.resume_failed(f"{cause}; {exc}", fatal=exc.code is not None))

    async def _new_session(self, report: ReconnectReport, cause: str, gap: ResyncRequired) -> None:
        """A journal gap lost the session: open a replacement and carry on in it (§6.1)."""
        assert self.policy is not None and self._connect_again is not None
        report.previous_session_id = self._conn.session_id
        log.warning("session %s: %s; opening a new session", report.previous_session_id, gap)
        update = self._conn.new_session_update()
        try:
            transport, created = await open_new_session(
                self.policy, self._connect_again, update.data
            )
        except ResumeFailed as exc:
            self._failed(report, cause, ResyncRequired(f"{gap.reason}; {exc}", gap.attempts))
            return
        self._link.attach(transport)
        output = self._conn.new_session(created, gap.attempts)
        report.ended_at, report.attempts = self._clock(), gap.attempts
        report.outcome, report.new_session_id = "new_session", created.session_id
        self._write_later(self.perform(output))
        for resend in output.of(Resend):
            report.unresolved = resend.unresolved
            report.deliveries.extend(await self._link.resend(self._clock))
        log.warning("%s", report.describe())
        self._consumers.report(report)

    def _resynced(self, reason: str | None) -> None:
        """A journal gap right after a resume turns that resume's outcome (§6.1)."""
        last = self.reconnects[-1] if self.reconnects else None
        if reason == "journal_gap" and last is not None and last.outcome == "resumed":
            last.outcome = "resync_required"
            self._consumers.report(last)

    # --- timers and background writes ---

    def _ack_next_pass(self) -> None:
        asyncio.get_running_loop().call_soon(self._ack_now)

    def _ack_now(self) -> None:
        send = self._conn.ack()
        if send is not None:
            self._write_later((send,))

    async def _playback_acks_soon(self) -> None:
        await asyncio.sleep(0)  # one pass for every response.done already buffered
        for send in self._conn.playback_acks():
            await self._write(send)

    async def _beat(self, delay_s: float) -> None:
        await self._sleep(delay_s)
        for send in self.perform(self._conn.heartbeat()):
            await self._write(send)

    def _write_later(self, sends: Iterable[Send]) -> None:
        """Write each send at once if the socket takes it without waiting, else from a task."""
        writing = False  # once one waits, the rest queue behind it in order
        for send in sends:
            if writing or not self._link.write_now(send):
                writing = True
                self._spawn(self._write(send), "duplex-write")

    async def _write(self, send: Send) -> None:
        try:
            await self._link.transmit(send)
        except DuplexSessionClosedError:
            pass
        except Exception:
            log.warning("background send failed", exc_info=True)

    def _spawn(self, coro: Coroutine[Any, Any, None], name: str) -> None:
        # Finished tasks are pruned here now and then, not by a done callback each: that
        # would cost the loop one more callback per ack and background write
        if len(self._tasks) >= _PRUNE_AT:
            self._tasks = {t for t in self._tasks if not t.done()}
        self._tasks.add(asyncio.create_task(coro, name=name))
