"""User-speech segments from Silero VAD: real eSpeak NG speech at known offsets in silence."""

from __future__ import annotations

import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

import numpy as np
import pytest
from numpy.typing import NDArray

from duplex_client.analysis.annotations import SpeechSegment
from duplex_client.media.speech import (
    DEFAULT_MIN_SILENCE_MS,
    VadUnavailable,
    detect_speech,
    segments_from_probabilities,
)
from duplex_client.media.vad import WINDOW_MS

RATE = 16000
#: |sample| above this (PCM16, about -54 dBFS) is audible speech; eSpeak pads with silence.
AUDIBLE = 64
END_TOLERANCE_MS = 60
START_TOLERANCE_MS = 100


@dataclass(frozen=True)
class Spoken:
    """A signal and the true speech spans in it (ms), measured from the synthesised PCM."""

    pcm: NDArray[np.int16]
    spans: list[tuple[float, float]]


@pytest.fixture(scope="module")
def speech_tools() -> None:
    """Skip unless onnxruntime, eSpeak NG and PyAV (its resampler) are installed."""
    for module in ("onnxruntime", "espeakng_loader", "av"):
        pytest.importorskip(module, reason="needs the vad and server extras")


def _phrase(text: str) -> NDArray[np.int16]:
    from duplex_client.server.engine.tts import synthesize

    return synthesize(text, RATE).samples


def _compose(*parts: float | str) -> Spoken:
    """Seconds of silence (numbers) and spoken phrases (strings), in order."""
    pieces: list[NDArray[np.int16]] = []
    spans: list[tuple[float, float]] = []
    at = 0
    for part in parts:
        if isinstance(part, str):
            samples = _phrase(part)
            audible = np.flatnonzero(np.abs(samples.astype(np.int32)) > AUDIBLE)
            spans.append(((at + audible[0]) * 1000 / RATE, (at + audible[-1] + 1) * 1000 / RATE))
        else:
            samples = np.zeros(round(part * RATE), np.int16)
        pieces.append(samples)
        at += len(samples)
    return Spoken(np.concatenate(pieces), spans)


@pytest.fixture(scope="module")
def two_phrases(speech_tools: None) -> Spoken:
    """1.0 s silence, a phrase, 1.5 s silence, another phrase, 1.0 s silence."""
    return _compose(1.0, "please tell me the color you see", 1.5, "what do you see now", 1.0)


def _assert_found(found: list[SpeechSegment], spoken: Spoken) -> None:
    assert len(found) == len(spoken.spans), found
    for seg, (start, end) in zip(found, spoken.spans, strict=True):
        assert abs(seg.end_ms - end) <= END_TOLERANCE_MS, (seg, end)
        assert abs(seg.start_ms - start) <= START_TOLERANCE_MS, (seg, start)


def test_two_phrases_in_silence_give_two_segments_ending_where_speech_ends(
    two_phrases: Spoken,
) -> None:
    _assert_found(detect_speech(two_phrases.pcm.tobytes()), two_phrases)


@pytest.mark.parametrize(
    ("first", "gap_s", "second"),
    [
        ("hello there", 1.2, "how is the weather today"),
        ("I would like a coffee please", 0.8, "one two three four five"),
    ],
)
def test_other_phrases_and_offsets(
    speech_tools: None, first: str, gap_s: float, second: str
) -> None:
    spoken = _compose(0.7, first, gap_s, second, 0.5)
    _assert_found(detect_speech(spoken.pcm), spoken)


def test_speech_running_to_the_end_of_the_signal_ends_at_its_end(speech_tools: None) -> None:
    spoken = _compose(0.5, "tell me what color you see")
    cut = spoken.pcm[: len(spoken.pcm) - RATE // 4]  # stop mid-speech, off the window grid
    found = detect_speech(cut)
    assert len(found) == 1
    assert found[0].end_ms == len(cut) * 1000 / RATE


def test_bytes_int16_and_float_input_agree(two_phrases: Spoken) -> None:
    floats = two_phrases.pcm.astype(np.float32) / 32768
    as_bytes = detect_speech(two_phrases.pcm.astype("<i2").tobytes())
    assert detect_speech(two_phrases.pcm) == as_bytes
    assert detect_speech(floats) == as_bytes


def test_silence_alone_has_no_speech(speech_tools: None) -> None:
    assert detect_speech(bytes(2 * 3 * RATE)) == []
    assert detect_speech(b"") == []


@pytest.mark.parametrize("level", [0.003, 0.01, 0.05])
def test_low_white_noise_has_no_speech(speech_tools: None, level: float) -> None:
    rng = np.random.default_rng(11)
    noise = np.clip(rng.standard_normal(4 * RATE) * level * 32768, -32768, 32767)
    assert detect_speech(noise.astype(np.int16)) == []


def _window_by_window(samples: NDArray[np.float32]) -> NDArray[np.float32]:
    """The one-window-a-call model's probabilities, the last partial window zero-padded."""
    from duplex_client.media.vad import WINDOW_SAMPLES, VadStream

    tail = np.zeros(-len(samples) % WINDOW_SAMPLES, dtype=np.float32)
    return VadStream().push(np.concatenate([samples, tail]))


def test_the_whole_signal_export_scores_as_the_window_by_window_model(two_phrases: Spoken) -> None:
    from duplex_client.media.vad import SEQUENCE_BLOCK_WINDOWS, shared_sequence_model

    speech = two_phrases.pcm.astype(np.float32) / 32768
    rng = np.random.default_rng(5)
    # Longer than one block of the export: the LSTM state crosses the block boundary.
    long = np.concatenate([speech] * 4 + [rng.normal(0, 0.05, RATE).astype(np.float32)])
    assert len(long) > SEQUENCE_BLOCK_WINDOWS * 512 and len(long) % 512
    for samples in (speech, long, speech[:700], speech[:512]):
        found = shared_sequence_model().probabilities(samples)
        expected = _window_by_window(samples)
        assert found.dtype == np.float32 and len(found) == len(expected)
        assert np.array_equal(found, expected)  # bit for bit, not close
    scores = shared_sequence_model().probabilities(speech)
    assert float(scores.max()) >= 0.5 > float(scores.min())  # real speech, and silence
    assert len(shared_sequence_model().probabilities(np.zeros(0, np.float32))) == 0


def test_calls_from_several_threads_agree(two_phrases: Spoken) -> None:
    alone = detect_speech(two_phrases.pcm)
    with ThreadPoolExecutor(max_workers=4) as pool:
        results = list(pool.map(detect_speech, [two_phrases.pcm] * 4))
    assert all(r == alone for r in results)


def test_missing_onnxruntime_raises_vad_unavailable(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "onnxruntime", None)  # `import onnxruntime` now fails
    with pytest.raises(VadUnavailable, match=r"^Silero VAD needs onnxruntime: install "):
        detect_speech(bytes(2 * RATE))
    assert issubclass(VadUnavailable, RuntimeError)
    with pytest.raises(VadUnavailable, match=r"duplex-client\[vad\]$"):
        detect_speech(np.zeros(RATE, np.int16))


def test_importing_the_module_does_not_load_onnxruntime() -> None:
    code = "import sys, duplex_client.media.speech; print('onnxruntime' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


@pytest.mark.parametrize(
    "pcm",
    [b"\x00\x01\x02", np.zeros((2, 100), np.int16), np.zeros(100, np.int32)],
    ids=["odd-bytes", "stereo", "int32"],
)
def test_bad_input_is_refused_before_the_model_loads(pcm: object) -> None:
    with pytest.raises(ValueError):
        detect_speech(pcm)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    "kwargs",
    [{"threshold": 0.0}, {"threshold": 1.0}, {"min_speech_ms": -1}, {"min_silence_ms": np.nan}],
)
def test_bad_parameters_are_refused(kwargs: dict[str, float]) -> None:
    with pytest.raises(ValueError):
        detect_speech(b"", **kwargs)


# --- the segmentation over window scores, without the model -----------------------------------


def _w(n: int) -> float:
    return float(n * WINDOW_MS)


def test_a_segment_spans_its_speech_windows_only() -> None:
    probs = [0.1] * 3 + [0.9] * 5 + [0.2] * 20
    assert segments_from_probabilities(probs) == [SpeechSegment(_w(3), _w(8))]


def test_pauses_shorter_than_the_hangover_do_not_split() -> None:
    short = DEFAULT_MIN_SILENCE_MS // WINDOW_MS  # whole windows, still under the hangover
    long = -(-DEFAULT_MIN_SILENCE_MS // WINDOW_MS)  # at least the hangover
    probs = [0.9] * 4 + [0.0] * short + [0.9] * 4 + [0.0] * long + [0.9] * 4
    first_end = 8 + short
    assert segments_from_probabilities(probs) == [
        SpeechSegment(0.0, _w(first_end)),
        SpeechSegment(_w(first_end + long), _w(first_end + long + 4)),
    ]


def test_blips_shorter_than_min_speech_are_dropped() -> None:
    probs = [0.0] * 20 + [0.95] * 2 + [0.0] * 20 + [0.8] * 3 + [0.0] * 20
    assert segments_from_probabilities(probs, min_speech_ms=3 * WINDOW_MS) == [
        SpeechSegment(_w(42), _w(45))
    ]


def test_threshold_is_inclusive_and_the_end_is_clamped_to_the_media() -> None:
    probs = [0.0, 0.5, 0.5, 0.5, 0.49]
    assert segments_from_probabilities(probs, min_speech_ms=0) == [SpeechSegment(_w(1), _w(4))]
    found = segments_from_probabilities([0.0, 0.9, 0.9, 0.9], min_speech_ms=0, media_ms=_w(3) + 5)
    assert found == [SpeechSegment(_w(1), _w(3) + 5)]
