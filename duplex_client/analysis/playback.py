"""What plays a session's answers, as the run sees it: a speaker or the listener model.

`AudioOutput` is what the playback sync drives (queue, end, cut, played positions);
`HeardOutput` adds what the run's record needs from it: starting and closing it, and what
was heard, on the media clock. The listener model's `VirtualPlayer` is one (a file run),
the device `Player` another (live mode), the page's player a third (`duplex-cli web`);
`device_heard` turns the blocks a device or a page played into the same record.
`LiveOutput` is what a live session reads of a real player besides (the echo gate, a
push-to-talk press over the assistant, the heard latency).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import NamedTuple, Protocol

from duplex_client.analysis.heard import segments_from_blocks
from duplex_client.analysis.listener import HeardSegment, HeardSpan

#: A monotonic time → media ms (None before the media clock started).
MediaTimeOf = Callable[[float], float | None]


class Heard(NamedTuple):
    """What a listener heard: segments in play order, each response's audio, and per-response
    spans."""

    segments: list[HeardSegment]
    audio: dict[str, bytes]
    spans: list[HeardSpan]


class AudioOutput(Protocol):
    """What the playback sync drives: a device speaker, or the listener model."""

    @property
    def rate(self) -> int:
        """Output sample rate."""
        ...

    def enqueue(self, response_id: str, pcm: bytes) -> bool:
        """Queue PCM16 of a response; False (dropped) once it was cleared or ended."""
        ...

    def end(self, response_id: str) -> None:
        """No more audio will come for this response."""
        ...

    def clear(self, response_id: str, by: str = "client_interrupt") -> bool:
        """Stop the response now (`by`: the event that cut it); whether it was still audible."""
        ...

    def played_ms(self, response_id: str) -> int:
        """Milliseconds of the response played so far."""
        ...

    def in_flight(self, response_id: str) -> bool:
        """Whether audio handed out is not yet played."""
        ...

    def drained(self, response_id: str) -> bool:
        """Ended or cleared, and everything of it that will play has played."""
        ...

    def active_ids(self) -> list[str]:
        """Responses with audio queued or playing, oldest first."""
        ...


class HeardOutput(AudioOutput, Protocol):
    """An `AudioOutput` a run can start, close and read what was heard from."""

    def start(self) -> None:
        """Start playing (open the device)."""
        ...

    def close(self) -> None:
        """Stop playing (close the device); what was heard stays readable."""
        ...

    def playing(self) -> bool:
        """Whether answer audio is still queued or playing now."""
        ...

    def heard_start_ms(self, response_id: str, media_ms_at: MediaTimeOf) -> float | None:
        """Where a response started to be heard, in media ms (None: not yet, or not known)."""
        ...

    def heard(self, media_ms_at: MediaTimeOf, cut_by: Mapping[str, str]) -> Heard:
        """Everything heard, on the media clock; `cut_by`: why each cut response stopped."""
        ...


class LiveOutput(HeardOutput, Protocol):
    """A `HeardOutput` that really plays (a speaker, a page): what a live session reads of it."""

    @property
    def first_rendered(self) -> Mapping[str, float]:
        """When each response's first sample played (monotonic): where a listener hears it."""
        ...

    def audible(self) -> bool:
        """Whether assistant audio is queued, playing, or stopped less than a hangover ago."""
        ...


def device_heard(
    blocks: Iterable[tuple[float, str, bytes]],
    media_ms_at: MediaTimeOf,
    rate: int,
    cut_by: Mapping[str, str],
) -> Heard:
    """What a device played, from its rendered blocks (monotonic time, response id, PCM16).

    A response's first block is its first heard sample; blocks played before the media
    clock started are left out.
    """
    placed = []
    for t, rid, pcm in blocks:
        media = media_ms_at(t)
        if media is not None:
            placed.append((media, rid, pcm))
    segments, audio = segments_from_blocks(placed, rate)
    ms = 1000 / rate
    spans = []
    for rid, pcm in audio.items():
        own = [s for s in segments if s.response_id == rid]
        spans.append(
            HeardSpan(
                response_id=rid,
                first_audio_ms=None,
                heard_start_ms=round(own[0].start * ms, 3) if own else None,
                heard_end_ms=round(own[-1].end * ms, 3) if own else None,
                heard_ms=round(len(pcm) // 2 * ms, 3),
                received_ms=round(len(pcm) // 2 * ms, 3),
                cut=cut_by.get(rid),
                cut_ms=None,
            )
        )
    return Heard(segments, audio, spans)
