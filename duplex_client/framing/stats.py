"""Running order statistics: a sample kept sorted as values come, read without re-sorting."""

from __future__ import annotations

import bisect
from collections.abc import Iterable


class SortedSample:
    """Values kept in order (`bisect.insort`): max, middle and percentiles read in O(1)."""

    __slots__ = ("_values",)

    def __init__(self, values: Iterable[float] = ()) -> None:
        self._values: list[float] = sorted(values)

    def __len__(self) -> int:
        return len(self._values)

    def add(self, value: float) -> None:
        """Insert one value in order."""
        bisect.insort(self._values, value)

    def remove(self, value: float) -> None:
        """Remove one occurrence of `value`; `ValueError` if there is none."""
        i = bisect.bisect_left(self._values, value)
        if i == len(self._values) or self._values[i] != value:
            raise ValueError(f"{value!r} is not in the sample")
        del self._values[i]

    def replace(self, old: float | None, new: float | None) -> None:
        """Swap one value for another (None: nothing to remove, or nothing to add)."""
        if old is not None:
            self.remove(old)
        if new is not None:
            self.add(new)

    @property
    def max(self) -> float | None:
        """The largest value (None when empty)."""
        return self._values[-1] if self._values else None

    @property
    def middle(self) -> float | None:
        """The value at index n // 2 of the ordered sample (None when empty)."""
        return self._values[len(self._values) // 2] if self._values else None

    def percentile(self, q: float) -> float:
        """Linearly interpolated percentile, `q` in [0, 1]; `IndexError` when empty."""
        ordered = self._values
        pos = (len(ordered) - 1) * q
        lo = int(pos)
        hi = min(lo + 1, len(ordered) - 1)
        return ordered[lo] + (ordered[hi] - ordered[lo]) * (pos - lo)
