"""Turn rows and run metrics from hand-made spans, segments and user speech."""

from __future__ import annotations

import pytest

from duplex_client.analysis.annotations import SpeechSegment
from duplex_client.analysis.listener import HeardSegment, HeardSpan, ListenerModel
from duplex_client.analysis.turns import ResponseFacts, TurnMetrics, build_turns, summarize

RATE = 1000


def facts(rid: str, unit: int | None, decided: float, first: float) -> ResponseFacts:
    return ResponseFacts(rid, unit, decided, first, received_ms=500.0, transcript=f"{rid} said")


def span(rid: str, start: float | None, heard: float, cut: str | None = None) -> HeardSpan:
    end = None if start is None else start + heard
    return HeardSpan(rid, start, start, end, heard, 500.0, cut, None)


USER = [SpeechSegment(0, 1000), SpeechSegment(3000, 4000)]


def test_each_response_answers_the_last_speech_that_ended_before_its_decision() -> None:
    turns = build_turns(
        [facts("a", 1, 1200, 1210), facts("b", 3, 3500, 3510), facts("c", 4, 4600, 4605)],
        {"a": span("a", 1300, 500), "b": span("b", 3600, 300, "barge_in"), "c": span("c", 4700, 0)},
        USER,
        "annotation",
        {1: 1190.0, 3: 3490.0},
    )
    a, b, c = turns
    assert (a.user_end_ms, a.latency_ms, a.server_ms) == (1000, 300, 20)
    # "b" was decided while the user still spoke its second turn: it answers the first
    assert (b.user_end_ms, b.latency_ms, b.cut) == (1000, 2600, "barge_in")
    assert (c.user_end_ms, c.latency_ms, c.server_ms) == (4000, 700, None)  # unit 4 unsent
    assert all(t.user_end_source == "annotation" for t in turns)
    assert a.to_dict()["transcript"] == "a said"


def test_a_model_that_starts_before_the_user_stops_has_negative_latency() -> None:
    (t,) = build_turns([facts("a", 0, 1100, 1100)], {"a": span("a", 900, 200)}, USER, "vad", {})
    assert t.user_end_ms == 1000 and t.latency_ms == -100 and t.user_end_source == "vad"


def test_without_user_speech_there_is_no_latency_and_nothing_is_made_up() -> None:
    (t,) = build_turns([facts("a", 0, 1100, 1100)], {"a": span("a", 1200, 100)}, [], "none", {})
    assert (t.user_end_ms, t.latency_ms, t.user_end_source) == (None, None, "none")
    (unheard,) = build_turns([facts("a", 0, 1100, None)], {}, USER, "vad", {0: 900.0})
    assert unheard.heard_start_ms is None and unheard.latency_ms is None
    assert unheard.heard_ms == 0 and unheard.server_ms is None


def test_metrics_overlap_gap_and_unanswered_turns() -> None:
    model = ListenerModel(RATE)
    model.arrive("a", 500, 800)  # heard 800..1300: 200 ms over the user's first turn
    model.end("a", 800)
    model.arrive("b", 400, 4400)  # heard 4400..4800: 400 ms after the second turn
    model.end("b", 4400)
    spans = {s.response_id: s for s in model.spans()}
    turns = build_turns(
        [facts("a", 0, 1050, 800), facts("b", 3, 4100, 4400)], spans, USER, "annotation", {}
    )
    metrics = TurnMetrics(turns, model.segments(), RATE, USER, "annotation")
    a, b = turns
    assert metrics.overlap_ms(a) == 200 and metrics.overlap_ms(b) == 0
    assert metrics.gap_ms(a) == 0.0  # it started before the user stopped
    assert metrics.gap_ms(b) == 400.0
    doc = metrics.to_dict()
    assert doc["latency_ms"] == {"count": 2, "p50": 100.0, "p95": 370.0, "max": 400.0}
    assert doc["overlap_ms"]["max"] == 200 and doc["unanswered_turns"] == 0
    assert doc["user_speech_segments"] == 2 and doc["turns"] == 2
    measured = metrics.measured_turns()  # the same figures, per turn row
    assert [(t.overlap_ms, t.gap_ms) for t in measured] == [(200.0, 0.0), (0.0, 400.0)]
    assert [t.to_dict()["overlap_ms"] for t in measured] == [200.0, 0.0]


def test_a_gap_filled_by_an_earlier_answer_is_not_silence() -> None:
    model = ListenerModel(RATE)
    model.arrive("a", 1500, 500)  # plays 500..2000, over the user's end at 1000
    model.end("a", 500)
    model.arrive("b", 500, 2500)
    model.end("b", 2500)
    user = [SpeechSegment(0, 1000)]
    turns = build_turns(
        [facts("a", 0, 500, 500), facts("b", 2, 2400, 2500)],
        {s.response_id: s for s in model.spans()},
        user,
        "vad",
        {},
    )
    metrics = TurnMetrics(turns, model.segments(), RATE, user, "vad")
    assert metrics.gap_ms(turns[1]) == 500.0  # 1000..2500 minus a's 1000..2000


def test_unanswered_counts_user_turns_no_heard_answer_followed() -> None:
    user = [SpeechSegment(0, 1000), SpeechSegment(2000, 2500), SpeechSegment(5000, 6000)]
    turns = build_turns(
        [facts("a", 0, 1100, 1100), facts("b", 2, 2600, None)],
        {"a": span("a", 1200, 100)},
        user,
        "annotation",
        {},
    )
    metrics = TurnMetrics(turns, [], RATE, user, "annotation")
    assert metrics.unanswered() == 2  # b was never heard; nobody answered the third turn
    assert TurnMetrics(turns, [], RATE, [], "none").unanswered() is None


@pytest.mark.parametrize(
    ("values", "expected"),
    [
        ([], {"count": 0, "p50": None, "p95": None, "max": None}),
        ([5.0], {"count": 1, "p50": 5.0, "p95": 5.0, "max": 5.0}),
        ([1.0, 2.0, 3.0, 4.0], {"count": 4, "p50": 2.5, "p95": 3.85, "max": 4.0}),
    ],
)
def test_summarize(values: list[float], expected: dict[str, float | None]) -> None:
    assert summarize(values) == expected


def test_heard_segments_carry_their_response() -> None:
    seg = HeardSegment("a", 10, 0, 5)
    assert seg.end == 15


def test_a_short_pause_does_not_split_a_user_turn() -> None:
    """Speech 0–1000 and 1300–2000 is one user turn: answered once, measured from 2000."""
    user = [SpeechSegment(0, 1000), SpeechSegment(1300, 2000), SpeechSegment(4000, 4500)]
    turns = build_turns(
        [facts("a", 1, 2100, 2150), facts("b", 2, 2900, 2950)],
        {"a": span("a", 2400, 300), "b": span("b", 3000, 200)},
        user,
        "vad",
        {},
    )
    metrics = TurnMetrics(turns, [], RATE, user, "vad")
    assert metrics.user_turns() == [(0, 2000), (4000, 4500)]
    # both responses answer the first turn; the first heard one counts as its answer
    assert metrics.first_answers() == [((0, 2000), 2400), ((4000, 4500), None)]
    doc = metrics.to_dict()
    assert doc["first_answer_latency_ms"] == {"count": 1, "p50": 400.0, "p95": 400.0, "max": 400.0}
    assert doc["latency_ms"]["count"] == 2 and doc["latency_ms"]["max"] == 1000.0
    assert doc["unanswered_turns"] == 1 and doc["user_turns"] == 2
    assert doc["user_speech_segments"] == 3


def test_the_headline_is_the_first_answer_and_a_queued_second_answer_is_a_follow_up() -> None:
    """One question (ends at 1000 ms) answered at 1900 ms, then again, queued, at 6200 ms."""
    user = [SpeechSegment(0, 1000)]
    turns = build_turns(
        [facts("a", 1, 1800, 1850), facts("b", 2, 2900, 2950)],
        {"a": span("a", 1900, 300), "b": span("b", 6200, 300)},
        user,
        "annotation",
        {},
    )
    doc = TurnMetrics(turns, [], RATE, user, "annotation").to_dict()
    assert doc["first_answer_latency_ms"] == {"count": 1, "p50": 900.0, "p95": 900.0, "max": 900.0}
    assert doc["follow_up_latency_ms"] == {
        "count": 1, "p50": 5200.0, "p95": 5200.0, "max": 5200.0
    }  # fmt: skip
    assert doc["latency_ms"]["p50"] == 3050.0  # every answer pooled: not the headline
    assert doc["unanswered_turns"] == 0


def test_without_a_speaker_latency_counts_to_the_first_audio_received() -> None:
    """Nothing played (live without a speaker): no heard span, the latency ends at arrival."""
    user = [SpeechSegment(0, 1000)]
    (t,) = build_turns([facts("a", 1, 1800, 1850)], {}, user, "vad", {}, played=False)
    assert t.heard_start_ms is None and t.heard_ms == 0 and t.latency_ms == 850
    doc = TurnMetrics([t], [], RATE, user, "vad", played=False).to_dict()
    assert doc["latency_to"] == "first_audio" and doc["unanswered_turns"] == 0
    assert doc["first_answer_latency_ms"]["p50"] == doc["latency_ms"]["p50"] == 850
    heard = TurnMetrics([t], [], RATE, user, "vad").to_dict()  # played, but never heard
    assert heard["latency_to"] == "heard" and heard["first_answer_latency_ms"]["count"] == 0
