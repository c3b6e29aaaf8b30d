"""The page's clock (`performance.now()` ms) on this process's monotonic clock.

Capture times and played positions come from the page in its own time. `PageClock` maps them
here from ping round trips, as NTP does: the page answers a ping with its time at once, which
is then taken to be the middle of the round trip. The round trip with the least delay in a
sliding window wins (a delayed answer only widens the uncertainty, half its round trip).
"""

from __future__ import annotations

from collections import deque

#: Round trips kept: the best of the last ones is used (clocks drift by ppm, not by ms).
WINDOW = 16


class PageClock:
    """Page milliseconds ↔ monotonic seconds, from `pong` answers to pings."""

    def __init__(self, window: int = WINDOW) -> None:
        self._samples: deque[tuple[float, float]] = deque(maxlen=window)
        #: Page seconds minus monotonic seconds (None before the first answer).
        self.offset: float | None = None
        #: The round trip of the estimate in use, in ms.
        self.rtt_ms: float | None = None

    def pong(self, sent_at: float, page_ms: float, received_at: float) -> None:
        """A ping sent at `sent_at` came back at `received_at` with the page's time `page_ms`."""
        rtt = received_at - sent_at
        if rtt < 0:
            return
        self._samples.append((rtt, page_ms / 1000 - (sent_at + received_at) / 2))
        best_rtt, offset = min(self._samples)
        self.offset, self.rtt_ms = offset, round(best_rtt * 1000, 3)

    @property
    def synced(self) -> bool:
        """Whether a round trip has been measured."""
        return self.offset is not None

    def to_monotonic(self, page_ms: float) -> float:
        """A page time as a monotonic time here (`RuntimeError` before the first answer)."""
        if self.offset is None:
            raise RuntimeError("the page clock is not synced yet")
        return page_ms / 1000 - self.offset
