"""The number rules of vLLM-Omni's duplex metrics: which values count, rounding, aggregates.

From vLLM-Omni 0.30.0's `vllm_omni/clients/utils.py` (`distribution_summary`,
`_finite_number`, `_rounded_ms`) and `vllm_omni/metrics/definitions.py` (`compute_audio_rtf`).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

#: The aggregates upstream's `distribution_summary` reports, in order.
AGGREGATES: tuple[str, ...] = ("count", "mean", "p50", "p99")

#: Decimals of a ms value and of an RTF.
MS_DIGITS = 3
RTF_DIGITS = 6


def finite(value: object) -> float | None:
    """`value` as a float when it is a real, finite number (a bool is not one)."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    number = float(value)
    return number if math.isfinite(number) else None


def non_negative(value: object) -> float | None:
    """`finite(value)` when it is not below 0."""
    number = finite(value)
    return number if number is not None and number >= 0 else None


def positive(value: object) -> float | None:
    """`finite(value)` when it is above 0."""
    number = finite(value)
    return number if number is not None and number > 0 else None


def rounded_ms(value: float) -> float:
    """A ms value as upstream stores it: 3 decimals."""
    return round(float(value), MS_DIGITS)


def audio_rtf(generation_ms: float, duration_ms: float) -> float | None:
    """Upstream's RTF of (already rounded) ms figures: generation over duration, 6 decimals;
    None when there is no audio to divide by."""
    if duration_ms <= 0:
        return None
    return round((generation_ms / 1000.0) / (duration_ms / 1000.0), RTF_DIGITS)


def _nearest_rank(ordered: Sequence[float], fraction: float) -> float:
    index = max(0, math.ceil(fraction * len(ordered)) - 1)
    return ordered[min(index, len(ordered) - 1)]


def summarize(
    values: Sequence[float | None], *, digits: int = MS_DIGITS
) -> dict[str, float | None]:
    """Upstream's distribution summary: count, mean, nearest-rank p50 and p99 of finite values
    (count 0 and None where upstream reports no summary)."""
    clean = sorted(v for v in (finite(x) for x in values) if v is not None)
    if not clean:
        return {"count": 0, "mean": None, "p50": None, "p99": None}
    return {
        "count": len(clean),
        "mean": round(sum(clean) / len(clean), digits),
        "p50": round(_nearest_rank(clean, 0.50), digits),
        "p99": round(_nearest_rank(clean, 0.99), digits),
    }
