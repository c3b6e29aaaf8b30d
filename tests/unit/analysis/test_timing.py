"""The timing verdict (end of a run) and the watch that says it once while streaming."""

from __future__ import annotations

from duplex_client.analysis.timing import TIMING_LOST, TimingWatch, timing_verdict
from duplex_client.framing.stats import SortedSample


def test_the_verdict_names_what_fell_behind() -> None:
    assert timing_verdict(None, None).valid is None
    assert timing_verdict(3.0, 2.0) == timing_verdict(20.0, -20.0)  # valid, no reason
    assert timing_verdict(3.0, None).valid is True
    late = timing_verdict(143.4, 5.0)
    assert late.valid is False and late.reason is not None
    assert late.reason.startswith("send lateness p99 143 ms > 20 ms")
    drift = timing_verdict(4.0, 14240.0, 50.0)
    assert drift.reason is not None and drift.reason.startswith("drift at the end 14240 ms > 50 ms")


def test_the_watch_warns_once_when_the_running_p99_passes_the_limit() -> None:
    watch = TimingWatch(20.0)
    sample = SortedSample()
    said = []
    for i, late in enumerate([1.0, 2.0, 1.0, 250.0, 300.0, 280.0, 1.0]):
        sample.add(late)
        said.append(watch.check(sample, (i + 1) * 200.0))
    assert said[:3] == [None] * 3 and said[4:] == [None] * 3
    assert said[3] is not None and said[3].startswith(f"{TIMING_LOST} at media 0.8 s")
    assert "p99" in said[3] and watch.warning == said[3]
