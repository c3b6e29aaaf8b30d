"""The pure response state (§4): one `ResponseState` per response, decisions, id fencing.

`ResponseTracker` feeds on typed server events and the client's own sends, and keeps every
response's data: decision, transcript, text, the audio received, timings and acks. It makes
the response objects through a factory, so a shell can hand out a subclass that also streams
the audio as it arrives (`duplex_client.client.ResponseHandle`); the state itself never waits.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any, Generic, Literal, Protocol, TypeVar, cast, overload

from duplex_client.protocol import client_events as ce
from duplex_client.protocol import response_events as r
from duplex_client.protocol.codec import CodecError
from duplex_client.protocol.server_events import (
    ErrorEvent,
    InputAudioBufferCommitted,
    InputAudioBufferSpeechStarted,
    ServerEvent,
)

Decision = Literal["speak", "listen"]
#: Whether received audio counts as played (`received`) or the caller reports it (`manual`).
AckPolicy = Literal["received", "manual"]


class ResponseState:
    """One model response (or a standalone listen): decision, transcript, text and audio."""

    def __init__(
        self,
        response_id: str | None,
        *,
        sample_rate_hz: int = 24000,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.response_id = response_id
        self.decision: Decision | None = None
        self.status: str | None = None
        self.reason: str | None = None
        self.metadata: dict[str, Any] = {}
        self.sample_rate_hz = sample_rate_hz
        self.transcript = ""
        self.text = ""
        self.played_ms = 0
        self.acked_ms: int | None = None
        self.fenced = False
        #: A commit was processed after this response finished (acks may now be refused).
        self.sealed = False
        self.created_at = clock()
        self.decided_at: float | None = None
        self.first_audio_at: float | None = None
        self.last_audio_at: float | None = None
        self.first_text_at: float | None = None
        self.done_at: float | None = None
        #: Raw server events at the moments metrics are taken from (created, first_audio,
        #: first_text, done): where a server reports its own request or engine metrics.
        self.marks: dict[str, dict[str, Any]] = {}
        #: The `function_call` items of a response that called functions (protocol "Tools").
        self.function_calls: list[dict[str, Any]] = []
        self._clock = clock
        self._pcm = bytearray()
        self._ended = False

    def __repr__(self) -> str:
        return (
            f"{type(self).__name__}(id={self.response_id!r}, decision={self.decision!r}, "
            f"status={self.status!r}, audio_ms={self.audio_ms}, transcript={self.transcript!r})"
        )

    @property
    def done(self) -> bool:
        """Whether the response ended (done, listen, cancel or session end)."""
        return self._ended

    @property
    def audio_ms(self) -> int:
        """Duration of the audio received (and kept) for this response."""
        return len(self._pcm) * 1000 // (2 * self.sample_rate_hz)

    def audio_bytes(self) -> bytes:
        """All PCM16 audio kept for this response so far."""
        return bytes(self._pcm)

    def audio_since(self, offset: int) -> bytes:
        """Kept PCM16 audio from byte `offset` on (for incremental writers)."""
        return bytes(memoryview(self._pcm)[offset:])

    # --- updated by the tracker ---

    def _add_audio(self, pcm: bytes) -> None:
        if not pcm:
            return
        now = self._clock()
        if self.first_audio_at is None:
            self.first_audio_at = now
        self.last_audio_at = now
        self._pcm += pcm
        self._on_audio(pcm)

    def _mark_text(self) -> None:
        if self.first_text_at is None:
            self.first_text_at = self._clock()

    def _fence(self) -> None:
        self.fenced = True
        self._on_audio_end()

    def _finish(self, status: str, reason: str | None = None) -> None:
        if self._ended:
            return
        self.status = status
        self.reason = reason
        self.done_at = self._clock()
        self._ended = True
        self._on_done()

    # --- what a shell's subclass hears of (nothing here) ---

    def _on_audio(self, pcm: bytes) -> None:
        """Audio arrived (it is kept already)."""

    def _on_audio_end(self) -> None:
        """No more audio will be kept (fenced, or the response ended)."""

    def _on_done(self) -> None:
        """The response ended (`done` is true, `status` set)."""


H = TypeVar("H", bound=ResponseState)
H_co = TypeVar("H_co", bound=ResponseState, covariant=True)


class ResponseFactory(Protocol[H_co]):
    """Makes the object that holds one response's state (a `ResponseState` or a subclass)."""

    def __call__(
        self, response_id: str | None, *, sample_rate_hz: int, clock: Callable[[], float]
    ) -> H_co:
        """A new response's state."""
        ...


class ResponseTracker(Generic[H]):
    """Feeds on typed server events and yields responses once their decision is known.

    `new_response` makes each response's object (default `ResponseState`).
    """

    @overload
    def __init__(
        self: ResponseTracker[ResponseState],
        on_decided: Callable[[ResponseState], None],
        *,
        new_response: None = None,
        sample_rate_hz: int = 24000,
        interrupts_on_speech: bool = False,
        clock: Callable[[], float] = time.monotonic,
    ) -> None: ...

    @overload
    def __init__(
        self,
        on_decided: Callable[[H], None],
        *,
        new_response: ResponseFactory[H],
        sample_rate_hz: int = 24000,
        interrupts_on_speech: bool = False,
        clock: Callable[[], float] = time.monotonic,
    ) -> None: ...

    def __init__(
        self,
        on_decided: Callable[[H], None],
        *,
        new_response: ResponseFactory[H] | None = None,
        sample_rate_hz: int = 24000,
        interrupts_on_speech: bool = False,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        """`on_decided` is called with each response once its decision is known."""
        # Without a factory H is ResponseState (the first overload).
        self._make = new_response or cast(ResponseFactory[H], ResponseState)
        self._on_decided = on_decided
        self._rate = sample_rate_hz
        self.interrupts_on_speech = interrupts_on_speech
        self._clock = clock
        self.handles: dict[str, H] = {}
        self.fenced: set[str] = set()
        self.active: H | None = None
        self.finished: list[H] = []
        #: Responses of a session a journal gap lost (the new session knows none of them).
        self.lost: set[str] = set()
        self._unsealed = 0  # finished[_unsealed:] have seen no commit since they finished
        self._commits_in_flight: set[str] = set()
        self.listens: list[H] = []
        self.decode_errors = 0

    def _new(self, response_id: str | None) -> H:
        handle = self._make(response_id, sample_rate_hz=self._rate, clock=self._clock)
        if response_id is not None:
            self.handles[response_id] = handle
        return handle

    def _decide(self, handle: H, decision: Decision) -> None:
        if handle.decision is None:
            handle.decision = decision
            handle.decided_at = self._clock()
            self._on_decided(handle)

    def fence(self, response_id: str | None) -> None:
        """Stop accepting audio for a response (cancelled, cleared or interrupted)."""
        if response_id is None:
            return
        self.fenced.add(response_id)
        handle = self.handles.get(response_id)
        if handle is not None:
            handle._fence()

    def _live(self, response_id: str | None) -> H | None:
        if response_id is None or response_id in self.fenced:
            return None
        handle = self.handles.get(response_id)
        return None if handle is None or handle.done else handle

    def feed(self, event: ServerEvent) -> None:
        """Apply one server event."""
        if isinstance(event, r.ResponseCreated):
            self._created(event)
        elif isinstance(event, r.ResponseListen):
            self._listen(event)
        elif isinstance(event, r.ResponseDone):
            self._done(event)
        elif isinstance(event, InputAudioBufferCommitted):
            self._commits_in_flight.discard(event.client_event_id or "")
            self._seal_finished()
        elif isinstance(event, ErrorEvent):
            self._commits_in_flight.discard(event.error.event_id or "")
        elif isinstance(event, r.OutputAudioBufferCleared):
            self.fence(event.response_id)
        elif isinstance(event, InputAudioBufferSpeechStarted):
            if self.interrupts_on_speech and self.active is not None:
                self.fence(self.active.response_id)
        elif isinstance(event, r.ResponseEvent):
            self._output(event)

    def sent(self, event: ce.ClientEvent) -> None:
        """One of our events is going out: a final commit seals (§5), a cancel, clear or
        barge-in fences the response it names, else the active one (§4.4)."""
        active = self.active.response_id if self.active is not None else None
        if isinstance(event, ce.InputAudioBufferCommit) and event.final and event.event_id:
            self.commit_sent(event.event_id)
        elif isinstance(event, ce.ResponseCancel | ce.OutputAudioBufferClear):
            self.fence(event.response_id or active)
        elif isinstance(event, ce.BargeIn) or (
            isinstance(event, ce.TurnSignal) and event.event == "barge_in"
        ):
            self.fence(active)

    def commit_sent(self, event_id: str) -> None:
        """A final commit of ours is on its way: a response finished by now, or finishing
        before the server processes it, is sealed by it (its done arrives first, §5).

        Sealed at once, not when `committed` comes back: an ack written in between would reach
        the server after the commit and be refused. Should the commit be refused, an ack
        those responses could still have taken is not sent (a shorter history under
        `ack_only`), never one that fails the run.
        """
        self._commits_in_flight.add(event_id)
        self._seal_finished()

    def _seal_finished(self) -> None:
        """Mark every response finished since the last commit as sealed by this one."""
        for handle in self.finished[self._unsealed :]:
            handle.sealed = True
        self._unsealed = len(self.finished)

    def record_ack(self, response_id: str, played_ms: int) -> int:
        """A playback ack is going out; returns the `played_ms` to send (acks never go back)."""
        played = int(played_ms)
        handle = self.handles.get(response_id)
        if handle is not None:
            played = max(played, handle.acked_ms or 0)
            handle.played_ms = played
            handle.acked_ms = played
        return played

    def acks_due(self, *, received_counts: bool, skip_sealed: bool) -> list[tuple[str, int, bool]]:
        """`(response_id, played_ms, truncate)` of each finished response played past its ack.

        `received_counts`: what arrived counts as played (else `played_ms` as reported);
        `skip_sealed`: leave out responses a later commit sealed (`ack_only` refuses them, §5).
        """
        due: list[tuple[str, int, bool]] = []
        for handle in self.finished:
            if handle.response_id is None or (skip_sealed and handle.sealed):
                continue
            played = handle.audio_ms if received_counts else handle.played_ms
            if handle.acked_ms is not None and played <= handle.acked_ms:
                continue
            due.append((handle.response_id, played, handle.fenced))
        return due

    def _created(self, event: r.ResponseCreated) -> None:
        rid = event.response_id
        if rid is None or rid in self.handles:
            return
        if self.active is not None and not self.active.done:
            self.fence(self.active.response_id)  # superseded
        handle = self._new(rid)
        handle.metadata = dict(event.metadata)
        handle.marks["created"] = event.raw
        self.active = handle

    def _listen(self, event: r.ResponseListen) -> None:
        handle = self._live(event.response_id)
        if handle is None:
            if event.response_id is not None and event.response_id in self.handles:
                return  # a listen for a finished or fenced response changes nothing
            standalone = self._new(None)
            standalone.metadata = dict(event.metadata)
            self.listens.append(standalone)
            self._decide(standalone, "listen")
            standalone._finish("listening", event.reason)
            return
        handle.metadata.update(event.metadata)
        self._decide(handle, "listen")

    def _done(self, event: r.ResponseDone) -> None:
        rid = event.response_id
        handle = self.handles.get(rid) if rid is not None else None
        if handle is None or handle.done:
            return
        calls = [i for i in event.response.get("output") or () if _is_call(i)]
        if calls:
            handle.function_calls = calls
        if event.status == "cancelled":
            self.fence(rid)
        elif handle.decision is None and not calls:  # a function call is not speech
            self._decide(handle, "speak")
        if handle.decision is None:
            self._decide(handle, "listen")
        handle.marks["done"] = event.raw
        handle._finish(event.status, event.reason)
        self.finished.append(handle)
        if self._commits_in_flight:
            handle.sealed = True
        if self.active is handle:
            self.active = None

    def _output(self, event: r.ResponseEvent) -> None:
        handle = self._live(event.response_id)
        if handle is None:
            return
        if isinstance(event, r.ResponseSpeak):
            self._decide(handle, "speak")
        elif isinstance(event, r.ResponseAudioDelta):
            try:
                pcm = event.pcm()
            except CodecError:
                self.decode_errors += 1
                return
            if event.sample_rate_hz:
                handle.sample_rate_hz = event.sample_rate_hz
            self._decide(handle, "speak")
            if pcm:
                handle.marks.setdefault("first_audio", event.raw)
            handle._add_audio(pcm)
        elif isinstance(event, r.ResponseAudioTranscriptDelta):
            delta = self._text_delta(handle, event)
            handle.transcript += delta
        elif isinstance(event, r.ResponseAudioTranscriptDone):
            handle.transcript = event.transcript or handle.transcript
        elif isinstance(event, r.ResponseTextDelta):
            delta = self._text_delta(handle, event)
            handle.text += delta
        elif isinstance(event, r.ResponseTextDone):
            handle.text = event.text or handle.text

    def _text_delta(
        self, handle: H, event: r.ResponseAudioTranscriptDelta | r.ResponseTextDelta
    ) -> str:
        """A transcript or text delta decides `speak` and marks the first text; its delta."""
        self._decide(handle, "speak")
        if event.delta:
            handle.marks.setdefault("first_text", event.raw)
            handle._mark_text()
        return event.delta

    def session_lost(self, reason: str) -> None:
        """A new session replaced this one: end its responses and owe it no more acks."""
        self.close(reason)
        self.lost.update(rid for rid in self.handles if rid is not None)
        self.finished.clear()
        self._unsealed = 0
        self.active = None

    def close(self, reason: str) -> None:
        """End every open response (the session ended)."""
        for handle in self.handles.values():
            if not handle.done:
                if handle.decision is None:
                    self._decide(handle, "listen")
                handle._finish("incomplete", reason)


def _is_call(item: Any) -> bool:
    return isinstance(item, dict) and item.get("type") == "function_call"
