"""The client's socket side: handshake, current transport, ordered sends, resends, resume.

With resumption possible, appends and commits go through the outbox: while the socket is
down they are queued (the caller's media clock is never held up) and after a resume
`flush` sends what the server lacks, original ids and order first, before anything new.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable
from typing import Any

from duplex_client.client.outbox import InputKind, Outbox
from duplex_client.client.resume import (
    Delivery,
    ReconnectPolicy,
    ReconnectReport,
    ResumeFailed,
    resume_attempts,
)
from duplex_client.client.transport import Transport, TransportClosed
from duplex_client.protocol import client_events as ce
from duplex_client.protocol import server_events as se
from duplex_client.protocol.capabilities import Capabilities
from duplex_client.protocol.codec import CodecError, dumps, loads
from duplex_client.protocol.errors import (
    DuplexConnectionError,
    DuplexProtocolError,
    DuplexSessionClosedError,
)
from duplex_client.protocol.events import parse_server_event
from duplex_client.protocol.response_events import ConnectionResumed

log = logging.getLogger("duplex_client")

#: Input events kept for resending after a resume (protocol.md §6.1).
INPUT_KINDS: dict[str, InputKind] = {
    "input_audio_buffer.append": "append",
    "input_audio_buffer.commit": "commit",
}
#: Events that are pointless after a reconnect (a new ack or heartbeat follows anyway).
DROPPABLE = frozenset({"session.event_ack", "session.heartbeat"})


async def handshake(
    transport: Transport,
    update: ce.SessionUpdate,
    timeout: float,
    *,
    budget_s: float | None = None,
) -> tuple[se.SessionCreated, Capabilities]:
    """Send `session.update`, wait for `session.created` (§2); the transport closes on failure.

    `budget_s`: the part of `timeout` left after connecting (the timeout covers both).
    """
    try:
        await transport.send(dumps(update.to_dict()))
        wait = timeout if budget_s is None else budget_s
        created = await asyncio.wait_for(_await_created(transport), wait)
    except TimeoutError:
        await transport.close()
        since = "of session.update" if budget_s is None else "of connecting"
        raise DuplexProtocolError(f"no session.created within {timeout:g} s {since}") from None
    except TransportClosed as exc:
        await transport.close()
        raise DuplexConnectionError(f"connection closed during the handshake: {exc}") from None
    except BaseException:
        await transport.close()
        raise
    caps = created.capabilities
    if caps is None:
        await transport.close()
        raise DuplexProtocolError(
            "endpoint is not a duplex handler: session.created has no capabilities"
        )
    return created, caps


async def _await_created(transport: Transport) -> se.SessionCreated:
    while True:
        data = await transport.recv()
        if not isinstance(data, str):
            continue  # binary frames are ignored
        try:
            event = parse_server_event(loads(data))
        except CodecError:
            continue
        if isinstance(event, se.ErrorEvent):
            raise DuplexProtocolError.from_error(event.error, event.raw)
        if isinstance(event, se.SessionCreated):
            return event


class Link:
    """One client's connection state across sockets; `check()` raises once the session ended."""

    def __init__(
        self,
        finished: asyncio.Event,
        check: Callable[[], None],
        clock: Callable[[], float],
        *,
        max_queued_bytes: int = 64 * 1024 * 1024,
    ) -> None:
        self.transport: Transport | None = None
        #: Counts the sockets this session has been attached through (1 after the handshake).
        self.connection = 0
        self.outbox = Outbox()
        self.max_queued_bytes = max_queued_bytes
        self._connected = asyncio.Event()
        self._finished = finished
        self._check = check
        self._clock = clock
        self._lock = asyncio.Lock()

    @property
    def connected(self) -> bool:
        """Whether sends go straight to a socket."""
        return self._connected.is_set()

    def attach(self, transport: Transport, *, ready: bool) -> None:
        """A new socket; `ready` opens sending at once (the handshake), else `flush` does."""
        self.transport = transport
        self.connection += 1
        if ready:
            self._connected.set()

    def detach(self) -> None:
        """The socket is gone: hold sends until the next `flush`."""
        self._connected.clear()

    async def send(self, payload: dict[str, Any], *, resumable: bool) -> None:
        """Send one event; input is kept for resending when `resumable`."""
        self._check()
        data = dumps(payload)
        etype = payload.get("type")
        kind = INPUT_KINDS.get(etype) if isinstance(etype, str) else None
        event_id = payload.get("event_id")
        if kind is not None and isinstance(event_id, str) and resumable:
            unit, end = payload.get("unit_index"), payload.get("audio_end_ms")
            await self._send_input(
                event_id,
                kind,
                data,
                unit if isinstance(unit, int) else None,
                end if isinstance(end, int) else None,
            )
        else:
            await self._send_control(data, droppable=etype in DROPPABLE, resumable=resumable)

    async def _send_input(
        self, event_id: str, kind: InputKind, data: bytes, unit: int | None, end_ms: int | None
    ) -> None:
        if not self.connected and self.outbox.unsent_bytes > self.max_queued_bytes:
            await self.wait_connected()
        entry = self.outbox.add(
            event_id, kind, data, unit=unit, audio_end_ms=end_ms, trim=self.connected
        )
        if not self.connected:
            return  # queued: it goes out right after the resume
        async with self._lock:
            transport = self.transport
            if transport is None or not self.connected or entry.wire is not None:
                return
            try:
                await transport.send(data)
            except TransportClosed:
                self._lost(transport, resumable=True)
                return  # the reader resumes; the entry goes out then
            entry.wire = self.connection

    async def _send_control(self, data: bytes, *, droppable: bool, resumable: bool) -> None:
        """Send now, or once resumed; a frame that failed to leave is sent once more then."""
        for _ in range(2):
            if not self.connected:
                if droppable:
                    return
                await self.wait_connected()
            async with self._lock:
                transport = self.transport
                assert transport is not None
                try:
                    await transport.send(data)
                    return
                except TransportClosed as exc:
                    self._lost(transport, resumable=resumable)
                    if droppable:
                        return
                    if not resumable:
                        raise DuplexSessionClosedError(f"connection lost ({exc})") from None
        raise DuplexSessionClosedError("connection lost again while sending")

    def _lost(self, transport: Transport, *, resumable: bool) -> None:
        if transport is self.transport and resumable:
            self._connected.clear()

    async def wait_connected(self) -> None:
        """Until sending is open again; `DuplexSessionClosedError` if the session ends first."""
        while not self.connected:
            self._check()
            waits = [
                asyncio.ensure_future(self._connected.wait()),
                asyncio.ensure_future(self._finished.wait()),
            ]
            try:
                await asyncio.wait(waits, return_when=asyncio.FIRST_COMPLETED)
            finally:
                for waiter in waits:
                    waiter.cancel()
        self._check()

    async def flush(self, view: dict[str, Any] | None, report: ReconnectReport) -> None:
        """After `session.resumed`: send what the server lacks, then open sending (§6.1).

        Without `view` (`session.resumed.input`) nothing already written is sent again, as
        the client could not rule out duplicates; input queued while disconnected still goes.
        """
        last = view.get("last_event_id") if isinstance(view, dict) else None
        placed = (
            isinstance(view, dict)
            and (last is None or isinstance(last, str))
            and self.outbox.pending_after(last)
        )
        if not placed:
            report.unresolved = self.outbox.drop_written()
        async with self._lock:
            transport = self.transport
            assert transport is not None
            n = 0
            while (entry := self.outbox.entry_from(n)) is not None:
                n = entry.n + 1
                resend = entry.wire is not None
                try:
                    await transport.send(entry.data)
                except TransportClosed:
                    return  # dropped again: the reader notices and reconnects
                entry.wire = self.connection
                report.deliveries.append(
                    Delivery(entry.event_id, entry.kind, self._clock(), resend)
                )
            self._connected.set()


class Resuming:
    """Reconnect and resume for the session client (§6.1); `DuplexClientBase` holds the state."""

    reconnect_policy: ReconnectPolicy | None
    session_id: str | None
    attachment_generation: int | None
    last_server_event_seq: int
    reconnects: list[ReconnectReport]
    clock: Callable[[], float]
    _link: Link
    _resume_token: str | None
    _connect_again: Callable[[], Awaitable[Transport]] | None

    def _notify(self, event: se.ServerEvent) -> None:
        raise NotImplementedError

    def _report(self, report: ReconnectReport) -> None:
        raise NotImplementedError

    def _dispatch(self, event: se.ServerEvent) -> bool:
        raise NotImplementedError

    def _resync(self, event: se.SessionResyncRequired) -> None:
        """No resume guarantees any more: forget the token and the resend outbox (§6.1)."""
        self._resume_token = None
        self._link.outbox.clear()
        last = self.reconnects[-1] if self.reconnects else None
        if event.reason == "journal_gap" and last is not None and last.outcome == "resumed":
            last.outcome = "resync_required"
            self._report(last)

    def _resume_event(self) -> ce.SessionResume:
        assert self.session_id is not None and self._resume_token is not None
        return ce.SessionResume(
            session_id=self.session_id,
            resume_token=self._resume_token,
            last_received_server_event_seq=self.last_server_event_seq,
        )

    async def _reconnect(self, cause: str) -> str | None:
        """Resume on a new socket (§6.1); None on success, else why the session ended."""
        assert self.reconnect_policy is not None and self._connect_again is not None
        self._link.detach()
        old = self._link.transport
        if old is not None:
            with contextlib.suppress(Exception):
                await old.close()
        report = ReconnectReport(index=len(self.reconnects), started_at=self.clock(), cause=cause)
        self.reconnects.append(report)
        log.info("connection lost (%s); reconnecting", cause)
        try:
            got = await resume_attempts(
                self.reconnect_policy, self._connect_again, self._resume_event
            )
        except ResumeFailed as exc:
            if exc.code is not None:
                self._resume_token = None
            report.ended_at, report.attempts = self.clock(), exc.attempts
            report.outcome, report.error = "failed", str(exc)
            self._report(report)
            return f"{cause}; {exc}"
        resumed = got.event
        self._link.attach(got.transport, ready=False)
        if resumed.resume_token:
            self._resume_token = resumed.resume_token
        if resumed.attachment_generation is not None:
            self.attachment_generation = resumed.attachment_generation
        report.ended_at, report.attempts, report.outcome = self.clock(), got.attempt, "resumed"
        raw = {"type": ConnectionResumed.TYPE, "attempt": got.attempt}
        self._notify(ConnectionResumed.from_raw(raw))
        self._dispatch(resumed)
        await self._link.flush(resumed.input, report)
        if report.unresolved:
            log.warning("resume: %d input event(s) may be lost", report.unresolved)
        self._report(report)
        return None
