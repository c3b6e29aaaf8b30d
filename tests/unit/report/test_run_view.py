"""RunView, Envelope, read_events, RunDiff and TrackColumns: the report's pure parts."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from duplex_client.report.bundle_reader import Envelope, read_events
from duplex_client.report.diff import RunDiff
from duplex_client.report.run_view import RunView
from duplex_client.report.track_columns import TrackColumns


def append(index: int, start: int, end: int, **kw: Any) -> dict[str, Any]:
    row = {"index": index, "media_start_ms": start, "media_end_ms": end, "duration_ms": end - start,
           "unit_kind": None, "unit_index": None, "lateness_ms": 0.5, "frames": [],
           "segment": "clip", "fallback": False}  # fmt: skip
    row.update(kw)
    return row


def timeline(*appends: dict[str, Any], **kw: Any) -> dict[str, Any]:
    doc: dict[str, Any] = {"schema_version": 1, "media_origin_ms": 0, "commits": [],
                           "appends": list(appends), "reconnects": [],
                           "totals": {"sent_sha256": "ab"}}  # fmt: skip
    doc.update(kw)
    return doc


FRAME = {"role": "base", "width": 320, "height": 240, "source_pts_ms": 0}
TIMELINE = timeline(
    append(0, 0, 500),
    append(1, 500, 1000, unit_kind="OMNI", unit_index=0, frames=[FRAME, {**FRAME, "role": "c"}]),
    append(2, 1000, 1500),
    append(3, 1500, 2000, unit_kind="AUDIO", unit_index=1, fallback=True),
    append(4, 2000, 3000, unit_kind="VISION", unit_index=2, segment="tail", frames=[FRAME]),
    commits=[{"sent_offset_ms": 3005.0, "final": True}],
    reconnects=[{"started_offset_ms": 1200.0, "outcome": "resumed", "attempts": 2}],
)


def decision(unit: int, kind: str, at: float, rid: str | None = None) -> dict[str, Any]:
    return {
        "unit_index": unit,
        "decision": kind,
        "decided_ms": at,
        "reason": "r",
        "response_id": rid,
    }


def turn(
    rid: str, unit: int | None, latency: float | None, heard: float, **kw: Any
) -> dict[str, Any]:
    row = {"response_id": rid, "unit_index": unit, "latency_ms": latency, "heard_start_ms": heard,
           "heard_end_ms": heard + 400, "user_end_ms": None if latency is None else heard - latency,
           "cut": None, "server_ms": 10.0, "overlap_ms": 0.0, "gap_ms": latency,
           "transcript": f"answer {rid}"}  # fmt: skip
    row.update(kw)
    return row


def result(decisions: list[dict[str, Any]], turns: list[dict[str, Any]]) -> dict[str, Any]:
    return {"status": "ok", "ok": True, "timing": "realtime", "decisions": decisions,
            "turns": turns, "user_speech": [{"start_ms": 100.0, "end_ms": 400.0}],
            "metrics": {"user_end_source": "annotation"}}  # fmt: skip


def view(decisions: list[dict[str, Any]], turns: list[dict[str, Any]], **kw: Any) -> RunView:
    return RunView.from_documents("run", result(decisions, turns), TIMELINE, [], **kw)


def test_units_tile_the_media_clock_and_carry_their_thumbnails() -> None:
    v = view([], [], thumbnails={"0_0.jpg", "2_0.jpg"})
    assert [(u.index, u.kind, u.start_ms, u.end_ms) for u in v.units] == [
        (0, "OMNI", 0.0, 1000.0), (1, "AUDIO", 1000.0, 2000.0), (2, "VISION", 2000.0, 3000.0),
    ]  # fmt: skip
    assert [u.fallback for u in v.units] == [False, True, False]
    assert v.units[2].segment == "tail"
    # Only frames whose thumbnail exists: unit 0's composite (0_1.jpg) is missing.
    assert [[f.name for f in u.frames] for u in v.units] == [["0_0.jpg"], [], ["2_0.jpg"]]
    assert v.units[0].frames[0].width == 320 and v.sent_sha256 == "ab"
    assert [p.append_index for p in v.lateness] == [0, 1, 2, 3, 4]


def test_decisions_turns_and_markers() -> None:
    events = [
        {"media_ms": 2500.0, "type": "input_audio_buffer.committed", "event": {}},
        {"media_ms": 800.0, "type": "error",
         "event": {"error": {"code": "bad_event", "message": "m"}}},
        {"media_ms": 900.0, "type": "error", "event": {"error": "flat", "code": "unknown_session"}},
        {"media_ms": None, "type": "error", "event": {"error": "before the clock"}},
    ]  # fmt: skip
    docs = result([decision(0, "listen", 1010.0), decision(1, "speak", 2010.0, "r1"),
                   {"unit_index": 2, "decision": "cancel", "decided_ms": 1.0}],
                  [turn("r1", 1, 600.0, 2100.0)])  # fmt: skip
    v = RunView.from_documents("run", docs, TIMELINE, events)
    assert [(d.unit_index, d.decision) for d in v.decisions] == [(0, "listen"), (1, "speak")]
    assert v.turns[0].number == 1 and v.turns[0].user_end_ms == 1500.0
    assert [(m.kind, m.at_ms) for m in v.markers] == [
        ("error", 800.0), ("error", 900.0), ("reconnect", 1200.0), ("server_commit", 2500.0),
        ("commit", 3005.0),
    ]  # fmt: skip
    assert (
        v.markers[0].label == "error bad_event: m"
        and v.markers[1].label == "error unknown_session: flat"
    )
    assert v.user_speech == [(100.0, 400.0)] and v.user_speech_source == "annotation"
    assert v.duration_ms == 3000.0


def test_envelope_keeps_every_peak() -> None:
    samples = np.zeros(16000, dtype=np.int16)
    samples[1234], samples[9000] = 32767, -32768
    env = Envelope.of(samples, 16000, 100)
    assert len(env.t_ms) == 100 and max(env.high) == pytest.approx(1.0, abs=1e-3)
    assert min(env.low) == -1.0
    assert env.t_ms[0] == pytest.approx(5.0) and env.t_ms[-1] == pytest.approx(995.0)
    assert Envelope.of(np.zeros(0, dtype=np.int16), 16000, 10).t_ms == []


@given(st.lists(st.integers(-32768, 32767), min_size=1, max_size=400), st.integers(1, 50))
def test_envelope_bounds_the_signal(values: list[int], columns: int) -> None:
    samples = np.array(values, dtype=np.int16)
    env = Envelope.of(samples, 1000, columns)
    assert min(env.low) == pytest.approx(samples.min() / 32768, abs=1e-4)
    assert max(env.high) == pytest.approx(samples.max() / 32768, abs=1e-4)
    assert all(lo <= hi for lo, hi in zip(env.low, env.high, strict=True))


def test_read_events_stops_at_a_torn_line(tmp_path: Path) -> None:
    path = tmp_path / "events.jsonl"
    path.write_bytes(b'{"type": "a"}\n{"type": "b"}\n{"type": "c", "ev')
    events, warning = read_events(path)
    assert [e["type"] for e in events] == ["a", "b"]
    assert warning is not None and "drawn up to line 2" in warning
    path.write_bytes(b'{"type": "a"}\n')
    assert read_events(path) == ([{"type": "a"}], None)
    assert "missing" in (read_events(tmp_path / "none.jsonl")[1] or "")


def test_the_diff_finds_each_kind_of_difference() -> None:
    a = view(
        [decision(0, "listen", 1000), decision(1, "speak", 2000), decision(2, "speak", 3000)],
        [turn("a1", 1, 500.0, 2100), turn("a2", 2, 300.0, 3100), turn("a3", None, 200.0, 500)],
    )
    b = view(
        [decision(0, "speak", 1000), decision(1, "speak", 2000), decision(2, "listen", 3000)],
        [turn("b0", 0, 100.0, 1100), turn("b1", 1, 601.0, 2200), turn("b3", None, 250.0, 550)],
    )
    diff = RunDiff.of(a, b)  # fmt: skip
    kinds = [(d.kind, d.unit_index) for d in diff.differences]
    assert sorted(kinds, key=str) == sorted(
        [("decision", 0), ("decision", 2), ("latency", 1), ("only_in_b", 0), ("only_in_a", 2)],
        key=str,
    )
    assert diff.differing_units == {0, 2}
    assert diff.moved_a == {1} and diff.moved_b == {2} and diff.only_a == {"a2"}
    assert diff.only_b == {"b0"}
    # Sorted on the media clock.
    assert [d.at_ms for d in diff.differences] == sorted(d.at_ms for d in diff.differences)
    # The unit-less answers paired in order: 50 ms apart is not a move.
    assert all(d.unit_index is not None for d in diff.differences)


def test_a_move_of_exactly_the_threshold_is_not_a_difference() -> None:
    a = view([], [turn("a", 1, 500.0, 2000)])
    b = view([], [turn("b", 1, 600.0, 2100)])
    assert RunDiff.of(a, b).differences == []
    assert [d.kind for d in RunDiff.of(a, b, threshold_ms=99.0).differences] == ["latency"]


def test_track_columns_mark_the_differences() -> None:
    v = view([decision(0, "listen", 1010.0)], [turn("r1", 1, 600.0, 2100.0, cut="interrupted")])
    cols = TrackColumns(v)
    units = cols.units(differing={1})
    assert units["line_width"] == [1, 3, 1] and units["hatch"] == [" ", "/", " "]
    answers = cols.answers(differing={"r1"})
    assert answers["line_width"] == [4] and answers["end_ms"] == [2500.0]
    assert cols.cuts() == {"at_ms": [2500.0], "cut": ["interrupted"]}
    latency = cols.latency(moved={1})
    assert latency["start_ms"] == [1500.0] and latency["end_ms"] == [2100.0]
    assert latency["colour"] != TrackColumns(v).latency()["colour"]
    assert cols.decisions()["marker"] == ["circle"]


def test_an_answer_heard_at_the_first_sample_still_gets_its_latency_bar() -> None:
    v = view([], [turn("r0", 0, 0.0, 0.0)])
    assert TrackColumns(v).latency()["number"] == [1]
