"""The server's unit grid: where audio units close in cumulative audio (protocol.md §4.2)."""

from __future__ import annotations

from dataclasses import dataclass

from duplex_client.framing.sources import INPUT_SAMPLE_RATE_HZ
from duplex_client.protocol.capabilities import (
    DEFAULT_CHUNK_PERIOD_MS,
    DEFAULT_FIRST_UNIT_MS,
    Capabilities,
)


@dataclass(frozen=True, slots=True)
class UnitGrid:
    """Audio unit k closes at `first_unit_ms + k * chunk_period_ms` of cumulative audio."""

    first_unit_ms: int = DEFAULT_FIRST_UNIT_MS
    chunk_period_ms: int = DEFAULT_CHUNK_PERIOD_MS
    sample_rate_hz: int = INPUT_SAMPLE_RATE_HZ

    def __post_init__(self) -> None:
        if self.first_unit_ms <= 0 or self.chunk_period_ms <= 0:
            raise ValueError("unit lengths must be positive")

    @classmethod
    def from_capabilities(cls, caps: Capabilities) -> UnitGrid:
        """The grid a server advertised."""
        return cls(first_unit_ms=caps.first_unit_ms, chunk_period_ms=caps.chunk_period_ms)

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
        return self.boundary_ms(k) * self.sample_rate_hz // 1000

    def unit_at_ms(self, ms: float) -> int:
        """Index of the unit containing cumulative `ms` (a boundary belongs to the next unit)."""
        if ms < self.first_unit_ms:
            return 0
        return 1 + int((ms - self.first_unit_ms) // self.chunk_period_ms)

    def unit_at_sample(self, sample: int) -> int:
        """Index of the unit containing cumulative sample `sample`."""
        first = self.boundary_samples(0)
        if sample < first:
            return 0
        period = self.chunk_period_ms * self.sample_rate_hz // 1000
        return 1 + (sample - first) // period

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
