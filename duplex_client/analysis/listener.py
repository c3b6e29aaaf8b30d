"""The listener model: where each response's audio would have been heard on the media clock.

A virtual listener plays the answer audio the way a speaker with no jitter buffer would:

- a response starts playing when its first audio arrives, unless earlier audio is still
  playing, in which case it is queued after it;
- its chunks play back to back; a chunk that arrives after the previous one finished playing
  starts on arrival (an underrun leaves a gap of silence);
- the next response is released once the current one has ended (`end`, its `response.done`)
  and everything received of it has played, or once it is cut;
- a cut (`output_audio_buffer.cleared`, a cancelled or barged-in response, a client
  interrupt) stops the response at the moment it arrives: the sample playing then is the
  last one heard, and nothing queued of it plays.

Positions are samples at the model's rate on the media clock (sample 0 = media time 0);
times passed in are media ms, in non-decreasing order. Pure code: no clock, no I/O.
"""

from __future__ import annotations

from dataclasses import dataclass, field

_NEVER = float("inf")


@dataclass(frozen=True, slots=True)
class HeardSegment:
    """A run of one response's samples that was heard: `samples` from `offset` at `start`."""

    response_id: str
    start: int
    offset: int
    samples: int

    @property
    def end(self) -> int:
        """The track sample just after the segment."""
        return self.start + self.samples


@dataclass(frozen=True, slots=True)
class HeardSpan:
    """What the listener heard of one response, in media ms (None: nothing heard)."""

    response_id: str
    first_audio_ms: float | None
    heard_start_ms: float | None
    heard_end_ms: float | None
    heard_ms: float
    received_ms: float
    cut: str | None
    cut_ms: float | None


@dataclass(slots=True)
class _Response:
    rid: str
    arrivals: list[tuple[int, int]] = field(default_factory=list)  # (arrival sample, samples)
    ended_at: int | None = None
    cut_at: int | None = None
    cut_by: str | None = None
    segments: list[HeardSegment] = field(default_factory=list)
    release: float = _NEVER  # when the queue moves on to the next response

    @property
    def received(self) -> int:
        return sum(n for _, n in self.arrivals)


class ListenerModel:
    """Schedules answer audio the way a listener hears it; see the module docstring."""

    def __init__(self, sample_rate_hz: int) -> None:
        if sample_rate_hz <= 0:
            raise ValueError(f"sample_rate_hz must be positive, got {sample_rate_hz}")
        self.rate = sample_rate_hz
        self._order: list[_Response] = []
        self._by_id: dict[str, _Response] = {}
        self._dirty: int | None = None  # first response whose schedule is stale
        self._last = -_NEVER

    # --- input ---

    def sample_at(self, media_ms: float) -> int:
        """The track sample at media time `media_ms` (rounded to the nearest sample)."""
        return round(media_ms * self.rate / 1000)

    def ms_at(self, sample: int) -> float:
        """The media time of track sample `sample`, in ms (3 decimals)."""
        return round(sample * 1000 / self.rate, 3)

    def _at(self, media_ms: float) -> int:
        # Callers read one monotonic clock; a reading a hair older than the last (an event's
        # receive time after a tick's) is taken as the last, so the schedule never rewinds.
        self._last = max(self._last, media_ms)
        return self.sample_at(self._last)

    def _touch(self, response: _Response) -> None:
        index = self._order.index(response) if self._order[-1] is not response else None
        position = len(self._order) - 1 if index is None else index
        self._dirty = position if self._dirty is None else min(self._dirty, position)

    def _response(self, response_id: str) -> _Response:
        """The response with this id, added after the others when it is new."""
        response = self._by_id.get(response_id)
        if response is None:
            response = self._by_id[response_id] = _Response(response_id)
            self._order.append(response)
        return response

    def arrive(self, response_id: str, samples: int, media_ms: float) -> bool:
        """Audio of a response arrived; False (dropped) once the response ended or was cut."""
        at = self._at(media_ms)
        response = self._response(response_id)
        if response.cut_at is not None or response.ended_at is not None:
            return False
        if samples > 0:
            response.arrivals.append((at, samples))
            self._touch(response)
        return True

    def end(self, response_id: str, media_ms: float) -> None:
        """No more audio will come for this response (its `response.done`)."""
        at = self._at(media_ms)
        response = self._by_id.get(response_id)
        if response is not None and response.ended_at is None and response.cut_at is None:
            response.ended_at = at
            self._touch(response)

    def cut(self, response_id: str, media_ms: float, by: str) -> bool:
        """Stop a response at `media_ms`; returns whether any of it was still to be heard."""
        at = self._at(media_ms)
        response = self._response(response_id)
        if response.cut_at is not None:
            return False
        self._schedule()
        busy = response.received > self._played(response, at)
        if response.ended_at is not None and not busy:
            return False  # it had finished playing: nothing was cut
        response.cut_at, response.cut_by = at, by
        self._touch(response)
        return busy

    # --- queries ---

    def played_samples(self, response_id: str, media_ms: float) -> int:
        """Samples of the response heard by media time `media_ms`."""
        self._schedule()
        response = self._by_id.get(response_id)
        return 0 if response is None else self._played(response, self.sample_at(media_ms))

    @staticmethod
    def _played(response: _Response, at: int) -> int:
        return sum(min(s.samples, max(0, at - s.start)) for s in response.segments)

    def heard_by(self, response_id: str, samples: int) -> int | None:
        """The track sample by which `samples` of the response will have been heard, on the
        schedule as it stands (None: what it received so far does not reach that far)."""
        self._schedule()
        response = self._by_id.get(response_id)
        left = samples
        for s in response.segments if response is not None else ():
            if left <= s.samples:
                return s.start + left
            left -= s.samples
        return None

    def release_of(self, response_id: str) -> int | None:
        """The track sample at which the response drains (None: not ended or cut yet)."""
        self._schedule()
        response = self._by_id.get(response_id)
        if response is None or response.release == _NEVER:
            return None
        if response.ended_at is None and response.cut_at is None:
            return None
        return int(response.release)

    def played_ms(self, response_id: str, media_ms: float) -> int:
        """Milliseconds of the response heard by `media_ms` (truncated)."""
        return self.played_samples(response_id, media_ms) * 1000 // self.rate

    def drained(self, response_id: str, media_ms: float) -> bool:
        """Ended or cut, and everything of it that will be heard was heard by `media_ms`."""
        self._schedule()
        response = self._by_id.get(response_id)
        if response is None or (response.ended_at is None and response.cut_at is None):
            return False
        return response.release <= self.sample_at(media_ms)

    def audible(self, response_id: str, media_ms: float) -> bool:
        """Whether some of the response is still to be heard after `media_ms`."""
        self._schedule()
        response = self._by_id.get(response_id)
        if response is None or response.cut_at is not None:
            return False
        at = self.sample_at(media_ms)
        if response.ended_at is None:
            return response.received > 0
        return bool(response.segments) and response.segments[-1].end > at

    def active(self, media_ms: float) -> list[str]:
        """Responses with audio still queued or playing at `media_ms`, oldest first."""
        return [r.rid for r in self._order if self.audible(r.rid, media_ms)]

    def playing_until(self) -> int | None:
        """The last sample scheduled to be heard, or None if no audio is scheduled."""
        self._schedule()
        ends = [r.segments[-1].end for r in self._order if r.segments]
        return max(ends) if ends else None

    def segments(self) -> list[HeardSegment]:
        """Every heard segment in play order."""
        self._schedule()
        return [s for r in self._order for s in r.segments]

    def spans(self) -> list[HeardSpan]:
        """One summary per response that received audio or was cut, in play order."""
        self._schedule()
        out = []
        for r in self._order:
            heard = sum(s.samples for s in r.segments)
            out.append(
                HeardSpan(
                    response_id=r.rid,
                    first_audio_ms=self.ms_at(r.arrivals[0][0]) if r.arrivals else None,
                    heard_start_ms=self.ms_at(r.segments[0].start) if r.segments else None,
                    heard_end_ms=self.ms_at(r.segments[-1].end) if r.segments else None,
                    heard_ms=self.ms_at(heard),
                    received_ms=self.ms_at(r.received),
                    cut=r.cut_by,
                    cut_ms=None if r.cut_at is None else self.ms_at(r.cut_at),
                )
            )
        return out

    def span(self, response_id: str) -> HeardSpan | None:
        """The summary of one response (None if it never had audio or a cut)."""
        return next((s for s in self.spans() if s.response_id == response_id), None)

    # --- scheduling ---

    def _schedule(self) -> None:
        """Recompute the schedule from the first response that changed onwards."""
        if self._dirty is None:
            return
        first, self._dirty = self._dirty, None
        cursor: float = 0 if first == 0 else self._order[first - 1].release
        for response in self._order[first:]:
            cursor = self._place(response, cursor)

    @staticmethod
    def _place(response: _Response, cursor: float) -> float:
        """Lay out one response from `cursor` (the previous release); returns its release."""
        response.segments = []
        stop = _NEVER if response.cut_at is None else response.cut_at
        at = cursor
        offset = 0
        for arrival, samples in response.arrivals:
            start = max(arrival, at)
            if start == _NEVER or start >= stop:
                break
            take = int(min(samples, stop - start))
            last = response.segments[-1] if response.segments else None
            if last is not None and last.end == start:
                response.segments[-1] = HeardSegment(
                    response.rid, last.start, last.offset, last.samples + take
                )
            else:
                response.segments.append(HeardSegment(response.rid, int(start), offset, take))
            offset += samples
            at = start + take
            if take < samples:
                break
        ended = _NEVER if response.ended_at is None else response.ended_at
        natural = max(at, ended)
        # A cut response lets the queue move on at the cut, but never before the one ahead.
        response.release = natural if response.cut_at is None else max(cursor, min(natural, stop))
        return response.release
