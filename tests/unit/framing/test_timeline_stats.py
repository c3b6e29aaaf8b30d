"""Running timeline figures: what is kept as rows come equals recomputing from every row."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from duplex_client.framing import InputTimeline, SendTiming
from duplex_client.framing.plan import PlannedAppend
from duplex_client.framing.stats import SortedSample
from duplex_client.protocol import UnitKind

KINDS = (None, UnitKind.AUDIO, UnitKind.OMNI, UnitKind.VISION)
LATENESS = st.none() | st.floats(min_value=0.0, max_value=5000.0, allow_nan=False)


def reference_percentile(values: list[float], q: float) -> float:
    """Sort everything, then interpolate linearly (the definition, recomputed from scratch)."""
    ordered = sorted(values)
    pos = (len(ordered) - 1) * q
    lo = int(pos)
    hi = min(lo + 1, len(ordered) - 1)
    return ordered[lo] + (ordered[hi] - ordered[lo]) * (pos - lo)


def append(i: int, kind: UnitKind | None) -> PlannedAppend:
    return PlannedAppend(
        segment="clip", pcm=b"\x01\x00" * 160, audio_start_samples=160 * i,
        audio_end_samples=160 * (i + 1), duration_ms=10, audio_end_ms=10 * (i + 1),
        is_speech=None, frames=None, unit_kind=kind, unit_index=i if kind else None,
        media_start_ms=10 * i, media_end_ms=10 * (i + 1),
    )  # fmt: skip


@given(
    values=st.lists(st.floats(-1e6, 1e6, allow_nan=False), max_size=60),
    removals=st.lists(st.integers(0, 1000), max_size=20),
    q=st.floats(0.0, 1.0),
)
def test_sorted_sample_matches_sorting_everything(
    values: list[float], removals: list[int], q: float
) -> None:
    sample, kept = SortedSample(), []
    for v in values:
        sample.add(v)
        kept.append(v)
    for r in removals:
        if kept:
            sample.remove(kept.pop(r % len(kept)))
    assert len(sample) == len(kept)
    if not kept:
        assert sample.max is None and sample.middle is None
        return
    ordered = sorted(kept)
    assert sample.max == ordered[-1]
    assert sample.middle == ordered[len(ordered) // 2]
    assert sample.percentile(q) == reference_percentile(kept, q)


def test_removing_a_value_not_in_the_sample_is_refused() -> None:
    sample = SortedSample([1.0, 2.0])
    with pytest.raises(ValueError, match="not in the sample"):
        sample.remove(1.5)
    sample.replace(None, 3.0)
    sample.replace(2.0, None)
    assert sample.max == 3.0 and len(sample) == 2


@given(
    rows=st.lists(st.tuples(st.sampled_from(KINDS), LATENESS), max_size=80),
    late=st.lists(st.tuples(st.integers(0, 10_000), st.floats(0.0, 9000.0)), max_size=10),
)
def test_running_timeline_figures_equal_a_full_recomputation(
    rows: list[tuple[UnitKind | None, float | None]], late: list[tuple[int, float]]
) -> None:
    timeline = InputTimeline()
    for i, (kind, lateness) in enumerate(rows):
        scheduled = None if lateness is None else 10.0 * i
        sent = 10.0 * i + (lateness or 0.0)
        timeline.add_append(append(i, kind), f"e{i}", SendTiming(scheduled, sent, lateness))
    for index, at in late:  # held over a reconnect: sent later than first recorded
        if rows:
            assert timeline.set_sent_offset(f"e{index % len(rows)}", at)
    assert not timeline.set_sent_offset("unknown", 1.0)

    appends = timeline.appends
    values = [r["lateness_ms"] for r in appends if r["lateness_ms"] is not None]
    for kind in ("AUDIO", "OMNI", "VISION"):
        assert timeline.unit_counts[kind] == sum(1 for r in appends if r["unit_kind"] == kind)
    assert len(timeline.lateness) == len(values)
    totals = timeline.totals()
    assert totals["units"] == timeline.unit_counts
    if not values:
        assert timeline.lateness.max is None and totals["lateness_ms"] is None
        return
    ordered = sorted(values)
    assert timeline.lateness.max == ordered[-1]
    assert timeline.lateness.middle == ordered[len(ordered) // 2]
    assert totals["lateness_ms"] == {
        "p50": round(reference_percentile(values, 0.5), 3),
        "p99": round(reference_percentile(values, 0.99), 3),
        "max": round(ordered[-1], 3),
    }


def test_a_late_send_updates_the_row_and_its_lateness() -> None:
    timeline = InputTimeline()
    timeline.add_append(append(0, UnitKind.AUDIO), "e0", SendTiming(100.0, 100.5, 0.5))
    timeline.add_append(append(1, UnitKind.AUDIO), "e1", SendTiming(200.0, 200.25, 0.25))
    assert timeline.set_sent_offset("e0", 350.50049)
    row = timeline.appends[0]
    assert row["sent_offset_ms"] == 350.50049 and row["lateness_ms"] == 250.5
    assert timeline.lateness.max == 250.5 and len(timeline.lateness) == 2  # 0.5 is gone
    late = timeline.totals()["lateness_ms"]
    assert late is not None and late["p50"] == 125.375 and late["max"] == 250.5
