"""The session client's protocol state machine, without I/O (h11-style).

`ClientConnection` takes server frames (or decoded events) in and gives back an `Output`: the
events to deliver and the effects its shell performs (write this frame, ack soon, beat the
heart, reconnect, resend the outbox, end). The state it moves is `ConnectionState`'s (the
`State`, seq/acks, outbox, responses, outcomes, input). It never awaits, sleeps or touches a
socket.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any, Unpack, overload

from duplex_client.protocol import client_events as ce
from duplex_client.protocol import server_events as se
from duplex_client.protocol.codec import CodecError, dumps
from duplex_client.protocol.dialects import dialect_hint
from duplex_client.protocol.errors import DuplexProtocolError, handshake_refusal
from duplex_client.protocol.events import TERMINAL_EVENT_TYPES, decode_server_event
from duplex_client.protocol.response_events import ConnectionNewSession, ConnectionResumed
from duplex_client.protocol.session.config import SessionConfig
from duplex_client.protocol.session.effects import (
    Closed,
    Decided,
    Deliver,
    Effect,
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
from duplex_client.protocol.session.inputs import AppendFields, AudioEncoder, PcmInput
from duplex_client.protocol.session.outbox import OutboxEntry
from duplex_client.protocol.session.responses import AckPolicy, H, ResponseFactory, ResponseState
from duplex_client.protocol.session.sequence import EventSequence
from duplex_client.protocol.session.state import SENDING, ConnectionState, State

log = logging.getLogger("duplex_client")


class ClientConnection(ConnectionState[H]):
    """One session's protocol state: bytes or events in, deliveries and effects out.

    CONNECTING -(session.created)-> OPEN -(drop, resumable)-> RESUMING -(`flushed`)-> OPEN;
    OPEN -(`close`)-> CLOSING -(session.closed, or the drop)-> CLOSED. A terminal event, a
    drop that cannot be resumed, `resume_failed` and `terminate` end any state in CLOSED.
    Responses are `ResponseState`s unless `new_response` makes a subclass (a shell's handle);
    `encode_audio` compands PCM for a G.711 input format.
    """

    @overload
    def __init__(
        self: ClientConnection[ResponseState],
        *,
        model: str | None,
        config: SessionConfig | None = ...,
        ack_policy: AckPolicy = ...,
        heartbeat_interval_s: float | None = ...,
        ack_every: int | None = ...,
        max_queued_bytes: int = ...,
        clock: Callable[[], float] = ...,
        new_response: None = None,
        encode_audio: AudioEncoder | None = ...,
    ) -> None: ...

    @overload
    def __init__(
        self,
        *,
        model: str | None,
        config: SessionConfig | None = ...,
        ack_policy: AckPolicy = ...,
        heartbeat_interval_s: float | None = ...,
        ack_every: int | None = ...,
        max_queued_bytes: int = ...,
        clock: Callable[[], float] = ...,
        new_response: ResponseFactory[H],
        encode_audio: AudioEncoder | None = ...,
    ) -> None: ...

    def __init__(self, **options: Any) -> None:
        """A connection for `model` (None: the server's) asking for `config`."""
        super().__init__(**options)

    # --- handshake (§2) ---

    def start(self, *, resumable: bool = False) -> Send:
        """The `session.update` that opens the session; `resumable`: answer drops by resuming."""
        self._check("start", State.CONNECTING)
        self.attachment.resume = resumable
        return Send.encode(ce.SessionUpdate(session=self.config.to_session(self.model)).to_dict())

    def _handshake(self, event: se.ServerEvent) -> Output:
        if isinstance(event, se.ErrorEvent):  # only a refusal or session.created matter here
            raise handshake_refusal(event.error, event.raw, self.model)
        if not isinstance(event, se.SessionCreated):
            return Output()
        caps = event.capabilities
        if caps is None:
            raise DuplexProtocolError(
                "endpoint is not a duplex handler: session.created has no capabilities"
                + dialect_hint(event.raw)
            )
        self.capabilities, self.session = caps, event.session
        self.session_id = event.session_id
        self.attachment.created(event)
        self._state = State.OPEN
        effects: list[Effect] = [Deliver(event)]
        if self.heartbeat_interval_s:
            effects.append(ScheduleHeartbeat(self.heartbeat_interval_s))
        return Output(tuple(effects))

    # --- receiving ---

    def receive_data(self, data: str | bytes) -> Output:
        """One frame from the socket: binary and non-JSON frames are ignored."""
        if not isinstance(data, str):
            return Output()
        try:
            event = decode_server_event(data)
        except CodecError as exc:
            log.warning("ignoring undecodable server frame: %s", exc)
            return Output()
        return self.receive_event(event)

    def receive_event(self, event: se.ServerEvent) -> Output:
        """Apply one server event; a replayed seq gives nothing (§6).

        A refused handshake raises `DuplexProtocolError` (still CONNECTING: then `terminate`).
        """
        if self._state is State.CONNECTING:
            return self._handshake(event)
        self._check("receive an event", *SENDING)
        out: list[Effect] = []
        seq, terminal = event.server_event_seq, event.type in TERMINAL_EVENT_TYPES
        if seq is not None:
            if not self.seq.fresh(seq):
                return Output()  # already processed (replay)
            if not terminal:
                timing = self.seq.due()
                if timing == "now" and (ack := self._event_ack()) is not None:
                    out.append(ack)
                elif timing == "schedule":
                    out.append(ScheduleAck())
        self._apply(event, out)
        self.tracker.feed(event)
        out.extend(self._take_decided())
        if self.playback.arm(event):
            out.append(SchedulePlaybackAcks())
        if terminal:
            reason = event.raw.get("reason")
            self.closed_reason = reason if isinstance(reason, str) else event.type
        out.append(Deliver(event))
        if terminal:
            out.extend(self._end(self.closed_reason or event.type))
        return Output(tuple(out))

    def _apply(self, event: se.ServerEvent, out: list[Effect]) -> None:
        self.outbox.observe(event)
        settles = None
        if isinstance(event, se.SessionUpdated):
            self.session = event.session
        elif isinstance(event, se.ErrorEvent):
            self.errors.append(event)
            settles = event.error.event_id
        elif isinstance(event, se.InputAudioBufferCommitted | se.StreamDrained):
            settles = event.client_event_id
        elif isinstance(event, se.SessionResyncRequired):
            self.attachment.forget()  # no resume guarantees any more (§6.1)
            out.append(Resynced(event.reason))
        if settles:
            self.outcomes.settle(settles, event)
            out.append(Settled(settles, event))

    def _take_decided(self) -> list[Effect]:
        decided, self._decided[:] = list(self._decided), []
        return [Decided(h) for h in decided]

    # --- acks and heartbeats ---

    def ack(self) -> Send | None:
        """The ack timer fired: `session.event_ack` for the highest seq, if one is still due."""
        self.seq.fired()
        return None if self._state is State.CLOSED else self._event_ack()

    def _event_ack(self) -> Send | None:
        seq = self.seq.take()
        if seq is None:
            return None
        return Send.encode(ce.SessionEventAck(server_event_seq=seq).to_dict())

    def heartbeat(self) -> Output:
        """The heartbeat timer fired: a `session.heartbeat` (not while resuming), then the next."""
        if self._state is State.CLOSED or not self.heartbeat_interval_s:
            return Output()
        self._check("send a heartbeat", *SENDING)
        beat = () if self._state is State.RESUMING else (self.send(ce.SessionHeartbeat()),)
        return Output((*beat, ScheduleHeartbeat(self.heartbeat_interval_s)))

    # --- sending ---

    def send(self, event: ce.ClientEvent) -> Send:
        """Encode a client event: a final commit seals (§5), a cancel or clear fences (§4.4)."""
        self._check("send", *SENDING)
        self.tracker.sent(event)
        return self.send_raw(event.to_dict())

    def send_raw(self, payload: dict[str, Any]) -> Send:
        """Encode any event object as is; an append or commit with an id is kept for resending."""
        self._check("send", *SENDING)
        if not self.resumable:
            return Send.encode(payload)
        resuming = self._state is State.RESUMING
        hold = resuming and self.outbox.unsent_bytes > self.max_queued_bytes
        data = dumps(payload)
        entry = self.outbox.keep(payload, data, trim=not resuming)
        return Send.encode(payload, data, entry, hold=hold and entry is not None)

    def _send_append(self, event: ce.InputAudioBufferAppend, counted: tuple[int, int]) -> Send:
        """`send` for an append, whose kind, id and positions are known (no dict lookups).

        The frame and the outbox entry are those `send_raw` makes; the tracker takes no note
        of appends. The caller (`append`) checked the state.
        """
        data = dumps(event.to_dict())
        if not self.resumable:
            return Send(data, event.event_id, counted=counted)
        resuming = self._state is State.RESUMING
        hold = resuming and self.outbox.unsent_bytes > self.max_queued_bytes
        entry = self.outbox.add_append(event, data, trim=not resuming)
        return Send(entry.data, event.event_id, entry, hold=hold, counted=counted)

    def must_write(self, entry: OutboxEntry) -> bool:
        """Whether a kept input is still to be written now (not queued, not flushed meanwhile)."""
        return self.writable and not entry.written

    def wrote(self, entry: OutboxEntry, attachment: int) -> None:
        """A kept input went out on socket number `attachment`."""
        self.outbox.mark_written(entry, attachment)

    def write_failed(self, attachment: int) -> Output:
        """Writing on socket `attachment` failed: hold sends for the resume if there is one."""
        if attachment == self.attachment.number and self._state is State.OPEN and self.resumable:
            self._state = State.RESUMING
        return Output()

    def append(self, pcm: PcmInput = None, **fields: Unpack[AppendFields]) -> Send:
        """An append of PCM and/or frames, counted at once; `ValueError` for an illegal one."""
        event, samples = self.input.build(pcm, self.capabilities, **fields)
        self._check("send", *SENDING)  # before counting: a refused append is never counted
        before = self.input.samples
        send = self._send_append(event, (before, before + samples))
        self.input.count(samples)
        return send

    def withdraw(self, send: Send) -> None:
        """An append never left (the session ended): uncount it unless a later one built on it."""
        if send.counted is not None:
            self.input.withdraw(send.counted)

    def ack_playback(
        self,
        played_ms: int,
        *,
        response_id: str,
        committed_ms: int | None = None,
        truncate: bool = False,
    ) -> Send | None:
        """`playback.ack` (never moving back); None when the server takes no acks.

        None too for a response of a session a journal gap lost: its server is gone.
        """
        if not self.capabilities.supports_playback_ack or response_id in self.tracker.lost:
            return None
        self._check("send", *SENDING)
        return self.send(self.playback.ack(played_ms, response_id, committed_ms, truncate))

    def playback_acks(self) -> list[Send]:
        """Acks for finished responses played past their last ack (and before a commit, §5)."""
        if self._state is State.CLOSED or not self.capabilities.supports_playback_ack:
            self.playback.disarm()
            return []
        return [self.send(ack) for ack in self.playback.due(skip_sealed=self.acks_expire())]

    # --- losing the socket, resuming (§6.1) ---

    def connection_lost(self, code: int | None = None) -> Output:
        """The socket ended (close `code`, if any): resume, or end the session."""
        if self._state is State.CONNECTING:
            return self.terminate("connection closed during the handshake")
        self._check("lose the connection", *SENDING)
        if self._state is State.CLOSING:
            return Output(tuple(self._end("client_close")))
        cause = "disconnect" if code is None else f"disconnect ({code})"
        if not self.resumable:
            return Output(tuple(self._end(cause)))
        self._state = State.RESUMING
        return Output((Reconnect(cause),))

    def resume_request(self) -> ce.SessionResume:
        """The `session.resume` a new socket opens with (the highest seq processed)."""
        self._check("resume", State.RESUMING)
        assert self.session_id is not None
        return self.attachment.request(self.session_id, self.seq.last)

    def resumed(self, event: se.SessionResumed, attempt: int) -> Output:
        """`session.resumed` on a new socket: adopt it, place its view of our input (`Resend`)."""
        self._check("resume", State.RESUMING)
        self.attachment.resumed(event)
        note = ConnectionResumed.from_raw({"type": ConnectionResumed.TYPE, "attempt": attempt})
        out = Output((Deliver(note),)) + self.receive_event(event)
        return out + Output((Resend(self.outbox.place(event.input)),))

    def next_resend(self) -> OutboxEntry | None:
        """The next outbox entry to write after a resume (also input queued meanwhile)."""
        self._check("resend", State.RESUMING)
        return self.outbox.next_resend()

    def flushed(self) -> Output:
        """Every resend is written: sending is open again."""
        self._check("finish a resume", State.RESUMING)
        self._state = State.OPEN
        return Output()

    def new_session_update(self) -> Send:
        """After a journal gap (§6.1): the `session.update` that opens a replacement session."""
        self._check("open a new session", State.RESUMING)
        return Send.encode(ce.SessionUpdate(session=self.config.to_session(self.model)).to_dict())

    def new_session(self, event: se.SessionCreated, attempt: int) -> Output:
        """The replacement session's `session.created`: adopt it in place of the lost one.

        The lost session's open responses end (`session_lost`), its journal numbering and
        resume token go, and the input it was sent is forgotten; input queued meanwhile goes
        to the new session (`Resend`). A synthetic `connection.new_session` is delivered
        first, so every record of the run names both sessions and where the gap is.
        """
        self._check("open a new session", State.RESUMING)
        caps = event.capabilities
        if caps is None:
            raise DuplexProtocolError("the new session.created has no capabilities")
        previous = self.session_id
        lost, start = self.outbox.new_session()
        self.tracker.session_lost("session_lost")
        self.playback.disarm()
        number = self.attachment.number
        self.attachment.created(event)
        self.attachment.number = number + 1
        self.capabilities, self.session = caps, event.session
        self.session_id = event.session_id
        self.seq = EventSequence(self.seq.ack_every)
        note = ConnectionNewSession.from_raw(
            {
                "type": ConnectionNewSession.TYPE,
                "previous_session_id": previous,
                "session_id": event.session_id,
                "audio_start_ms": start if start is not None else self.input.audio_end_ms,
                "lost_appends": lost,
                "attempt": attempt,
            }
        )
        out = Output((Deliver(note), Deliver(event)))
        return out + Output((Resend(lost),))

    def resume_failed(self, reason: str, *, fatal: bool) -> Output:
        """Reconnecting gave up (`fatal`: the server refused the token): the session ends."""
        self._check("fail a resume", State.RESUMING)
        if fatal:
            self.attachment.forget()
        return Output(tuple(self._end(reason)))

    # --- closing ---

    def close(self, reason: str | None = None) -> Send | None:
        """`session.close` (§2.5); None when already closing or closed."""
        if self._state in (State.CLOSING, State.CLOSED):
            return None
        self._check("close", State.OPEN)
        send = self.send(ce.SessionClose(reason=reason))
        self._state = State.CLOSING
        return send

    def terminate(self, reason: str) -> Output:
        """End the session now (the shell gave up on it); a never-opened one keeps no reason."""
        if self._state is State.CLOSED:
            return Output()
        return Output(tuple(self._end(reason)))

    def _end(self, reason: str) -> list[Effect]:
        self._state = State.CLOSED
        if self.closed_reason is None and self.attachment.number > 0:  # it opened
            self.closed_reason = reason
        final = self.closed_reason or reason
        self.tracker.close(final)
        return [*self._take_decided(), Closed(final)]
