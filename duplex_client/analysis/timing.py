"""Whether a run's timing measures the model: the verdict at the end, the warning while it runs.

A run is timing-valid when its send lateness p99 and its end drift (the last append's
lateness) are both within the limit (`TIMING_LATENESS_MS` unless told otherwise); past it,
its latencies measure the client's sending, not the model. `timing_verdict` is the one
judgement (a run's `result.json` and the eval summary both use it); `TimingWatch` says it
once while a stream runs, the moment its running p99 crosses the limit. Pure code.
"""

from __future__ import annotations

from dataclasses import dataclass

from duplex_client.analysis.pooling import TIMING_LATENESS_MS
from duplex_client.framing.stats import SortedSample

__all__ = ["TIMING_LATENESS_MS", "TIMING_LOST", "TimingVerdict", "TimingWatch", "timing_verdict"]

#: How the warning of a stream whose timing was lost begins.
TIMING_LOST = "timing lost"


@dataclass(frozen=True, slots=True)
class TimingVerdict:
    """Valid (True / False, None: nothing paced in real time to judge) and why not."""

    valid: bool | None
    reason: str | None = None


def timing_verdict(
    p99_ms: float | None, drift_ms: float | None, limit_ms: float = TIMING_LATENESS_MS
) -> TimingVerdict:
    """The verdict on a run's send lateness p99 and drift (None p99: nothing to judge; a
    None drift leaves the p99 alone to decide)."""
    if p99_ms is None:
        return TimingVerdict(None)
    reasons = []
    if p99_ms > limit_ms:
        reasons.append(f"send lateness p99 {p99_ms:.0f} ms > {limit_ms:g} ms")
    if drift_ms is not None and abs(drift_ms) > limit_ms:
        reasons.append(f"drift at the end {drift_ms:.0f} ms > {limit_ms:g} ms")
    if not reasons:
        return TimingVerdict(True)
    why = " and ".join(reasons)
    return TimingVerdict(False, f"{why}: the sends fell behind the media clock")


class TimingWatch:
    """Says once, while a stream runs, that its sends fell behind the limit."""

    def __init__(self, limit_ms: float = TIMING_LATENESS_MS) -> None:
        self.limit_ms = limit_ms
        #: The warning once given (None: the stream has kept up so far).
        self.warning: str | None = None

    def check(self, lateness: SortedSample, media_ms: float) -> str | None:
        """The warning the first time the running p99 of `lateness` passes the limit."""
        if self.warning is not None or not len(lateness):
            return None
        p99 = lateness.percentile(0.99)
        if p99 <= self.limit_ms:
            return None
        self.warning = (
            f"{TIMING_LOST} at media {media_ms / 1000:.1f} s: send lateness p99 {p99:.0f} ms > "
            f"{self.limit_ms:g} ms, so this run is timing-invalid (the client cannot pace "
            "it: too many streams for its CPU, or a stalled event loop)"
        )
        return self.warning
