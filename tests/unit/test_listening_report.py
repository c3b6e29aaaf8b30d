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
from duplex_client.run.listening_report import ListeningReport, SentAudio

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


def test_sent_audio_places_each_append_at_its_media_start_in_order_or_not(
    tmp_path: Path,
) -> None:
    from duplex_client.framing.plan import PlannedAppend

    def append(start_ms: int, ms: int, value: int) -> PlannedAppend:
        n = 16 * ms
        return PlannedAppend(
            segment="clip", pcm=np.full(n, value, dtype="<i2").tobytes(),
            audio_start_samples=16 * start_ms, audio_end_samples=16 * start_ms + n,
            duration_ms=ms, audio_end_ms=start_ms + ms, is_speech=None, frames=None,
            unit_kind=None, unit_index=None, media_start_ms=start_ms, media_end_ms=start_ms + ms,
        )  # fmt: skip

    sent = SentAudio(tmp_path / "sent.pcm")
    for start_ms, value in ((0, 1), (200, 2), (600, 4), (400, 3)):  # a gap, then filled late
        sent.record(append(start_ms, 200, value))
    sent.record(append(1000, 200, 6))  # after a gap left silent
    got = sent.read()
    want = np.repeat(np.array([1, 2, 3, 4, 0, 6], dtype=np.int16), 16 * 200)
    assert np.array_equal(got, want)
    sent.record(append(1200, 100, 7))  # recording on after a read
    assert np.array_equal(sent.read()[-1600:], np.full(1600, 7, dtype=np.int16))
    sent.discard()
