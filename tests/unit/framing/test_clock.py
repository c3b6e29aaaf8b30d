"""MediaClock: one anchor, absolute deadlines, timing records; it never sleeps."""

from __future__ import annotations

import pytest

from duplex_client.framing import MediaClock, SendTiming
from tests.unit.framing.fakes import FakeClock


def test_deadlines_are_absolute_from_the_anchor() -> None:
    fake = FakeClock(50.0)
    clock = MediaClock(now=fake.now)
    assert not clock.started
    assert clock.start() == 50.0
    assert clock.deadline(0) == 50.0
    assert clock.deadline(1200) == pytest.approx(51.2)
    fake.t = 50.3
    assert clock.wait_s(200) == 0.0  # late: no waiting, nothing shifts
    assert clock.wait_s(1000) == pytest.approx(0.7)
    assert clock.deadline(1000) == pytest.approx(51.0)


def test_start_keeps_an_existing_anchor_and_can_start_mid_timeline() -> None:
    fake = FakeClock(10.0)
    clock = MediaClock(now=fake.now)
    assert clock.start(2400) == pytest.approx(7.6)
    fake.t = 20.0
    assert clock.start(0) == pytest.approx(7.6)
    assert clock.media_now_ms() == 12400


def test_t0_before_start_is_an_error() -> None:
    clock = MediaClock(now=FakeClock().now)
    with pytest.raises(RuntimeError):
        _ = clock.t0
    assert clock.media_now_ms() == 0


def test_asap_never_waits_and_never_reads_the_clock_for_waiting() -> None:
    reads: list[int] = []

    def now() -> float:
        reads.append(1)
        return 5.0

    clock = MediaClock("asap", now=now)
    clock.start()
    before = len(reads)
    assert clock.wait_s(10_000) == 0.0
    assert len(reads) == before
    assert not clock.realtime


def test_timing_records_lateness_only_in_realtime() -> None:
    fake = FakeClock(0.0)
    rt = MediaClock(now=fake.now)
    rt.start()
    assert rt.timing(800, 0.800412) == SendTiming(800.0, 800.412, 0.412)
    assert rt.timing(800, 0.7) == SendTiming(800.0, 700.0, 0.0)
    assert rt.timing(None, 0.1) == SendTiming(None, 100.0, None)
    fake.t = 1.5
    assert rt.mark_sent(1000) == SendTiming(1000.0, 1500.0, 500.0)
    asap = MediaClock("asap", now=fake.now)
    asap.start()
    assert asap.mark_sent(1000) == SendTiming(None, 0.0, None)


def test_offsets_are_rounded_to_microseconds() -> None:
    fake = FakeClock(1.0)
    clock = MediaClock(now=fake.now)
    clock.start()
    assert clock.offset_ms(1.0001234567) == 0.123


def test_rejects_unknown_pacing() -> None:
    with pytest.raises(ValueError):
        MediaClock("fast")  # type: ignore[arg-type]


def test_media_time_of_a_monotonic_reading() -> None:
    now = [50.0]
    clock = MediaClock("realtime", now=lambda: now[0])
    assert clock.media_ms_at(50.0) is None  # no anchor yet: no media time
    clock.start()
    assert clock.media_ms_at(50.25) == 250.0
    assert clock.media_ms_at(49.9995) == -0.5  # before the first input sample
    asap = MediaClock("asap", now=lambda: now[0])
    asap.start()
    assert asap.media_ms_at(51.0) is None  # media time does not follow the wall clock
