"""The media clock: one anchor t0, absolute deadlines, send timing records (protocol.md §10).

This is the one mapping between the client's monotonic clock and media time (0 = the first
input sample): every time a run bundle records on the media clock comes from `media_ms_at`.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal

Pacing = Literal["realtime", "asap"]
PACINGS: tuple[Pacing, ...] = ("realtime", "asap")


@dataclass(frozen=True, slots=True)
class SendTiming:
    """When one event was due and when it went out, in ms relative to t0."""

    scheduled_offset_ms: float | None
    sent_offset_ms: float
    lateness_ms: float | None


class MediaClock:
    """Maps media time to monotonic deadlines from one anchor; never sleeps itself.

    `now()` returns seconds (default `time.monotonic`). In `realtime` pacing media time `m`
    is due at `t0 + m / 1000`; in `asap` nothing is ever due later than now, and the clock
    is read only to record when things were sent.
    """

    def __init__(self, pacing: Pacing = "realtime", *, now: Callable[[], float] = time.monotonic):
        if pacing not in PACINGS:
            raise ValueError(f"pacing must be one of {PACINGS}, got {pacing!r}")
        self.pacing: Pacing = pacing
        self.now = now
        self._t0: float | None = None

    @property
    def realtime(self) -> bool:
        """Whether sends wait for their deadlines."""
        return self.pacing == "realtime"

    @property
    def started(self) -> bool:
        """Whether the anchor has been taken."""
        return self._t0 is not None

    @property
    def t0(self) -> float:
        """The anchor: the `now()` value of media time 0."""
        if self._t0 is None:
            raise RuntimeError("media clock not started")
        return self._t0

    def start(self, media_ms: float = 0) -> float:
        """Take the anchor so that `media_ms` is now; a started clock keeps its anchor."""
        if self._t0 is None:
            self._t0 = self.now() - media_ms / 1000
        return self._t0

    def deadline(self, media_ms: float) -> float:
        """Absolute `now()` value at which media time `media_ms` is due."""
        return self.t0 + media_ms / 1000

    def wait_s(self, media_ms: float) -> float:
        """Seconds left until `media_ms` is due (0 when late, always 0 in `asap`)."""
        if not self.realtime:
            return 0.0
        return max(0.0, self.deadline(media_ms) - self.now())

    def offset_ms(self, at: float | None = None) -> float:
        """`at` (default: now) in ms relative to t0, to 3 decimals."""
        t = self.now() if at is None else at
        return round((t - self.t0) * 1000, 3)

    def media_ms_at(self, at: float) -> float | None:
        """The media time of monotonic reading `at`, in ms (3 decimals); None without a
        listener clock: before the anchor, or in `asap` pacing, where media time does not
        advance with the wall clock. Negative before the first input sample."""
        if self._t0 is None or not self.realtime:
            return None
        return round((at - self._t0) * 1000, 3)

    def media_now_ms(self) -> int:
        """The current media time in whole ms (0 before the clock is started)."""
        if self._t0 is None:
            return 0
        return max(0, int((self.now() - self._t0) * 1000))

    def timing(self, media_ms: float | None, sent_at: float) -> SendTiming:
        """The record for something due at `media_ms` (None: no deadline) sent at `sent_at`."""
        sent = self.offset_ms(sent_at)
        if not self.realtime or media_ms is None:
            return SendTiming(None, sent, None)
        scheduled = round(float(media_ms), 3)
        return SendTiming(scheduled, sent, round(max(0.0, sent - scheduled), 3))

    def mark_sent(self, media_ms: float | None) -> SendTiming:
        """Read the clock once and record a send due at `media_ms`."""
        return self.timing(media_ms, self.now())
