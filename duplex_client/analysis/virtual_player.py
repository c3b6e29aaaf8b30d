"""A speaker nobody hears: the listener model behind the interface the playback sync drives.

`duplex-cli stream` plays answers into this instead of a device, so its playback acks carry
what the virtual listener has heard by now, and `heard.wav` is made from the same schedule.
"""

from __future__ import annotations

from collections.abc import Mapping

from duplex_client.analysis.listener import HeardSegment, HeardSpan, ListenerModel
from duplex_client.analysis.playback import Heard, MediaTimeOf
from duplex_client.framing.clock import MediaClock

_BPS = 2


class VirtualPlayer:
    """Places answer audio on the media clock with a `ListenerModel`; keeps the PCM it got."""

    def __init__(self, clock: MediaClock, sample_rate_hz: int = 24000) -> None:
        self.clock = clock
        self.rate = sample_rate_hz
        self.model = ListenerModel(sample_rate_hz)
        self.audio: dict[str, bytearray] = {}

    def _now_ms(self) -> float:
        media = self.clock.media_ms_at(self.clock.now()) if self.clock.started else None
        return 0.0 if media is None else media

    def enqueue(self, response_id: str, pcm: bytes) -> bool:
        """Audio of a response arrived now; False (dropped) once it was cut or ended."""
        pcm = pcm[: len(pcm) - len(pcm) % _BPS]
        if not self.model.arrive(response_id, len(pcm) // _BPS, self._now_ms()):
            return False
        self.audio.setdefault(response_id, bytearray()).extend(pcm)
        return True

    def end(self, response_id: str) -> None:
        """The response is done: the next one may start once this one has played."""
        self.model.end(response_id, self._now_ms())

    def clear(self, response_id: str, by: str = "client_interrupt") -> bool:
        """Cut the response now; whether some of it was still to be heard."""
        return self.model.cut(response_id, self._now_ms(), by)

    def played_ms(self, response_id: str) -> int:
        """Milliseconds of the response the listener has heard by now."""
        return self.model.played_ms(response_id, self._now_ms())

    def ms_until(self, response_id: str, played_ms: int) -> float | None:
        """Media ms from now until `played_ms` of the response will have been heard or it
        drains, whichever comes first on the schedule as it stands (None: neither is
        scheduled: more audio, its end or a cut has to come first)."""
        model = self.model
        need = -(-played_ms * self.rate // 1000)  # the first sample count `played_ms` reports
        ats = [model.heard_by(response_id, need), model.release_of(response_id)]
        due = [at for at in ats if at is not None]
        if not due:
            return None
        return max(0.0, model.ms_at(min(due)) - self._now_ms())

    def in_flight(self, response_id: str) -> bool:
        """Whether some of the response is still to be heard."""
        return self.model.audible(response_id, self._now_ms())

    def drained(self, response_id: str) -> bool:
        """Ended or cut, and all of it that will be heard was heard."""
        return self.model.drained(response_id, self._now_ms())

    def active_ids(self) -> list[str]:
        """Responses still queued or playing."""
        return self.model.active(self._now_ms())

    def playing(self) -> bool:
        """Whether any answer audio is still queued or playing now."""
        return bool(self.active_ids())

    def start(self) -> None:
        """Nothing to open: the listener model is ready."""

    def close(self) -> None:
        """Nothing to close; what was heard stays readable."""

    def heard_start_ms(self, response_id: str, media_ms_at: MediaTimeOf) -> float | None:
        """Where the response starts in `heard.wav` (None: not heard yet)."""
        span = self.model.span(response_id)
        return None if span is None else span.heard_start_ms

    def heard(self, media_ms_at: MediaTimeOf, cut_by: Mapping[str, str]) -> Heard:
        """The listener model's schedule: what was heard, where, and each response's span."""
        audio = {rid: bytes(pcm) for rid, pcm in self.audio.items()}
        return Heard(self.segments(), audio, self.spans())

    def segments(self) -> list[HeardSegment]:
        """What was heard, in play order."""
        return self.model.segments()

    def spans(self) -> list[HeardSpan]:
        """Per-response summaries of what was heard."""
        return self.model.spans()
