"""What a live session watches of the answers: the assistant's state and the response latency.

The response latency of an answer (the panel's, `result.json` → `latencies_ms`) runs from
when the input it answers was complete (the later of the deciding unit's send and the last
commit or end of speech) to the first sample the speaker played, or, with nothing played, to
the answer's first audio. Pure bookkeeping on the session's clock: the live loop tells it
what it sent and the reader task what arrived.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

from duplex_client.protocol import response_events as r
from duplex_client.protocol import server_events as se
from duplex_client.run.progress import RunProgress


class AnswerWatch:
    """Keeps `progress.decision` and the response latencies (`latencies`, ms) of a live session."""

    def __init__(self, progress: RunProgress, now: Callable[[], float]) -> None:
        self.progress = progress
        self.now = now
        #: Latency of every answer heard so far, in ms.
        self.latencies: list[float] = []
        self._unit_sent_at: dict[int, float] = {}
        self._reference_at: float | None = None
        self._speech_ended = False
        self._response_ref: dict[str, float] = {}

    def unit_sent(self, unit_index: int, at: float) -> None:
        """The append closing `unit_index` went out at `at`."""
        self._unit_sent_at[unit_index] = at

    def committed(self, at: float) -> None:
        """Our own commit went out at `at`: the input so far is complete."""
        self._reference_at = at

    def on_event(
        self, event: se.ServerEvent, received_at: float, *, ours: bool, played: bool
    ) -> None:
        """One server event: `ours` when it answers our own commit, `played` when a speaker
        plays the answers (their latency then ends at the first played sample)."""
        if isinstance(event, se.InputAudioBufferCommitted):
            if not ours:  # server VAD's commit: the input ended then, unless speech did first
                if not self._speech_ended:
                    self._reference_at = received_at
                self._speech_ended = False
        elif isinstance(event, se.InputAudioBufferSpeechStopped):
            self._reference_at, self._speech_ended = received_at, True
        elif isinstance(event, se.InputAudioBufferSpeechStarted):
            self.progress.decision = "hearing you"
        elif isinstance(event, r.ResponseCreated) and event.response_id is not None:
            self._response_ref[event.response_id] = self._reference_for(event.unit_index)
            self.progress.decision = "thinking"
        elif isinstance(event, r.ResponseAudioDelta) and event.response_id is not None:
            if not played:  # nothing is played: the answer counts from its arrival
                ref = self._response_ref.pop(event.response_id, None)
                if ref is not None:
                    self._note(received_at - ref)
            self.progress.decision = "speaking"
        elif isinstance(event, r.ResponseListen):
            self.progress.decision = "listening"
        elif isinstance(event, r.ResponseDone):
            self.progress.decision = "interrupted" if event.status == "cancelled" else "done"

    def heard(self, first_rendered: Mapping[str, float]) -> None:
        """Answers whose first sample the speaker has played by now (response id → when)."""
        for rid in list(self._response_ref):
            at = first_rendered.get(rid)
            if at is not None:
                self._note(at - self._response_ref.pop(rid))

    def _note(self, seconds: float) -> None:
        latency = round(seconds * 1000, 1)
        self.latencies.append(latency)
        p = self.progress
        p.last_latency_ms = latency
        ordered = sorted(self.latencies)
        p.latency_p50_ms, p.latency_max_ms = ordered[len(ordered) // 2], ordered[-1]

    def _reference_for(self, unit_index: int | None) -> float:
        """When the input a response answers was complete: the later of the deciding
        unit's send and the last commit (or speech end)."""
        sent = None if unit_index is None else self._unit_sent_at.get(unit_index)
        refs = [t for t in (self._reference_at, sent) if t is not None]
        return max(refs) if refs else self.now()
