"""Timed sentences: split at terminal punctuation, placed by audio_text_marks or by length."""

from __future__ import annotations

import pytest

from duplex_client.eval.heard import HeardResponse
from duplex_client.eval.omni_duplexeval import split_sentences, timed_sentences


def test_split_keeps_punctuation_and_the_unfinished_rest() -> None:
    text = "The door opens. A man walks in! Then 3.5 seconds of nothing"
    assert [s for s, _a, _b in split_sentences(text)] == [
        "The door opens.",
        "A man walks in!",
        "Then 3.5 seconds of nothing",
    ]
    assert [s for s, _a, _b in split_sentences("好。走！")] == ["好。走！"]  # no space after 。


def test_marks_place_each_sentence_where_its_audio_is_heard() -> None:
    heard = [HeardResponse("r1", "Red. Blue.", 2000.0, 2600.0, None)]
    marks = {"r1": [(300, 4), (600, 10)]}
    got = [s.to_dict() for s in timed_sentences(heard, marks)]
    assert got == [
        {"sentence": "Red.", "start": 2.0, "end": 2.3},
        {"sentence": "Blue.", "start": 2.3, "end": 2.6},
    ]


def test_without_marks_sentences_share_the_heard_span_by_characters() -> None:
    heard = [HeardResponse("r1", "Ab. Cdefgh.", 1000.0, 2100.0, None)]
    first, second = timed_sentences(heard, {})
    assert (first.start, first.end) == (1.0, pytest.approx(1.3))
    assert (second.start, second.end) == (pytest.approx(1.3), pytest.approx(2.1))


def test_a_cut_answer_keeps_only_what_was_heard() -> None:
    heard = [HeardResponse("r1", "Red. Blue.", 2000.0, 2200.0, "barge_in")]
    (only,) = timed_sentences(heard, {"r1": [(300, 4), (600, 10)]})
    assert (only.sentence, only.start, only.end) == ("Red.", 2.0, 2.2)
