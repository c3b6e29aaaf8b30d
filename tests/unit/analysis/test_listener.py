"""The listener model: queueing, underruns, cuts and release, with times given by hand."""

from __future__ import annotations

import itertools

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from duplex_client.analysis.listener import HeardSegment, ListenerModel

RATE = 1000  # one sample per ms keeps the arithmetic readable


def test_a_response_plays_from_its_first_delta() -> None:
    m = ListenerModel(RATE)
    m.arrive("a", 500, 1200)
    m.arrive("a", 500, 1300)  # arrives while the first chunk plays: back to back
    m.end("a", 1400)
    assert m.segments() == [HeardSegment("a", 1200, 0, 1000)]
    span = m.span("a")
    assert span is not None
    assert (span.first_audio_ms, span.heard_start_ms, span.heard_end_ms) == (1200, 1200, 2200)
    assert (span.heard_ms, span.received_ms, span.cut) == (1000, 1000, None)


def test_played_position_follows_the_clock() -> None:
    m = ListenerModel(RATE)
    m.arrive("a", 1000, 100)
    assert [m.played_ms("a", t) for t in (50, 100, 600, 1100, 5000)] == [0, 0, 500, 1000, 1000]
    assert not m.drained("a", 5000)  # not ended yet: more audio may come
    m.end("a", 300)
    assert not m.drained("a", 1099) and m.drained("a", 1100)


def test_an_underrun_leaves_a_gap() -> None:
    m = ListenerModel(RATE)
    m.arrive("a", 200, 0)
    m.arrive("a", 300, 500)  # the first chunk finished at 200
    assert m.segments() == [HeardSegment("a", 0, 0, 200), HeardSegment("a", 500, 200, 300)]
    assert m.played_ms("a", 600) == 300


def test_a_second_response_is_queued_after_the_first() -> None:
    m = ListenerModel(RATE)
    m.arrive("a", 2000, 1000)
    m.end("a", 1500)
    m.arrive("b", 1000, 2000)  # "a" plays until 3000
    m.end("b", 2100)
    assert m.segments() == [HeardSegment("a", 1000, 0, 2000), HeardSegment("b", 3000, 0, 1000)]
    assert m.span("b").heard_start_ms == 3000  # type: ignore[union-attr]


def test_the_next_response_waits_for_the_current_one_to_end() -> None:
    m = ListenerModel(RATE)
    m.arrive("a", 100, 0)  # played by 100, but "a" is not done until 700
    m.arrive("b", 100, 300)
    assert m.segments() == [HeardSegment("a", 0, 0, 100)]
    assert m.active(300) == ["a", "b"]
    m.end("a", 700)
    assert m.segments()[-1] == HeardSegment("b", 700, 0, 100)


def test_a_cut_while_playing_stops_at_the_event_and_moves_the_queue_up() -> None:
    m = ListenerModel(RATE)
    m.arrive("a", 3000, 1000)
    m.end("a", 1100)
    m.arrive("b", 1000, 1200)  # queued behind "a" (until 4000)
    assert m.cut("a", 2500, by="output_audio_buffer.cleared") is True
    m.end("b", 2600)
    assert m.segments() == [HeardSegment("a", 1000, 0, 1500), HeardSegment("b", 2500, 0, 1000)]
    a = m.span("a")
    assert a is not None and a.cut == "output_audio_buffer.cleared" and a.cut_ms == 2500
    assert a.heard_ms == 1500 < a.received_ms == 3000
    assert m.drained("a", 2500)


def test_a_cut_after_playback_finished_changes_nothing() -> None:
    m = ListenerModel(RATE)
    m.arrive("a", 500, 0)
    m.end("a", 100)
    assert m.cut("a", 800, by="barge_in") is False
    span = m.span("a")
    assert span is not None and span.cut is None and span.heard_ms == 500


def test_a_cut_response_drops_later_audio_and_a_cut_before_audio_fences_it() -> None:
    m = ListenerModel(RATE)
    m.arrive("a", 500, 0)
    m.cut("a", 200, by="interrupt")
    assert m.arrive("a", 500, 300) is False
    assert m.cut("b", 300, by="interrupt") is False  # nothing of it was to be heard
    assert m.arrive("b", 100, 400) is False
    assert m.segments() == [HeardSegment("a", 0, 0, 200)]


def test_a_queued_response_cut_before_it_played_holds_nobody_back() -> None:
    m = ListenerModel(RATE)
    m.arrive("a", 1000, 0)
    m.end("a", 10)
    m.arrive("b", 500, 100)
    m.cut("b", 400, by="superseded")
    m.arrive("c", 200, 500)
    m.end("c", 600)
    # "b" never played; "c" still waits for "a" to finish at 1000, not for b's cut at 400.
    assert m.segments() == [HeardSegment("a", 0, 0, 1000), HeardSegment("c", 1000, 0, 200)]
    b = m.span("b")
    assert b is not None and b.heard_start_ms is None and b.heard_ms == 0 and b.cut == "superseded"


def test_audio_after_the_end_is_dropped() -> None:
    m = ListenerModel(RATE)
    m.arrive("a", 100, 0)
    m.end("a", 50)
    assert m.arrive("a", 100, 60) is False
    assert m.span("a").received_ms == 100  # type: ignore[union-attr]


def test_times_are_rounded_to_the_models_rate() -> None:
    m = ListenerModel(24000)
    m.arrive("a", 24000, 1234.5)
    assert m.segments()[0].start == round(1234.5 * 24)
    assert m.playing_until() == round(1234.5 * 24) + 24000


def test_the_schedule_never_rewinds() -> None:
    m = ListenerModel(RATE)
    m.arrive("a", 100, 500)
    m.arrive("b", 100, 400)  # a reading older than the last is taken as the last
    m.end("a", 450)
    assert m.segments()[0] == HeardSegment("a", 500, 0, 100)


def test_the_rate_must_be_positive() -> None:
    with pytest.raises(ValueError, match="sample_rate_hz"):
        ListenerModel(0)


_ops = st.lists(
    st.tuples(
        st.sampled_from(["arrive", "end", "cut"]),
        st.sampled_from(["a", "b", "c"]),
        st.integers(0, 400),  # time step
        st.integers(1, 600),  # samples
    ),
    max_size=40,
)


@settings(max_examples=300, deadline=None)
@given(_ops)
def test_invariants_hold_for_any_event_sequence(ops: list[tuple[str, str, int, int]]) -> None:
    m = ListenerModel(RATE)
    t = 0
    received: dict[str, int] = {}
    for op, rid, step, samples in ops:
        t += step
        if op == "arrive":
            if m.arrive(rid, samples, t):
                received[rid] = received.get(rid, 0) + samples
        elif op == "end":
            m.end(rid, t)
        else:
            m.cut(rid, t, by="x")
    segments = m.segments()
    # One thing plays at a time, in order, never before the audio arrived or after a cut.
    for before, after in itertools.pairwise(segments):
        assert before.end <= after.start
    for span in m.spans():
        heard = sum(s.samples for s in segments if s.response_id == span.response_id)
        assert span.heard_ms == heard
        assert heard <= received.get(span.response_id, 0) == span.received_ms
        if span.cut is None and heard < span.received_ms:
            # uncut audio is only missing while it waits for the one ahead
            assert not m.drained(span.response_id, t + 10_000)
        if span.cut_ms is not None and span.heard_end_ms is not None:
            assert span.heard_end_ms <= span.cut_ms
    for rid in received:
        pieces = [s for s in segments if s.response_id == rid]
        offsets = [s.offset for s in pieces]
        assert offsets == sorted(offsets)  # a response's audio plays in order


def test_heard_by_is_where_the_played_position_reaches_a_count_across_an_underrun() -> None:
    m = ListenerModel(RATE)
    m.arrive("a", 300, 1000)
    m.arrive("a", 200, 1500)  # after an underrun of 200: a gap of silence
    assert m.heard_by("a", 300) == 1300 and m.heard_by("a", 301) == 1501
    assert m.heard_by("a", 500) == 1700 and m.heard_by("a", 501) is None
    for count in (1, 150, 300, 301, 450, 500):
        at = m.heard_by("a", count)
        assert at is not None
        assert m.played_samples("a", at) == count > m.played_samples("a", at - 1)
    assert m.release_of("a") is None  # not ended: its drain is unknown
    m.end("a", 1600)
    assert m.release_of("a") == 1700
    assert m.heard_by("b", 1) is None and m.release_of("b") is None
