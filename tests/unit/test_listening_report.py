"""`ListeningReport.build`: files, turns and the fallbacks when user speech is unknown."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

from duplex_client.analysis.annotations import SpeechSegment
from duplex_client.analysis.listener import ListenerModel
from duplex_client.analysis.turns import ResponseFacts
from duplex_client.bundle.wavfile import read_wav_int16
from duplex_client.run.listening_report import ListeningReport

RATE = 24000


def build(tmp_path: Path, annotations: list[SpeechSegment] | None) -> ListeningReport:
    model = ListenerModel(RATE)
    model.arrive("a", RATE // 2, 1500)
    model.end("a", 1500)
    audio = {"a": np.full(RATE // 2, 1234, dtype="<i2").tobytes()}
    sent = np.zeros(16000 * 2, dtype=np.int16)
    return ListeningReport.build(
        tmp_path,
        sample_rate_hz=RATE,
        media_end_ms=2000,
        sent=sent,
        segments=model.segments(),
        audio=audio,
        spans=model.spans(),
        responses=[ResponseFacts("a", 1, 1400.0, 1500.0, 500.0, "hi")],
        timings=[],
        events=[],
        unit_sent_ms={1: 1390.0},
        annotations=annotations,
    )


def test_files_and_a_turn_from_annotations(tmp_path: Path) -> None:
    report = build(tmp_path, [SpeechSegment(200, 1000)])
    (turn,) = report.turns
    assert (turn.user_end_ms, turn.latency_ms, turn.server_ms) == (1000, 500, 110)
    heard = read_wav_int16(tmp_path / "heard.wav")
    assert len(heard) == 2 * RATE  # the media's length: the answer ends at 2000 ms
    assert np.flatnonzero(heard)[0] == round(1.5 * RATE)
    mix = read_wav_int16(tmp_path / "conversation.wav")
    assert mix.shape == (2 * RATE, 2) and np.array_equal(mix[:, 1], heard)
    assert report.metrics["user_end_source"] == "annotation" and not report.warnings


def test_without_onnxruntime_user_speech_is_unknown_with_one_warning(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(sys.modules, "onnxruntime", None)
    report = build(tmp_path, None)
    (turn,) = report.turns
    assert turn.user_end_source == "none" and turn.latency_ms is None
    assert report.metrics["user_end_source"] == "none"
    assert report.metrics["unanswered_turns"] is None
    (warning,) = report.warnings
    assert "duplex-client[vad]" in warning and "\n" not in warning
    assert (tmp_path / "heard.wav").exists()  # the heard track does not need VAD
