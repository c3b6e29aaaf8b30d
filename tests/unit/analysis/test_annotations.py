"""Annotation files as user-speech segments: our shape, Full-Duplex-Bench's, and every error."""

from __future__ import annotations

import itertools
import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from duplex_client.analysis.annotations import (
    RANGE_TOLERANCE_MS,
    AnnotationError,
    SpeechSegment,
    check_range,
    load_annotations,
    merge_segments,
    parse_annotations,
    user_end_before,
)


def _write(tmp_path: Path, name: str, obj: Any) -> Path:
    path = tmp_path / name
    path.write_text(json.dumps(obj, indent=4), encoding="utf-8")
    return path


def _close(segments: list[SpeechSegment], expected: list[tuple[float, float]]) -> None:
    assert len(segments) == len(expected), segments
    for seg, (start, end) in zip(segments, expected, strict=True):
        assert seg.start_ms == pytest.approx(start)
        assert seg.end_ms == pytest.approx(end)


# --- accepted shapes -------------------------------------------------------------------------


def test_our_own_shape_is_read_in_ms(tmp_path: Path) -> None:
    path = _write(
        tmp_path,
        "speech.json",
        [{"start_ms": 1200, "end_ms": 2500.5, "text": "ignored"}, {"start_ms": 0, "end_ms": 800}],
    )
    assert load_annotations(path) == [SpeechSegment(0, 800), SpeechSegment(1200, 2500.5)]


def test_an_empty_list_means_no_speech(tmp_path: Path) -> None:
    assert load_annotations(_write(tmp_path, "none.json", [])) == []


def test_fdb_turn_taking_marks_the_end_of_the_users_turn(tmp_path: Path) -> None:
    # FDB's eval_smooth_turn_taking reads timestamp[0] as the user's turn end.
    obj = [{"text": "[TURN-TAKING]", "timestamp": [3.2500000000000018, 3.61]}]
    _close(load_annotations(_write(tmp_path, "turn_taking.json", obj)), [(3250, 3250)])


def test_fdb_pause_marks_where_speech_stopped_before_the_pause(tmp_path: Path) -> None:
    obj = [
        {"text": "[PAUSE]", "timestamp": [5.5, 6.25]},
        {"text": "[PAUSE]", "timestamp": [1.75, 2.5]},
    ]
    _close(load_annotations(_write(tmp_path, "pause.json", obj)), [(1750, 1750), (5500, 5500)])


def test_fdb_interrupt_is_the_span_of_the_users_interruption(tmp_path: Path) -> None:
    obj = [
        {
            "context": "Tell me about the history of tea.",
            "interrupt": "Wait, what about coffee instead?",
            "timestamp": [9.875, 12.0625],
        }
    ]
    _close(load_annotations(_write(tmp_path, "interrupt.json", obj)), [(9875, 12062.5)])


def test_fdb_v15_metadata_is_the_overlap_event_span(tmp_path: Path) -> None:
    obj = {
        "context_text": "Which museums are open on Sunday?",
        "current_turn_text": "Sorry, and is there one with dinosaurs?",
        "timestamps": [6.5, 9.125],
    }
    _close(load_annotations(_write(tmp_path, "metadata.json", obj)), [(6500, 9125)])


def _words(*spans: tuple[str, float, float]) -> list[dict[str, Any]]:
    return [{"text": w, "timestamp": [s, e]} for w, s, e in spans]


TRANSCRIPTION = [
    {"speaker": 0, "item": _words(("Sure", 2.5, 2.75), ("thing", 2.75, 3.0))},
    {
        "speaker": 1,
        "item": _words(
            ("Have", 0.25, 0.5), ("you", 0.5, 0.625), ("been", 0.625, 1.0), ("here", 1.5, 2.0)
        ),
    },
]


def test_fdb_transcription_merges_one_speakers_touching_words(tmp_path: Path) -> None:
    path = _write(tmp_path, "transcription.json", TRANSCRIPTION)
    _close(load_annotations(path, speaker=1), [(250, 1000), (1500, 2000)])
    _close(load_annotations(path, speaker=0), [(2500, 3000)])


def test_fdb_transcription_of_one_speaker_needs_no_choice() -> None:
    _close(parse_annotations(TRANSCRIPTION[1:]), [(250, 1000), (1500, 2000)])


def test_fdb_transcription_of_two_speakers_asks_which_is_the_user(tmp_path: Path) -> None:
    path = _write(tmp_path, "transcription.json", TRANSCRIPTION)
    with pytest.raises(AnnotationError, match=r"speakers 0, 1; choose the user's with speaker="):
        load_annotations(path)
    with pytest.raises(AnnotationError, match=r"no speaker 7 \(found 0, 1\)"):
        load_annotations(path, speaker=7)


def test_sorting_and_merging_overlaps_and_touching_segments() -> None:
    obj = [
        {"start_ms": 5000, "end_ms": 6000},
        {"start_ms": 100, "end_ms": 900},
        {"start_ms": 800, "end_ms": 1200},  # overlaps the previous
        {"start_ms": 1200, "end_ms": 1500},  # touches it
        {"start_ms": 300, "end_ms": 400},  # inside the first
        {"start_ms": 2000, "end_ms": 2000},  # a marker on its own
        {"start_ms": 5500, "end_ms": 5500},  # a marker inside a segment
    ]
    assert parse_annotations(obj) == [
        SpeechSegment(100, 1500),
        SpeechSegment(2000, 2000),
        SpeechSegment(5000, 6000),
    ]


_spans = st.lists(
    st.tuples(st.integers(0, 10_000), st.integers(0, 2_000)).map(lambda p: (p[0], p[0] + p[1])),
    max_size=30,
)


@given(_spans)
def test_merging_keeps_the_covered_time_and_leaves_sorted_disjoint_segments(
    spans: list[tuple[int, int]],
) -> None:
    merged = merge_segments(SpeechSegment(s, e) for s, e in spans)
    for a, b in itertools.pairwise(merged):
        assert a.end_ms < b.start_ms
    covered = {t for s, e in spans for t in range(s, e)}
    assert {t for m in merged for t in range(int(m.start_ms), int(m.end_ms))} == covered
    for s, e in spans:  # every input span (markers too) lies inside one merged segment
        assert any(m.start_ms <= s and e <= m.end_ms for m in merged)


# --- errors ----------------------------------------------------------------------------------


def test_a_missing_file_is_named(tmp_path: Path) -> None:
    path = tmp_path / "nope.json"
    with pytest.raises(AnnotationError, match=r"nope\.json: no such annotation file$"):
        load_annotations(path)


def test_a_directory_is_not_a_file(tmp_path: Path) -> None:
    with pytest.raises(AnnotationError, match=r": not a file$"):
        load_annotations(tmp_path)


def test_not_json_gives_the_position(tmp_path: Path) -> None:
    path = tmp_path / "bad.json"
    path.write_text('[{"start_ms": 1,\n oops}]', encoding="utf-8")
    with pytest.raises(AnnotationError, match=r"bad\.json: not JSON \(.* at line 2 column 2\)$"):
        load_annotations(path)


def test_not_utf8_is_reported(tmp_path: Path) -> None:
    path = tmp_path / "latin.json"
    path.write_bytes(b'[{"text": "caf\xe9"}]')
    with pytest.raises(AnnotationError, match=r"latin\.json: not UTF-8 text$"):
        load_annotations(path)


@pytest.mark.parametrize(
    ("obj", "message"),
    [
        ("speech", r"expected a JSON list or an FDB v1.5 metadata object, got str"),
        (42, r"got int"),
        ({"start_ms": 1, "end_ms": 2}, r"an object without 'timestamps' is not FDB v1.5 metadata"),
        ([[1, 2]], r"unknown annotation shape \(first item \[1, 2\]\)"),
        ([{"begin": 1}], r"unknown annotation shape"),
        ([{"start_ms": 1, "end_ms": 2}, "x"], r"segment 1 is not an object"),
        ([{"text": "[PAUSE]", "timestamp": [1, 2]}, 3], r"item 1 is not an object"),
        ([{"text": "hello", "timestamp": [1, 2]}], r"not a turn-taking, pause or interrupt"),
        ([{"text": "[PAUSE]", "timestamp": [1]}], r"'timestamp' must be \[start, end\]"),
        ([{"text": "[PAUSE]", "timestamp": "1-2"}], r"'timestamp' must be \[start, end\]"),
        ([{"text": "[PAUSE]"}], r"item 0: 'timestamp' is missing"),
        ([{"text": "[PAUSE]", "timestamp": [1, 2]}, {"text": "[PAUSE]"}], r"item 1: 'timestamp'"),
        ([{"interrupt": "stop", "context": "go on"}], r"item 0: 'timestamp' is missing"),
        ({"timestamps": None}, r"metadata: 'timestamps' is missing"),
        ([{"speaker": 0, "item": 5}], r"entry 0 is not a \{speaker, item: \[...\]\} object"),
        ([{"speaker": 0, "item": ["w"]}], r"word 0 is not an object"),
    ],
)
def test_wrong_shapes_are_one_line_errors(obj: Any, message: str) -> None:
    with pytest.raises(AnnotationError, match=message) as info:
        parse_annotations(obj, source="ann.json")
    assert str(info.value).startswith("ann.json: ")
    assert "\n" not in str(info.value)


@pytest.mark.parametrize(
    ("segment", "message"),
    [
        ({"end_ms": 5}, r"segment 0: start_ms is missing"),
        ({"start_ms": 5}, r"segment 0: end_ms is missing"),
        ({"start_ms": "5", "end_ms": 6}, r"start_ms is not a number \('5'\)"),
        ({"start_ms": True, "end_ms": 6}, r"start_ms is not a number \(True\)"),
        ({"start_ms": 1, "end_ms": float("nan")}, r"end_ms is not finite \(nan\)"),
        ({"start_ms": 1, "end_ms": float("inf")}, r"end_ms is not finite \(inf\)"),
        ({"start_ms": -1, "end_ms": 6}, r"start_ms is negative \(-1.0\)"),
        ({"start_ms": 200, "end_ms": 100}, r"segment 0: end 100 ms is before start 200 ms"),
    ],
)
def test_invalid_times_in_our_shape(segment: dict[str, Any], message: str) -> None:
    with pytest.raises(AnnotationError, match=message):
        parse_annotations([segment], source="ann.json")


@pytest.mark.parametrize(
    ("timestamp", "message"),
    [
        ([None, 2.0], r"item 0: timestamp\[0\] is missing"),
        ([1.0, "2"], r"timestamp\[1\] is not a number"),
        ([-0.5, 2.0], r"timestamp\[0\] is negative"),
        ([3.0, 2.0], r"item 0: end 2 s is before start 3 s"),
    ],
)
def test_invalid_times_in_fdb_shapes(timestamp: list[Any], message: str) -> None:
    with pytest.raises(AnnotationError, match=message):
        parse_annotations([{"text": "[TURN-TAKING]", "timestamp": timestamp}])
    with pytest.raises(AnnotationError, match=message.replace("item 0", "word 0")):
        parse_annotations([{"speaker": 0, "item": [{"text": "w", "timestamp": timestamp}]}])


def test_nan_literals_in_a_file_are_rejected(tmp_path: Path) -> None:
    path = tmp_path / "nan.json"
    path.write_text('[{"start_ms": NaN, "end_ms": 1}]', encoding="utf-8")
    with pytest.raises(AnnotationError, match=r"nan\.json: segment 0: start_ms is not finite"):
        load_annotations(path)


def test_metadata_with_end_before_start() -> None:
    with pytest.raises(AnnotationError, match=r"meta: metadata: end 1 s is before start 2 s"):
        parse_annotations({"timestamps": [2, 1]}, source="meta")


# --- range against the media -----------------------------------------------------------------


def test_segments_inside_the_media_pass() -> None:
    check_range([SpeechSegment(0, 500), SpeechSegment(900, 1000)], 1000)
    check_range([SpeechSegment(1000, 1000)], 1000)  # an end marker right at the end
    check_range([SpeechSegment(900, 1000 + RANGE_TOLERANCE_MS)], 1000)  # rounding slack


def test_a_segment_starting_after_the_media_ends_is_an_error() -> None:
    with pytest.raises(
        AnnotationError, match=r"^a\.json: segment 1 starts at 1000\.5 ms, after the media ends"
    ):
        check_range([SpeechSegment(0, 10), SpeechSegment(1000.5, 1200)], 1000, source="a.json")


def test_a_segment_ending_beyond_the_tolerance_is_an_error() -> None:
    end = 1000 + RANGE_TOLERANCE_MS + 1
    with pytest.raises(AnnotationError, match=r"segment 0 ends at .* after the media ends"):
        check_range([SpeechSegment(900, end)], 1000)
    check_range([SpeechSegment(900, end)], 1000, tolerance_ms=RANGE_TOLERANCE_MS + 1)


@pytest.mark.parametrize("media_ms", [float("nan"), -1.0, float("inf")])
def test_check_range_wants_a_real_media_length(media_ms: float) -> None:
    with pytest.raises(ValueError, match="media_ms"):
        check_range([], media_ms)


# --- choosing a response's user end ----------------------------------------------------------

SEGMENTS = [SpeechSegment(100, 900), SpeechSegment(1500, 2400), SpeechSegment(3000, 3000)]


def test_no_segment_ended_yet() -> None:
    assert user_end_before(SEGMENTS, 899.9) is None
    assert user_end_before([], 10_000) is None


def test_a_segment_ending_exactly_at_t_counts() -> None:
    assert user_end_before(SEGMENTS, 900) == 900
    assert user_end_before(SEGMENTS, 3000) == 3000  # a zero-length end marker


def test_the_latest_of_several_ended_segments_is_chosen() -> None:
    assert user_end_before(SEGMENTS, 2000) == 900  # the second segment is still going on
    assert user_end_before(SEGMENTS, 2400.5) == 2400
    assert user_end_before(list(reversed(SEGMENTS)), 5000) == 3000  # order does not matter


def test_nan_time_is_refused() -> None:
    with pytest.raises(ValueError, match="NaN"):
        user_end_before(SEGMENTS, float("nan"))
