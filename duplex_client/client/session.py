"""The session client: handshake, typed input API, one reader task, acks and heartbeat."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import ssl as ssl_module
import time
from collections.abc import AsyncIterator, Callable, Sequence
from types import TracebackType
from typing import Any, Literal, Protocol

from duplex_client.client.config import SessionConfig
from duplex_client.client.queues import DEFAULT_QUEUE_SIZE, Broadcaster, DropOldestQueue
from duplex_client.client.queues import Subscription as Subscription
from duplex_client.client.responses import ResponseHandle, ResponseTracker
from duplex_client.client.streaming import Source, StreamResult
from duplex_client.client.streaming import stream as stream_source
from duplex_client.client.transport import Transport, TransportClosed, WebSocketTransport, build_url
from duplex_client.framing.units import samples_to_ms
from duplex_client.protocol import client_events as ce
from duplex_client.protocol import server_events as se
from duplex_client.protocol.capabilities import Capabilities
from duplex_client.protocol.codec import CodecError, b64encode, dumps, encode_image, loads
from duplex_client.protocol.errors import (
    DuplexConnectionError,
    DuplexProtocolError,
    DuplexSessionClosedError,
)
from duplex_client.protocol.events import TERMINAL_EVENT_TYPES, parse_server_event

log = logging.getLogger("duplex_client")

_BYTES_PER_SAMPLE = {"pcm16": 2, "pcm_s16le": 2, "s16le": 2, "pcm_f32le": 4}
AckPolicy = Literal["received", "manual"]
#: How many settled request outcomes are kept for waiters that arrive late.
_SETTLED_CACHE = 256


class EventListener(Protocol):
    """A synchronous observer of every server event as received (never drops)."""

    def __call__(self, event: se.ServerEvent, received_at: float) -> None:
        """Called from the reader task, in arrival order."""
        ...


class PcmArray(Protocol):
    """The part of a numpy array `append_input` uses (numpy is not imported here)."""

    @property
    def dtype(self) -> Any:
        """Element type."""
        ...

    @property
    def ndim(self) -> int:
        """Number of dimensions."""
        ...

    def tobytes(self) -> bytes:
        """Raw bytes."""
        ...


def _pcm_bytes(pcm: bytes | bytearray | memoryview | PcmArray | None, width: int) -> bytes:
    if pcm is None:
        return b""
    if isinstance(pcm, bytes | bytearray | memoryview):
        data = bytes(pcm)
    else:
        expected = "int16" if width == 2 else "float32"
        if str(pcm.dtype) != expected or pcm.ndim != 1:
            raise ValueError(f"pcm array must be 1-D {expected}, got {pcm.ndim}-D {pcm.dtype}")
        data = pcm.tobytes()
    if len(data) % width:
        raise ValueError(f"pcm length {len(data)} is not a multiple of the sample width {width}")
    return data


class DuplexClientBase:
    """Transport-neutral session logic; `open()` runs the handshake over a connected transport."""

    def __init__(
        self,
        *,
        model: str,
        config: SessionConfig | None = None,
        handshake_timeout: float = 30.0,
        close_timeout: float = 20.0,
        heartbeat_interval_s: float | None = 30.0,
        queue_size: int = DEFAULT_QUEUE_SIZE,
        ack_policy: AckPolicy = "received",
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.model = model
        self.config = config or SessionConfig()
        self.handshake_timeout = handshake_timeout
        self.close_timeout = close_timeout
        self.heartbeat_interval_s = heartbeat_interval_s
        self.ack_policy: AckPolicy = ack_policy
        self.clock = clock
        self.session_id: str | None = None
        self.session: dict[str, Any] = {}
        self.capabilities = Capabilities()
        self.attachment_generation: int | None = None
        self.last_server_event_seq = 0
        self.errors: list[se.ErrorEvent] = []
        self.closed_reason: str | None = None
        self._resume_token: str | None = None
        self._transport: Transport | None = None
        self._width = _BYTES_PER_SAMPLE.get(self.config.input_audio_format, 2)
        self._rate = self.config.input_sample_rate_hz
        self._samples = 0
        self._events: Broadcaster[se.ServerEvent] = Broadcaster(queue_size)
        self._decided: DropOldestQueue[ResponseHandle] = DropOldestQueue(queue_size)
        self._listeners: list[EventListener] = []
        self._pending: dict[str, asyncio.Future[se.ServerEvent]] = {}
        self._settled: dict[str, se.ServerEvent] = {}
        self._terminal = False
        self._closing = False
        self._finished = asyncio.Event()
        self._send_lock = asyncio.Lock()
        self._tasks: list[asyncio.Task[None]] = []
        self._ack_task: asyncio.Task[None] | None = None
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
        """Whether the session is usable for sending."""
        return self._transport is not None and not self._terminal and not self._finished.is_set()

    # --- handshake ---

    async def open(self, transport: Transport) -> se.SessionCreated:
        """Send `session.update`, wait for `session.created`, then start the reader task."""
        self._transport = transport
        update = ce.SessionUpdate(session=self.config.to_session(self.model))
        try:
            await transport.send(dumps(update.to_dict()))
            created = await asyncio.wait_for(self._await_created(), self.handshake_timeout)
        except TimeoutError:
            await transport.close()
            raise DuplexProtocolError(
                f"no session.created within {self.handshake_timeout:g} s of session.update"
            ) from None
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
        self.capabilities = caps
        self.session = created.session
        self.session_id = created.session_id
        self._resume_token = created.resume_token
        self.attachment_generation = created.attachment_generation
        self._notify(created)
        self._tasks.append(asyncio.create_task(self._read_loop(), name="duplex-reader"))
        if self.heartbeat_interval_s:
            self._tasks.append(asyncio.create_task(self._heartbeat_loop(), name="duplex-heartbeat"))
        return created

    async def _await_created(self) -> se.SessionCreated:
        assert self._transport is not None
        while True:
            data = await self._transport.recv()
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

    # --- sending ---

    async def _send(self, event: ce.ClientEvent) -> str:
        await self._send_dict(event.to_dict())
        return event.event_id

    async def _send_dict(self, payload: dict[str, Any]) -> None:
        if self._transport is None:
            raise DuplexSessionClosedError("not connected")
        if self._terminal or self._finished.is_set():
            raise DuplexSessionClosedError(self.closed_reason or "closed")
        data = dumps(payload)
        async with self._send_lock:
            try:
                await self._transport.send(data)
            except TransportClosed as exc:
                raise DuplexSessionClosedError(f"connection lost ({exc})") from None

    async def append_input(
        self,
        pcm: bytes | bytearray | memoryview | PcmArray | None = None,
        *,
        video_frames: Sequence[bytes | str] = (),
        is_speech: bool | None = None,
        media_start_ms: int | None = None,
        media_end_ms: int | None = None,
        unit_index: int | None = None,
    ) -> str:
        """Append PCM and/or frames; empty PCM with frames is a VISION unit. Returns the id."""
        data = _pcm_bytes(pcm, self._width)
        frames = tuple(encode_image(f) for f in video_frames)
        if not data and not frames:
            raise ValueError("an append needs audio, video frames or both")
        if len(frames) > self.capabilities.max_frames_per_append:
            raise ValueError(
                f"{len(frames)} frames exceed max_frames_per_append="
                f"{self.capabilities.max_frames_per_append}"
            )
        if any(not f for f in frames):
            raise ValueError("video frames must be non-empty")
        samples = len(data) // self._width
        total = self._samples + samples
        event = ce.InputAudioBufferAppend(
            audio=b64encode(data) if data else "",
            duration_ms=round(samples * 1000 / self._rate),
            audio_end_ms=round(total * 1000 / self._rate),
            video_frames=frames,
            format=self.config.input_audio_format if data else None,
            sample_rate_hz=self._rate if data else None,
            is_speech=is_speech if data or is_speech is not None else False,
            media_start_ms=media_start_ms,
            media_end_ms=media_end_ms,
            unit_index=unit_index,
        )
        await self._send(event)
        self._samples = total
        return event.event_id

    async def commit(self, *, final: bool = True, create_response: bool | None = None) -> str:
        """Seal the turn (`final=False`: flush whole units only). Acks finished responses first."""
        await self._ack_finished()
        return await self._send(
            ce.InputAudioBufferCommit(final=final, response_create=create_response)
        )

    async def create_response(self, **options: Any) -> str:
        """Ask for a response; options go into `response` (modalities, instructions, ...)."""
        return await self._send(ce.ResponseCreate(response=dict(options)))

    async def cancel_response(self, response_id: str | None = None) -> str:
        """Cancel a response (default: the active one); its audio is fenced at once."""
        target = response_id or (self.tracker.active.response_id if self.tracker.active else None)
        self.tracker.fence(target)
        return await self._send(ce.ResponseCancel(response_id=response_id))

    async def clear_output_audio(self, response_id: str | None = None) -> str:
        """Ask the server to stop sending a response's audio; it is fenced at once."""
        target = response_id or (self.tracker.active.response_id if self.tracker.active else None)
        self.tracker.fence(target)
        return await self._send(ce.OutputAudioBufferClear(response_id=response_id))

    async def clear_input(self) -> str:
        """Drop the server's buffered input (`input_audio_buffer.clear`)."""
        return await self._send(ce.InputAudioBufferClear())

    async def ack_playback(
        self,
        played_ms: int,
        *,
        response_id: str,
        committed_ms: int | None = None,
        truncate: bool = False,
    ) -> str | None:
        """Report audio actually played; None (nothing sent) if the server takes no acks."""
        if not self.capabilities.supports_playback_ack:
            return None
        handle = self.tracker.handles.get(response_id)
        played = int(played_ms)
        if handle is not None:
            played = max(played, handle.acked_ms or 0)
            handle.played_ms = played
            handle.acked_ms = played
        event = ce.PlaybackAck(
            response_id=response_id, played_ms=played, committed_ms=committed_ms, truncate=truncate
        )
        return await self._send(event)

    async def _ack_finished(self) -> None:
        """Ack-before-commit: every finished response not yet acked is acked now (§7)."""
        if not self.capabilities.supports_playback_ack:
            return
        for handle in self.tracker.finished:
            if handle.response_id is None or handle.acked_ms is not None:
                continue
            played = handle.audio_ms if self.ack_policy == "received" else handle.played_ms
            await self.ack_playback(played, response_id=handle.response_id, truncate=handle.fenced)

    async def send_raw(self, event: dict[str, Any]) -> str | None:
        """Send any event object as is (escape hatch); returns its `event_id` if it has one."""
        await self._send_dict(event)
        eid = event.get("event_id")
        return eid if isinstance(eid, str) else None

    async def wait_committed(
        self, event_id: str, timeout: float | None = None
    ) -> se.InputAudioBufferCommitted:
        """Wait for the acknowledgement of a commit; an error echoing its id raises."""
        result = await asyncio.wait_for(self._future_for(event_id), timeout)
        assert isinstance(result, se.InputAudioBufferCommitted)
        return result

    def _future_for(self, event_id: str) -> asyncio.Future[se.ServerEvent]:
        fut = self._pending.get(event_id)
        if fut is None:
            fut = asyncio.get_running_loop().create_future()
            settled = self._settled.pop(event_id, None)
            if settled is not None:
                self._resolve(fut, settled)
            elif self._finished.is_set():
                fut.set_exception(DuplexSessionClosedError(self.closed_reason or "closed"))
            else:
                self._pending[event_id] = fut
        return fut

    def _settle(self, event_id: str, event: se.ServerEvent) -> None:
        """Resolve a waiter for `event_id`, or remember the outcome for a later waiter."""
        fut = self._pending.pop(event_id, None)
        if fut is not None:
            self._resolve(fut, event)
            return
        self._settled[event_id] = event
        while len(self._settled) > _SETTLED_CACHE:
            self._settled.pop(next(iter(self._settled)))

    @staticmethod
    def _resolve(fut: asyncio.Future[se.ServerEvent], event: se.ServerEvent) -> None:
        if fut.done():
            return
        if isinstance(event, se.ErrorEvent):
            fut.set_exception(DuplexProtocolError.from_error(event.error, event.raw))
        else:
            fut.set_result(event)

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

    def responses(self) -> AsyncIterator[ResponseHandle]:
        """Response handles as their decision becomes known, until the session ends."""
        return self._decided

    def add_listener(self, listener: EventListener) -> None:
        """Observe every server event synchronously in arrival order (for recorders)."""
        self._listeners.append(listener)

    def _notify(self, event: se.ServerEvent) -> None:
        now = self.clock()
        for listener in self._listeners:
            try:
                listener(event, now)
            except Exception:
                log.exception("event listener failed")
        self._events.publish(event)

    # --- reader ---

    async def _read_loop(self) -> None:
        assert self._transport is not None
        reason = "disconnect"
        try:
            while True:
                data = await self._transport.recv()
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
        except TransportClosed as exc:
            if self._closing and self.closed_reason is None:
                reason = "client_close"
            elif exc.code is not None:
                reason = f"disconnect ({exc.code})"
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
                self._settle(event.error.event_id, event)
        elif isinstance(event, se.InputAudioBufferCommitted) and event.client_event_id:
            self._settle(event.client_event_id, event)
        self.tracker.feed(event)
        if terminal:
            self._terminal = True
            reason = event.raw.get("reason")
            self.closed_reason = reason if isinstance(reason, str) else event.type
        self._notify(event)
        return terminal

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
        for fut in self._pending.values():
            if not fut.done():
                fut.set_exception(DuplexSessionClosedError(self.closed_reason))
        self._pending.clear()

    async def wait_closed(self, timeout: float | None = None) -> str:
        """Wait until the session ended; returns the reason."""
        await asyncio.wait_for(self._finished.wait(), timeout)
        return self.closed_reason or "closed"

    async def close(self, reason: str | None = None) -> None:
        """`session.close`, wait for `session.closed` (up to `close_timeout`), close the socket."""
        if self._transport is None:
            return
        if not self._finished.is_set() and not self._terminal:
            self._closing = True
            with contextlib.suppress(DuplexSessionClosedError):
                await self._send(ce.SessionClose(reason=reason))
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._finished.wait(), self.close_timeout)
        await self._transport.close()
        self._finish("client_close")
        current = asyncio.current_task()
        tasks = [t for t in (*self._tasks, self._ack_task) if t is not None and t is not current]
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)


class DuplexClient(DuplexClientBase):
    """Async context manager over a real WebSocket session (protocol.md §2–§3)."""

    def __init__(
        self,
        url: str,
        *,
        model: str = "openbmb/MiniCPM-o-4_5",
        config: SessionConfig | None = None,
        api_key: str | None = None,
        ssl: ssl_module.SSLContext | bool | None = None,
        open_timeout: float = 10.0,
        proxy: bool = False,
        **options: Any,
    ) -> None:
        super().__init__(model=model, config=config, **options)
        self.url = build_url(url, model)
        self._api_key = api_key
        self._ssl = ssl
        self._open_timeout = open_timeout
        self._proxy = proxy

    async def connect(self) -> se.SessionCreated:
        """Open the socket and run the handshake."""
        transport = await WebSocketTransport.connect(
            self.url,
            api_key=self._api_key,
            ssl=self._ssl,
            open_timeout=self._open_timeout,
            proxy=self._proxy,
        )
        return await self.open(transport)

    async def __aenter__(self) -> DuplexClient:
        await self.connect()
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.close()
