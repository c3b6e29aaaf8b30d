"""The session client: handshake, typed input API, one reader task, acks, heartbeat, resume."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any, Protocol

from duplex_client.client.config import SessionConfig
from duplex_client.client.inputs import BYTES_PER_SAMPLE, AckPolicy, InputMethods
from duplex_client.client.inputs import PcmArray as PcmArray
from duplex_client.client.link import Link, Resuming, handshake
from duplex_client.client.queues import DEFAULT_QUEUE_SIZE, Broadcaster, DropOldestQueue
from duplex_client.client.queues import Subscription as Subscription
from duplex_client.client.responses import ResponseHandle, ResponseTracker
from duplex_client.client.resume import (
    ReconnectListener,
    ReconnectPolicy,
    ReconnectReport,
)
from duplex_client.client.streaming import Source, StreamResult
from duplex_client.client.streaming import stream as stream_source
from duplex_client.client.transport import Transport, TransportClosed
from duplex_client.client.waiters import Outcomes
from duplex_client.framing.units import samples_to_ms
from duplex_client.protocol import client_events as ce
from duplex_client.protocol import server_events as se
from duplex_client.protocol.capabilities import Capabilities
from duplex_client.protocol.codec import CodecError, loads
from duplex_client.protocol.errors import DuplexSessionClosedError
from duplex_client.protocol.events import TERMINAL_EVENT_TYPES, parse_server_event
from duplex_client.protocol.response_events import ResponseDone, ResponseEvent

log = logging.getLogger("duplex_client")


class EventListener(Protocol):
    """A synchronous observer of every server event as received (never drops)."""

    def __call__(self, event: se.ServerEvent, received_at: float) -> None:
        """Called from the reader task, in arrival order."""
        ...


class DuplexClientBase(InputMethods, Resuming):
    """Transport-neutral session logic; `open()` runs the handshake over a connected transport."""

    def __init__(
        self,
        *,
        model: str | None,
        config: SessionConfig | None = None,
        handshake_timeout: float = 30.0,
        close_timeout: float = 20.0,
        heartbeat_interval_s: float | None = 30.0,
        queue_size: int = DEFAULT_QUEUE_SIZE,
        ack_policy: AckPolicy = "received",
        reconnect: ReconnectPolicy | bool | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.model = model
        self.config = config or SessionConfig()
        self.handshake_timeout = handshake_timeout
        self.close_timeout = close_timeout
        self.heartbeat_interval_s = heartbeat_interval_s
        self.ack_policy: AckPolicy = ack_policy
        self.reconnect_policy = ReconnectPolicy() if reconnect is True else (reconnect or None)
        self.clock = clock
        self.session_id: str | None = None
        self.session: dict[str, Any] = {}
        self.capabilities = Capabilities()
        self.attachment_generation: int | None = None
        self.last_server_event_seq = 0
        self.errors: list[se.ErrorEvent] = []
        self.reconnects: list[ReconnectReport] = []
        self.closed_reason: str | None = None
        self._resume_token: str | None = None
        self._connect_again: Callable[[], Awaitable[Transport]] | None = None
        self._width = BYTES_PER_SAMPLE.get(self.config.input_audio_format, 2)
        self._rate = self.config.input_sample_rate_hz
        self._samples = 0
        self._events: Broadcaster[se.ServerEvent] = Broadcaster(queue_size)
        self._decided: DropOldestQueue[ResponseHandle] = DropOldestQueue(queue_size)
        self._listeners: list[EventListener] = []
        self._reconnect_listeners: list[ReconnectListener] = []
        self._outcomes = Outcomes()
        self._terminal = False
        self._closing = False
        self._finished = asyncio.Event()
        self._link = Link(
            self._finished,
            self._check_usable,
            clock,
            max_queued_bytes=(self.reconnect_policy or ReconnectPolicy()).max_queued_bytes,
        )
        self._tasks: list[asyncio.Task[None]] = []
        self._ack_task: asyncio.Task[None] | None = None
        self._playback_ack_task: asyncio.Task[None] | None = None
        self._playback_acks_due = False
        self._last_stream: StreamResult | None = None
        self.tracker = ResponseTracker(
            self._decided.put,
            sample_rate_hz=self.config.output_sample_rate_hz,
            interrupts_on_speech=self.config.interrupts_on_speech,
            clock=clock,
        )

    # --- state ---

    @property
    def audio_end_ms(self) -> int:
        """Cumulative audio appended so far, rounded to ms."""
        return round(self._samples * 1000 / self._rate)

    @property
    def audio_samples(self) -> int:
        """Cumulative audio appended so far, in samples."""
        return self._samples

    @property
    def is_open(self) -> bool:
        """Whether the session is usable for sending (also while it is being resumed)."""
        return (
            self._link.transport is not None and not self._terminal and not self._finished.is_set()
        )

    @property
    def connected(self) -> bool:
        """Whether a socket is attached right now (False while reconnecting)."""
        return self.is_open and self._link.connected

    @property
    def _resumable(self) -> bool:
        """Whether a drop is answered by reconnecting (policy, factory, id and token)."""
        return (
            self.reconnect_policy is not None
            and self._connect_again is not None
            and self.session_id is not None
            and self._resume_token is not None
        )

    # --- handshake ---

    async def open(
        self,
        transport: Transport,
        *,
        reconnect_with: Callable[[], Awaitable[Transport]] | None = None,
        budget_s: float | None = None,
    ) -> se.SessionCreated:
        """Send `session.update`, wait for `session.created`, then start the reader task.

        `reconnect_with` opens a new transport for resuming after a drop (with a policy).
        `budget_s`: what is left of `handshake_timeout` once connecting took its share.
        """
        update = ce.SessionUpdate(session=self.config.to_session(self.model))
        created, caps = await handshake(
            transport, update, self.handshake_timeout, budget_s=budget_s
        )
        self.capabilities = caps
        self.session = created.session
        self.session_id = created.session_id
        self._resume_token = created.resume_token
        self.attachment_generation = created.attachment_generation
        self._connect_again = reconnect_with
        self._link.attach(transport, ready=True)
        self._notify(created)
        self._tasks.append(asyncio.create_task(self._read_loop(), name="duplex-reader"))
        if self.heartbeat_interval_s:
            self._tasks.append(asyncio.create_task(self._heartbeat_loop(), name="duplex-heartbeat"))
        return created

    # --- sending ---

    async def _send(self, event: ce.ClientEvent) -> str:
        await self._send_dict(event.to_dict())
        return event.event_id

    async def _send_dict(self, payload: dict[str, Any]) -> None:
        await self._link.send(payload, resumable=self._resumable)

    def _check_usable(self) -> None:
        if self._link.transport is None:
            raise DuplexSessionClosedError("not connected")
        if self._terminal or self._finished.is_set():
            raise DuplexSessionClosedError(self.closed_reason or "closed")

    async def stream(self, source: Source = None, **options: Any) -> StreamResult:
        """Stream PCM/frames on the media clock (`client.streaming.stream` options).

        A follow-up call continues the previous stream's media timeline, unit numbering and
        clock anchor unless `position`/`clock`/`media_origin_ms` say otherwise.
        """
        last = self._last_stream
        if last is not None and not {"position", "clock", "media_origin_ms"} & options.keys():
            sent_ms = samples_to_ms(last.position.audio_samples, self._rate)
            if abs(sent_ms - self.audio_end_ms) <= 1:
                options["position"], options["clock"] = last.position, last.clock
        result = await stream_source(self, source, **options)
        self._last_stream = result
        return result

    # --- consuming ---

    def events(self) -> Subscription[se.ServerEvent]:
        """Every typed server event from now on (bounded; a slow consumer loses its oldest)."""
        return self._events.subscribe()

    def responses(
        self, until: Awaitable[object] | None = None, *, idle_s: float | None = None
    ) -> AsyncIterator[ResponseHandle]:
        """Response handles as their decision becomes known; the iteration ends with the session.

        `until` (an awaitable: `event.wait()`, `asyncio.sleep(10)`, a task) ends it when it
        completes; `idle_s` once no new handle came for that many seconds of waiting. Every
        call shares one queue: a handle is yielded once, and those not taken stay for the next.
        """
        if until is None and idle_s is None:
            return self._decided
        return self._decided.until(until, idle_s=idle_s)

    def add_listener(self, listener: EventListener) -> None:
        """Observe every server event synchronously in arrival order (for recorders)."""
        self._listeners.append(listener)

    def remove_listener(self, listener: EventListener) -> None:
        """Stop calling a listener added with `add_listener` (unknown ones are ignored)."""
        with contextlib.suppress(ValueError):
            self._listeners.remove(listener)

    def add_reconnect_listener(self, listener: ReconnectListener) -> None:
        """Observe each reconnection when it ends (and again if its outcome changes)."""
        if listener not in self._reconnect_listeners:
            self._reconnect_listeners.append(listener)

    def _notify(self, event: se.ServerEvent) -> None:
        now = self.clock()
        for listener in self._listeners:
            try:
                listener(event, now)
            except Exception:
                log.exception("event listener failed")
        self._events.publish(event)

    def _report(self, report: ReconnectReport) -> None:
        for listener in self._reconnect_listeners:
            try:
                listener(report)
            except Exception:
                log.exception("reconnect listener failed")

    # --- reader ---

    async def _read_loop(self) -> None:
        reason = "disconnect"
        try:
            while True:
                transport = self._link.transport
                assert transport is not None
                try:
                    data = await transport.recv()
                except TransportClosed as exc:
                    if self._closing:
                        if self.closed_reason is None:
                            reason = "client_close"
                        break
                    reason = "disconnect" if exc.code is None else f"disconnect ({exc.code})"
                    if not self._resumable:
                        break
                    failure = await self._reconnect(reason)
                    if failure is None:
                        continue
                    reason = failure
                    break
                if not isinstance(data, str):
                    continue
                try:
                    raw = loads(data)
                except CodecError as exc:
                    log.warning("ignoring undecodable server frame: %s", exc)
                    continue
                event = parse_server_event(raw)
                if self._dispatch(event):
                    reason = self.closed_reason or event.type
                    break
        finally:
            self._finish(reason)

    def _dispatch(self, event: se.ServerEvent) -> bool:
        """Apply one event; True when it ended the session."""
        seq = event.server_event_seq
        terminal = event.type in TERMINAL_EVENT_TYPES
        if seq is not None:
            if seq <= self.last_server_event_seq:
                return False  # already processed (replay)
            self.last_server_event_seq = seq
            if not terminal:
                self._schedule_ack()
        if isinstance(event, se.SessionUpdated):
            self.session = event.session
        elif isinstance(event, se.ErrorEvent):
            self.errors.append(event)
            if event.error.event_id:
                self._outcomes.settle(event.error.event_id, event)
                self._link.outbox.discard(event.error.event_id)
        elif isinstance(event, se.InputAudioBufferCommitted) and event.client_event_id:
            self._outcomes.settle(event.client_event_id, event)
            self._link.outbox.confirm(event.client_event_id)
        elif isinstance(event, se.InputAudioBufferCommitted) and event.audio_end_ms is not None:
            self._link.outbox.server_committed(event.audio_end_ms)
        elif isinstance(event, se.SessionResyncRequired):
            self._resync(event)
        elif isinstance(event, ResponseEvent) and (unit := event.unit_index) is not None:
            self._link.outbox.confirm_unit(unit)
        self.tracker.feed(event)
        if isinstance(event, ResponseDone) and self.ack_policy == "received":
            self._schedule_playback_acks()
        if terminal:
            self._terminal = True
            reason = event.raw.get("reason")
            self.closed_reason = reason if isinstance(reason, str) else event.type
        self._notify(event)
        return terminal

    # --- acks, heartbeat, end ---

    def _schedule_ack(self) -> None:
        if self._ack_task is None or self._ack_task.done():
            self._ack_task = asyncio.create_task(self._flush_ack())

    async def _flush_ack(self) -> None:
        await asyncio.sleep(0)  # coalesce every event already buffered
        if self._terminal or self._finished.is_set():
            return
        with contextlib.suppress(DuplexSessionClosedError):
            await self._send(ce.SessionEventAck(server_event_seq=self.last_server_event_seq))

    async def _heartbeat_loop(self) -> None:
        assert self.heartbeat_interval_s
        while not self._finished.is_set():
            await asyncio.sleep(self.heartbeat_interval_s)
            try:
                await self._send(ce.SessionHeartbeat())
            except DuplexSessionClosedError:
                return
            except Exception:
                log.warning("heartbeat send failed", exc_info=True)

    def _finish(self, reason: str) -> None:
        if self._finished.is_set():
            return
        if self.closed_reason is None:
            self.closed_reason = reason
        self._finished.set()
        self.tracker.close(self.closed_reason)
        self._decided.close()
        self._events.close()
        self._outcomes.close(self.closed_reason)

    async def wait_closed(self, timeout: float | None = None) -> str:
        """Wait until the session ended; returns the reason."""
        async with asyncio.timeout(timeout):  # not wait_for: it can swallow a cancel (3.11)
            await self._finished.wait()
        return self.closed_reason or "closed"

    async def close(self, reason: str | None = None) -> None:
        """`session.close`, wait for `session.closed` (up to `close_timeout`), close the socket.

        While a resume is in progress the close waits for it (also up to `close_timeout`).
        """
        if self._link.transport is None:
            return
        if not self._finished.is_set() and not self._terminal:
            self._closing = True
            with contextlib.suppress(DuplexSessionClosedError, TimeoutError):
                await asyncio.wait_for(
                    self._send(ce.SessionClose(reason=reason)), self.close_timeout
                )
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._finished.wait(), self.close_timeout)
        await self._link.transport.close()
        self._finish("client_close")
        current = asyncio.current_task()
        own = (*self._tasks, self._ack_task, self._playback_ack_task)
        tasks = [t for t in own if t is not None and t is not current]
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
