"""The server's unit grid: where audio units close in cumulative audio (protocol.md §3.1)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from duplex_client.framing.sources import INPUT_SAMPLE_RATE_HZ
from duplex_client.protocol.capabilities import (
    DEFAULT_CHUNK_PERIOD_MS,
    DEFAULT_FIRST_UNIT_MS,
    Capabilities,
)


def ms_to_samples(ms: float, sample_rate_hz: int = INPUT_SAMPLE_RATE_HZ) -> int:
    """Samples in `ms` milliseconds: `round(rate * ms / 1000)` (protocol.md §3.1)."""
    return round(sample_rate_hz * ms / 1000)


def samples_to_ms(samples: int, sample_rate_hz: int = INPUT_SAMPLE_RATE_HZ) -> int:
    """`samples` as whole ms, rounded like Python's `round` (half to even) but exactly."""
    q, r = divmod(samples * 1000, sample_rate_hz)
    if 2 * r > sample_rate_hz or (2 * r == sample_rate_hz and q % 2):
        q += 1
    return q


@dataclass(frozen=True, slots=True)
class UnitGrid:
    """Audio unit k closes at `first_unit_ms + k * chunk_period_ms` of cumulative audio."""

    first_unit_ms: int = DEFAULT_FIRST_UNIT_MS
    chunk_period_ms: int = DEFAULT_CHUNK_PERIOD_MS
    sample_rate_hz: int = INPUT_SAMPLE_RATE_HZ

    def __post_init__(self) -> None:
        for name in ("first_unit_ms", "chunk_period_ms", "sample_rate_hz"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
                raise ValueError(f"{name} must be a positive integer, got {value!r}")

    @classmethod
    def from_capabilities(
        cls, caps: Capabilities, *, sample_rate_hz: int = INPUT_SAMPLE_RATE_HZ
    ) -> UnitGrid:
        """The grid a server advertised, counted in samples at `sample_rate_hz`."""
        return cls(
            first_unit_ms=caps.first_unit_ms,
            chunk_period_ms=caps.chunk_period_ms,
            sample_rate_hz=sample_rate_hz,
        )

    def boundary_ms(self, k: int) -> int:
        """Cumulative audio (ms) at which unit k closes; negative k clamps to 0."""
        k = max(k, 0)
        return self.first_unit_ms + k * self.chunk_period_ms

    def start_ms(self, k: int) -> int:
        """Cumulative audio (ms) at which unit k starts."""
        return 0 if k <= 0 else self.boundary_ms(k - 1)

    def unit_length_ms(self, k: int) -> int:
        """Length of unit k."""
        return self.first_unit_ms if k <= 0 else self.chunk_period_ms

    def boundary_samples(self, k: int) -> int:
        """Cumulative samples at which unit k closes (exact, never rounded ms)."""
        # `boundary_ms` inlined: the framer asks for boundaries several times per append
        return (self.first_unit_ms + max(k, 0) * self.chunk_period_ms) * self.sample_rate_hz // 1000

    def start_samples(self, k: int) -> int:
        """Cumulative samples at which unit k starts."""
        return 0 if k <= 0 else self.boundary_samples(k - 1)

    def unit_length_samples(self, k: int) -> int:
        """Length of unit k in samples (consecutive boundaries, so lengths always tile)."""
        end = self.boundary_samples(k)
        return end if k <= 0 else end - self.boundary_samples(k - 1)

    @property
    def period_samples(self) -> int:
        """Length in samples of a unit after the first when the grid is re-anchored by a commit."""
        return self.chunk_period_ms * self.sample_rate_hz // 1000

    def unit_at_ms(self, ms: float) -> int:
        """Index of the unit containing cumulative `ms` (a boundary belongs to the next unit)."""
        if ms < self.first_unit_ms:
            return 0
        return 1 + int((ms - self.first_unit_ms) // self.chunk_period_ms)

    def unit_at_sample(self, sample: int) -> int:
        """Index of the unit containing cumulative sample `sample` (a boundary starts the next)."""
        if sample < self.boundary_samples(0):
            return 0
        # Estimate from whole ms, then settle exactly against the sample boundaries.
        k = max(
            0, (sample * 1000 // self.sample_rate_hz - self.first_unit_ms) // self.chunk_period_ms
        )
        while k > 0 and self.boundary_samples(k - 1) > sample:
            k -= 1
        while self.boundary_samples(k) <= sample:
            k += 1
        return k

    def closes(self, start_sample: int, end_sample: int) -> int | None:
        """The unit an append spanning samples (start, end] closes, boundary included, else None.

        When an append would cross several boundaries the last one is returned.
        """
        if end_sample <= start_sample:
            return None
        k = self.unit_at_sample(end_sample) - 1
        if k >= 0 and self.boundary_samples(k) > start_sample:
            return k
        return None

    def closes_all(self, start_sample: int, end_sample: int) -> range:
        """Every unit whose boundary lies in (start, end]; empty for an empty span."""
        if end_sample <= start_sample:
            return range(0)
        first = self.unit_at_sample(start_sample)
        last = self.unit_at_sample(end_sample) - 1
        return range(first, max(first, last + 1))

    def describe(self) -> dict[str, Any]:
        """The two lengths, as the timeline's `unit_grid` records them."""
        return {"first_unit_ms": self.first_unit_ms, "chunk_period_ms": self.chunk_period_ms}
