"""GrowingWav stays a valid WAV after every write."""

from __future__ import annotations

import wave
from pathlib import Path

import pytest

from duplex_client.bundle.wavfile import GrowingWav, read_wav_pcm16


def test_file_is_valid_after_each_write_and_after_close(tmp_path: Path) -> None:
    path = tmp_path / "a.wav"
    wav = GrowingWav(path, 24000)
    with wave.open(str(path)) as w:
        assert w.getnframes() == 0 and w.getframerate() == 24000
    wav.write(b"\x01\x00" * 100)
    with wave.open(str(path)) as w:  # readable while still open for writing
        assert w.getnframes() == 100
    wav.write(b"\x02\x00" * 50)
    wav.close()
    pcm, rate = read_wav_pcm16(path)
    assert rate == 24000 and pcm == b"\x01\x00" * 100 + b"\x02\x00" * 50
    assert wav.duration_ms == 6
    with pytest.raises(ValueError, match="closed"):
        wav.write(b"\x00\x00")
