"""The page's player as the run's listener: answers go to the page, its reports come back.

`PagePlayer` is a `LiveOutput` (`analysis.playback`) like the device `Player`: the playback
sync queues, ends and clears responses on it and reads their played positions, which here
are what the page's AudioWorklet player reported it handed to the audio output, each block
placed at the time the page's clock says it reaches the speaker (`getOutputTimestamp`),
mapped to this process's clock (`PageClock`). `heard()` turns those blocks into the run's
record with `device_heard`, as for a device: `heard.wav` is what the page played.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from duplex_client.analysis.playback import Heard, MediaTimeOf, device_heard
from duplex_client.web.protocol import PageError, answer_frame

_BPS = 2
#: Sends one message to the page (a JSON-able dict or a binary frame), never blocking.
Post = Callable[[dict[str, Any] | bytes], None]


@dataclass(slots=True)
class _Track:
    """One response: what went to the page and what the page played of it."""

    n: int
    pcm: bytearray = field(default_factory=bytearray)
    ended: bool = False
    cleared: bool = False
    #: The page confirmed a clear (its last played sample is reported).
    stopped: bool = False
    #: Played blocks: (monotonic time the first sample reaches the speaker, offset, samples).
    blocks: list[tuple[float, int, int]] = field(default_factory=list)
    #: The output frame just after the last block (the next block follows it seamlessly).
    next_frame: int | None = None
    settled: int = 0
    reported: int = 0

    @property
    def sent(self) -> int:
        return len(self.pcm) // _BPS


class PagePlayer:
    """Answers played by the page; positions from its reports (see the module docstring).

    `to_monotonic` maps page milliseconds to this process's monotonic clock. `report()` takes
    the page's `played` message; `stopped()` its `cleared` confirmation.
    """

    def __init__(
        self,
        post: Post,
        to_monotonic: Callable[[float], float],
        *,
        sample_rate_hz: int = 24000,
        jitter_ms: int = 80,
        hangover_ms: int = 150,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.post = post
        self.to_monotonic = to_monotonic
        self.rate = sample_rate_hz
        self.jitter_ms = jitter_ms
        self.hangover_s = hangover_ms / 1000
        self.clock = clock
        #: Underruns the page counted (its buffer ran dry mid-answer).
        self.underruns = 0
        self.started = False
        self._tracks: dict[str, _Track] = {}
        self._by_n: dict[int, str] = {}
        self._audible_until = 0.0
        #: When each response's first sample played (monotonic).
        self.first_rendered: dict[str, float] = {}

    # --- HeardOutput ---

    def start(self) -> None:
        """Tell the page its player's settings (rate, jitter buffer)."""
        self.started = True
        self.post({"type": "player", "rate": self.rate, "jitter_ms": self.jitter_ms})

    def close(self) -> None:
        """Stop the page's player: nothing more plays; what was heard stays readable."""
        if self.started:
            self.post({"type": "player_stop"})
            self.started = False

    def enqueue(self, response_id: str, pcm: bytes) -> bool:
        """Send PCM16 of a response to the page; False (dropped) once it was cleared or ended."""
        track = self._tracks.get(response_id)
        if track is None:
            track = self._tracks[response_id] = _Track(len(self._tracks) + 1)
            self._by_n[track.n] = response_id
            self.post({"type": "play", "n": track.n, "id": response_id})
        if track.cleared or track.ended:
            return False
        pcm = pcm[: len(pcm) - len(pcm) % _BPS]
        track.pcm += pcm
        self.post(answer_frame(track.n, pcm))
        return True

    def end(self, response_id: str) -> None:
        """No more audio will come for this response (the page may play it out)."""
        track = self._tracks.get(response_id)
        if track is not None and not track.ended:
            track.ended = True
            self.post({"type": "end", "n": track.n})

    def clear(self, response_id: str, by: str = "client_interrupt") -> bool:
        """Stop the response on the page now; whether some of it was still to be heard."""
        track = self._tracks.get(response_id)
        if track is None:
            track = self._tracks[response_id] = _Track(len(self._tracks) + 1)
            self._by_n[track.n] = response_id
        busy = not track.cleared and self._played(track, self.clock()) < track.sent
        if not track.cleared:
            track.cleared = track.ended = True
            self.post({"type": "clear", "n": track.n})
        return busy

    def played_ms(self, response_id: str) -> int:
        """Milliseconds of the response the page has played by now."""
        track = self._tracks.get(response_id)
        return 0 if track is None else self._played(track, self.clock()) * 1000 // self.rate

    def in_flight(self, response_id: str) -> bool:
        """Whether the page holds audio of the response not yet played (or a clear unconfirmed)."""
        track = self._tracks.get(response_id)
        if track is None:
            return False
        now = self.clock()
        if track.cleared:
            return not track.stopped or self._played(track, now) < track.reported
        return self._played(track, now) < track.sent

    def drained(self, response_id: str) -> bool:
        """Ended (or cleared), and everything of it that will play has played."""
        track = self._tracks.get(response_id)
        if track is None or not track.ended:
            return False
        return not self.in_flight(response_id)

    def active_ids(self) -> list[str]:
        """Responses with audio still to play on the page, oldest first."""
        now = self.clock()
        return [
            rid
            for rid, t in self._tracks.items()
            if not t.cleared and self._played(t, now) < t.sent
        ]

    def playing(self) -> bool:
        """Whether answer audio is still queued or playing on the page."""
        return bool(self.active_ids())

    def audible(self) -> bool:
        """Whether answer audio is queued, playing, or stopped less than a hangover ago."""
        return self.playing() or self.clock() < self._audible_until + self.hangover_s

    def heard_start_ms(self, response_id: str, media_ms_at: MediaTimeOf) -> float | None:
        """When the page played the response's first sample, in media ms (None: not yet)."""
        at = self.first_rendered.get(response_id)
        return None if at is None else media_ms_at(at)

    def heard(self, media_ms_at: MediaTimeOf, cut_by: Mapping[str, str]) -> Heard:
        """What the page played, placed on the media clock."""
        blocks = []
        for rid, track in self._tracks.items():
            for at, offset, n in track.blocks:
                blocks.append((at, rid, bytes(track.pcm[offset * _BPS : (offset + n) * _BPS])))
        blocks.sort(key=lambda b: b[0])
        return device_heard(blocks, media_ms_at, self.rate, cut_by)

    # --- the page's reports ---

    def report(self, msg: dict[str, Any]) -> None:
        """The page's `played` message: blocks `[n, offset, samples, at_ms, frame]` (`frame`:
        the output's frame counter at the block's first sample) and its underruns."""
        blocks = msg.get("blocks")
        if not isinstance(blocks, list):
            raise PageError("played: blocks must be a list")
        for block in blocks:
            if not (isinstance(block, list) and len(block) == 5):
                raise PageError("played: a block is [n, offset, samples, at_ms, frame]")
            n, offset, count, at_ms, frame = block
            rid = self._by_n.get(n) if isinstance(n, int) else None
            counts = (offset, count, frame)
            if rid is None or not all(isinstance(v, int) and v >= 0 for v in counts):
                raise PageError(f"played: bad block {block!r}")
            if not isinstance(at_ms, int | float):
                raise PageError(f"played: bad time in {block!r}")
            self._add(rid, offset, count, self.to_monotonic(float(at_ms)), frame)
        underruns = msg.get("underruns")
        if isinstance(underruns, int) and underruns >= self.underruns:
            self.underruns = underruns

    def stopped(self, n: Any) -> None:
        """The page confirmed a clear of response number `n` (its blocks are all reported)."""
        rid = self._by_n.get(n) if isinstance(n, int) else None
        if rid is not None:
            self._tracks[rid].stopped = True

    def _add(self, rid: str, offset: int, count: int, at: float, frame: int) -> None:
        track = self._tracks[rid]
        if count == 0 or offset != track.reported or offset + count > track.sent:
            raise PageError(f"played: response {track.n} block {offset}+{count} is out of order")
        if frame == track.next_frame and track.blocks:  # seamless: no clock jitter at seams
            last_at, _, last_n = track.blocks[-1]
            at = last_at + last_n / self.rate
        track.next_frame = frame + count
        track.blocks.append((at, offset, count))
        track.reported += count
        self.first_rendered.setdefault(rid, at)
        self._audible_until = max(self._audible_until, at + count / self.rate)

    def _played(self, track: _Track, now: float) -> int:
        """Samples of the track at the speaker by `now` (blocks placed ahead count in part)."""
        done = 0
        while track.settled < len(track.blocks):
            at, _, n = track.blocks[track.settled]
            if at + n / self.rate > now:
                break
            track.settled += 1
        for at, offset, n in track.blocks[track.settled :]:
            done = max(done, offset + min(n, max(0, int((now - at) * self.rate))))
        if track.settled:
            _, offset, n = track.blocks[track.settled - 1]
            done = max(done, offset + n)
        return done
