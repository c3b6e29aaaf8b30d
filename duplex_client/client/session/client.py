"""The session client (asyncio): a thin shell over the sans-I/O `ClientConnection`.

The connection decides (states, seq/acks, the outbox, responses, request outcomes); the
`Link` writes to the socket in call order, the `Driver` reads, runs timers and resumes, and
`Consumers` hands events, responses and outcomes to the caller.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any, Unpack

from duplex_client.client.consumers import Consumers
from duplex_client.client.consumers import EventListener as EventListener
from duplex_client.client.deliveries import InputLedger
from duplex_client.client.driver import Driver
from duplex_client.client.image_items import ImageItems, data_url, image_item
from duplex_client.client.link import Link, handshake
from duplex_client.client.queues import DEFAULT_QUEUE_SIZE
from duplex_client.client.queues import Subscription as Subscription
from duplex_client.client.responses import ResponseHandle
from duplex_client.client.resume import ReconnectListener, ReconnectPolicy
from duplex_client.client.session.g711 import encode_g711
from duplex_client.client.session.state import SessionState
from duplex_client.client.stream_end import StreamEnd, stream_end_of
from duplex_client.client.streaming import Source, StreamResult
from duplex_client.client.streaming import stream as stream_source
from duplex_client.client.tools import CallRecord, FunctionCall, ToolDesk
from duplex_client.client.tools import Handler as ToolHandler
from duplex_client.client.transport import Transport
from duplex_client.framing.units import samples_to_ms
from duplex_client.protocol import client_events as ce
from duplex_client.protocol import server_events as se
from duplex_client.protocol.errors import DuplexSessionClosedError
from duplex_client.protocol.session import (
    AckPolicy,
    AppendFields,
    ClientConnection,
    LocalProtocolError,
    PcmInput,
    Send,
    SessionConfig,
    State,
    unwrap,
)
from duplex_client.protocol.session import PcmArray as PcmArray
from duplex_client.protocol.tools import function_call_output, output_text


class DuplexClientBase(SessionState):
    """Transport-neutral session client; `open()` runs the handshake over a connected transport."""

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
        self._images = ImageItems()
        #: How the continuous stream ended (`end_stream`); None before that.
        self.stream_end: StreamEnd | None = None
        self.handshake_timeout = handshake_timeout
        self.close_timeout = close_timeout
        self.reconnect_policy = ReconnectPolicy() if reconnect is True else (reconnect or None)
        self.clock = clock
        #: The session's protocol state (sans-I/O); everything below is its shell.
        self.connection = ClientConnection(
            model=model,
            config=self.config,
            ack_policy=ack_policy,
            heartbeat_interval_s=heartbeat_interval_s,
            max_queued_bytes=(self.reconnect_policy or ReconnectPolicy()).max_queued_bytes,
            clock=clock,
            new_response=ResponseHandle,
            encode_audio=encode_g711,
        )
        self._consumers = Consumers(queue_size, clock)
        #: What became of each append and commit: written to a socket, confirmed by the server.
        self.input_ledger = InputLedger(clock)
        self.connection.outbox.on_confirmed = self.input_ledger.acknowledged
        self._link = Link(self.connection, self.input_ledger)
        self._driver = Driver(
            self.connection, self._link, self._consumers, clock=clock, policy=self.reconnect_policy
        )
        self._last_stream: StreamResult | None = None
        self._tools = ToolDesk(
            send_output=self.send_function_output,
            declared=frozenset(self.config.tool_names),
            clock=clock,
        )
        self._consumers.add_listener(self._tools.on_event)

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
        resumable = self.reconnect_policy is not None and reconnect_with is not None
        try:
            update = self.connection.start(resumable=resumable)  # raises unless CONNECTING
        except LocalProtocolError:
            await transport.close()
            raise
        try:
            output = await handshake(
                transport, self.connection, update, self.handshake_timeout, budget_s=budget_s
            )
        except BaseException as exc:
            self._driver.perform(self.connection.terminate(f"handshake failed: {exc}"))
            raise
        self._link.attach(transport)
        self._driver.perform(output)
        self._driver.start(reconnect_with)
        (created,) = (e for e in output.events if isinstance(e, se.SessionCreated))
        return created

    # --- sending ---

    async def _send(self, send: Send) -> str:
        await self._link.transmit(send)
        assert send.event_id is not None
        return send.event_id

    async def append_input(self, pcm: PcmInput = None, **fields: Unpack[AppendFields]) -> str:
        """Append PCM and/or frames; empty PCM with frames is a VISION unit. Returns the id.

        Concurrent calls go out in call order, each `audio_end_ms` counting every call before
        (the connection counts and queues it before the first await).
        """
        send = self.connection.append(pcm, **fields)
        if self._link.write_now(send):  # written (or queued for a resume) without waiting
            assert send.event_id is not None
            return send.event_id
        try:
            return await self._send(send)
        except DuplexSessionClosedError:  # never sent
            self.connection.withdraw(send)
            raise

    async def commit(self, *, final: bool = True, create_response: bool | None = None) -> str:
        """Seal the turn (`final=False`: flush whole units only). Acks finished responses first."""
        for ack in self.connection.playback_acks():
            await self._link.transmit(ack)
        event = ce.InputAudioBufferCommit(final=final, response_create=create_response)
        return await self._send(self.connection.send(event))

    async def create_response(self, /, **options: Any) -> str:
        """Ask for a response; options go into `response` (modalities, instructions, ...)."""
        return await self._send(self.connection.send(ce.ResponseCreate(response=dict(options))))

    async def cancel_response(self, response_id: str | None = None) -> str:
        """Cancel a response (default: the active one); its audio is fenced at once."""
        return await self._send(self.connection.send(ce.ResponseCancel(response_id=response_id)))

    async def signal_turn(self, event: str, payload: dict[str, Any] | None = None) -> str:
        """Send upstream's `turn.signal {event, payload}`; `barge_in` fences the active response.

        The server answers a turn signal with `turn.event {event, turn_state}` (protocol.md §4.5).
        """
        signal = ce.TurnSignal(event=event, payload=payload)
        return await self._send(self.connection.send(signal))

    async def clear_output_audio(self, response_id: str | None = None) -> str:
        """Ask the server to stop sending a response's audio; it is fenced at once."""
        event = ce.OutputAudioBufferClear(response_id=response_id)
        return await self._send(self.connection.send(event))

    async def clear_input(self) -> str:
        """Drop the server's buffered input (`input_audio_buffer.clear`)."""
        return await self._send(self.connection.send(ce.InputAudioBufferClear()))

    async def ack_playback(
        self,
        played_ms: int,
        *,
        response_id: str,
        committed_ms: int | None = None,
        truncate: bool = False,
    ) -> str | None:
        """Report audio actually played; None (nothing sent) if the server takes no acks."""
        send = self.connection.ack_playback(
            played_ms, response_id=response_id, committed_ms=committed_ms, truncate=truncate
        )
        return None if send is None else await self._send(send)

    async def send_raw(self, event: dict[str, Any]) -> str | None:
        """Send any event object as is (escape hatch); returns its `event_id` if it has one."""
        send = self.connection.send_raw(event)
        await self._link.transmit(send)
        return send.event_id

    async def send_image_item(self, image: bytes) -> str:
        """Put a JPEG/PNG in the history as a user `input_image` item; returns its item id.

        For turn-based models that take images as items (`supports_image_input`): the oldest
        image items are deleted first so the history keeps within upstream's budget (8
        images, 4 MiB of data URLs).
        """
        url = data_url(image)
        # a new session (after a journal gap) holds none of the earlier session's items
        self._images.in_session(self.session_id)
        for old in self._images.make_room(len(url)):
            await self._send(self.connection.send(ce.ConversationItemDelete(item_id=old)))
        item_id = self._images.new_id()
        await self._send(
            self.connection.send(ce.ConversationItemCreate(item=image_item(item_id, url)))
        )
        self._images.added(item_id, len(url))
        return item_id

    async def send_function_output(self, call_id: str, output: Any) -> str:
        """Answer a function call (`conversation.item.create` of a `function_call_output`)."""
        event = function_call_output(call_id, output_text(output))
        return await self._send(self.connection.send(event))

    def on_function_call(self, name: str, handler: ToolHandler) -> None:
        """Answer calls of `name` ("*": any other) with `handler(args, call)`, sync or async.

        Its return value (JSON-encoded unless a string) is sent as the output; if it raises,
        `{"error": ...}` is sent and the error recorded (`function_call_records`).
        """
        self._tools.register(name, handler)

    def function_calls(self) -> AsyncIterator[FunctionCall]:
        """Calls no handler takes, as they arrive (answer with `answer_function_call`)."""
        return self._tools.calls(self._link.wait_ended)

    async def answer_function_call(self, call: FunctionCall | str, output: Any) -> None:
        """Send the output of a call taken from `function_calls()`, and record it."""
        await self._tools.answer(call if isinstance(call, str) else call.call_id, output)

    @property
    def function_call_records(self) -> list[CallRecord]:
        """Every function call the server made, with its output or error, in call order."""
        return list(self._tools.records)

    async def wait_committed(
        self, event_id: str, timeout: float | None = None
    ) -> se.InputAudioBufferCommitted:
        """Wait for the acknowledgement of a commit; an error echoing its id raises."""
        result = await self._outcome(event_id, timeout)
        assert isinstance(result, se.InputAudioBufferCommitted)
        return result

    async def _outcome(self, event_id: str, timeout: float | None) -> se.ServerEvent:
        """The server's answer to the client event `event_id` (an error echoing it raises)."""
        async with asyncio.timeout(timeout):  # not wait_for: it can swallow a cancel (3.11)
            outcome = self.connection.outcomes.get(event_id)
            if outcome is None:
                outcome = await self._consumers.outcome(event_id)
        return unwrap(outcome)

    async def end_stream(self, timeout: float | None = None) -> StreamEnd:
        """End a continuous stream: `session.close`, then its drained response and the close.

        No `session.end` is sent (no server advertises it): the server pads the last partial
        frame, answers every frame, ends the response `stream_drained` and closes; `timeout`
        (default `close_timeout`) bounds the wait. Stream trailing silence first, so the
        model can finish speaking. The session is closed afterwards.
        """
        await self.close(timeout=timeout)
        self.stream_end = stream_end_of(self.tracker.handles.values(), self.closed_reason)
        return self.stream_end

    async def stream(self, source: Source = None, **options: Any) -> StreamResult:
        """Stream PCM/frames on the media clock (`client.streaming.stream` options).

        A follow-up call continues the previous stream's media timeline, unit numbering and
        clock anchor unless `position`/`clock`/`media_origin_ms` say otherwise.
        """
        last = self._last_stream
        if last is not None and not {"position", "clock", "media_origin_ms"} & options.keys():
            rate = self.config.input_sample_rate_hz
            sent_ms = samples_to_ms(last.position.audio_samples, rate)
            if abs(sent_ms - self.audio_end_ms) <= 1:
                options["position"], options["clock"] = last.position, last.clock
        result = await stream_source(self, source, **options)
        self._last_stream = result
        return result

    # --- consuming ---

    def events(self) -> Subscription[se.ServerEvent]:
        """Every typed server event from now on (bounded; a slow consumer loses its oldest)."""
        return self._consumers.subscribe()

    def responses(
        self, until: Awaitable[object] | None = None, *, idle_s: float | None = None
    ) -> AsyncIterator[ResponseHandle]:
        """Response handles as their decision becomes known; the iteration ends with the session.

        `until` (an awaitable: `event.wait()`, `asyncio.sleep(10)`, a task) ends it when it
        completes; `idle_s` once no new handle came for that many seconds of waiting. Every
        call shares one queue: a handle is yielded once, and those not taken stay for the next.
        """
        return self._consumers.responses(until, idle_s=idle_s)

    def add_listener(self, listener: EventListener) -> None:
        """Observe every server event synchronously in arrival order (for recorders)."""
        self._consumers.add_listener(listener)

    def remove_listener(self, listener: EventListener) -> None:
        """Stop calling a listener added with `add_listener` (unknown ones are ignored)."""
        self._consumers.remove_listener(listener)

    def add_reconnect_listener(self, listener: ReconnectListener) -> None:
        """Observe each reconnection when it ends (and again if its outcome changes)."""
        self._consumers.add_reconnect_listener(listener)

    # --- the end ---

    async def wait_closed(self, timeout: float | None = None) -> str:
        """Wait until the session ended; returns the reason."""
        async with asyncio.timeout(timeout):  # not wait_for: it can swallow a cancel (3.11)
            await self._link.wait_ended()
        return self.closed_reason or "closed"

    async def close(self, reason: str | None = None, *, timeout: float | None = None) -> None:
        """`session.close`, wait for `session.closed` (up to `close_timeout`), close the socket.

        While a resume is in progress the close waits for it (also up to `close_timeout`).
        `timeout` replaces `close_timeout` for the wait for `session.closed` (a continuous
        stream drains before it).
        """
        if self._link.transport is None:
            return  # never opened
        if self.connection.state is not State.CLOSED:
            try:
                async with asyncio.timeout(self.close_timeout):
                    await self._link.wait_writable()
                    send = self.connection.close(reason)
                    if send is not None:
                        await self._link.transmit(send)
            except (DuplexSessionClosedError, TimeoutError):
                pass
            try:
                async with asyncio.timeout(self.close_timeout if timeout is None else timeout):
                    await self._link.wait_ended()
            except TimeoutError:
                pass
        await self._tools.drain(self.close_timeout)
        await self._link.close()
        self._tools.end()
        self._driver.perform(self.connection.terminate("client_close"))
        await self._driver.stop()
