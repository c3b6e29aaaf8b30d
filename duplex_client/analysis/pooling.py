"""How many runs pool into one figure: the timing-valid limit, the pooled per-turn values.

The eval summary and the eval report both pool from here, so a histogram's count is the
"turns" count of the same metric in `summary.md`. Pure code: no clock, no I/O.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

#: The default `--max-lateness-ms`: above this send lateness p99 (or end drift) a run's
#: latencies measure the client's sending, not the model, and it is timing-invalid.
TIMING_LATENESS_MS = 20.0
#: The pooled per-turn distributions, with their labels.
POOLED = {
    "latency_ms": "latency",
    "server_ms": "server time",
    "overlap_ms": "overlap",
    "gap_ms": "gap",
}
#: Pooled over heard turns only (`heard_ms` > 0), as a run's `metrics` does.
HEARD_ONLY = frozenset({"overlap_ms", "gap_ms"})


def number(value: Any) -> float | None:
    """A JSON number as float (None for null, a bool or anything else)."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value)


def turn_values(turns: Iterable[Mapping[str, Any]]) -> dict[str, list[float]]:
    """Per-turn values by `POOLED` field, as the aggregate pools them (`HEARD_ONLY` heard)."""
    pooled: dict[str, list[float]] = {name: [] for name in POOLED}
    for turn in turns:
        heard = (number(turn.get("heard_ms")) or 0.0) > 0
        for name in POOLED:
            value = number(turn.get(name))
            if value is not None and (heard or name not in HEARD_ONLY):
                pooled[name].append(value)
    return pooled


def percentiles(values: Sequence[float], qs: Sequence[float]) -> list[float]:
    """Linear-interpolated percentiles of `values` at each `q` in [0, 1] (values non-empty)."""
    if not values:
        raise ValueError("percentiles of no values")
    ordered = sorted(values)
    out = []
    for q in qs:
        if not 0.0 <= q <= 1.0:
            raise ValueError(f"percentile q must be within [0, 1], got {q}")
        pos = (len(ordered) - 1) * q
        lo = int(pos)
        hi = min(lo + 1, len(ordered) - 1)
        out.append(ordered[lo] + (ordered[hi] - ordered[lo]) * (pos - lo))
    return out
