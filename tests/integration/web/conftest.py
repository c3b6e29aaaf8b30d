"""Fixtures of the `duplex-cli web` tests: the loop thread, the fake devices' files."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from tests.support.media_files import colour_frame
from tests.support.web import LoopThread, write_y4m

#: The fake microphone's file: two questions, then quiet. Chromium loops it, not to the
#: sample: it is long enough that a test's window never spans the loop's seam.
QUESTIONS = ("what color do you see", "tell me what you see on the table")


@pytest.fixture(scope="module")
def loop() -> Iterator[LoopThread]:
    thread = LoopThread()
    try:
        yield thread
    finally:
        thread.close()


def speech_wav(path: Path, *, tail_ms: int = 2500) -> tuple[Path, Any]:
    """Spoken questions (eSpeak NG, the server extra's) as a 16 kHz WAV, and its samples.

    Without the speech engine, a chirp with a syllable-like envelope stands in (the fidelity
    checks hold; voice activity may find no speech in it).
    """
    import soundfile as sf

    from duplex_client.server.config import speech_available

    if speech_available():
        from duplex_client.server.engine.tts import speech_pcm16

        first, second = QUESTIONS
        pcm = speech_pcm16(first, 16000, lead_ms=300, tail_ms=1500)
        pcm += speech_pcm16(second, 16000, tail_ms=tail_ms)
        samples = np.frombuffer(pcm, "<i2").astype(np.float64) / 32768
    else:
        t = np.arange(int(16000 * 8.0)) / 16000
        envelope = 0.5 + 0.5 * np.sin(2 * np.pi * 3 * t)
        samples = 0.3 * envelope * np.sin(2 * np.pi * (150 + 200 * t) * t)
    sf.write(path, samples.astype(np.float32), 16000, subtype="PCM_16")
    return path, samples


@pytest.fixture(scope="module")
def fake_files(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Any, Path]:
    """The microphone's WAV, its samples, and a camera file of coloured frames (10 fps)."""
    root = tmp_path_factory.mktemp("fake_devices")
    wav, samples = speech_wav(root / "question.wav")
    frames = [colour_frame(i // 10, 320, 240) for i in range(30)]
    return wav, samples, write_y4m(root / "camera.y4m", frames)


@contextmanager
def reference(loop: LoopThread, **config: Any) -> Iterator[Any]:
    """A `ReferenceServer` (config: its keyword options) started on the loop thread."""
    from duplex_client.server import ReferenceServer

    server = ReferenceServer(**config)
    loop.run(server.start())
    try:
        yield server
    finally:
        loop.run(server.stop())
