"""G.711 through PyAV (`media/g711.py`): sizes, fidelity, and clear errors."""

from __future__ import annotations

import numpy as np
import pytest

from duplex_client.media import g711


def _tone(n: int, rate: int = 8000) -> bytes:
    t = np.arange(n) / rate
    return (np.sin(2 * np.pi * 440 * t) * 8000).astype("<i2").tobytes()


@pytest.mark.parametrize("encoding", ["g711_ulaw", "g711_alaw"])
def test_one_byte_a_sample_and_about_39_db(encoding: str) -> None:
    pcm = _tone(1600)
    coded = g711.encode(pcm, encoding, 8000)
    assert len(coded) == 1600
    back = g711.decode(coded, encoding, 8000)
    a = np.frombuffer(pcm, "<i2").astype(float)
    b = np.frombuffer(back, "<i2").astype(float)
    assert len(back) == len(pcm)
    assert 10 * np.log10((a * a).sum() / ((a - b) ** 2).sum()) > 35


def test_the_two_laws_differ_and_known_codes_decode() -> None:
    pcm = _tone(800)
    assert g711.encode(pcm, "g711_ulaw", 8000) != g711.encode(pcm, "g711_alaw", 8000)
    # µ-law 0xFF and A-law 0xD5 are the codes for (near) zero
    assert g711.decode(b"\xff", "g711_ulaw", 8000) == b"\x00\x00"
    assert abs(int.from_bytes(g711.decode(b"\xd5", "g711_alaw", 8000), "little", signed=True)) < 16


def test_errors_are_clear() -> None:
    assert g711.decode(b"", "g711_ulaw", 8000) == b""
    with pytest.raises(g711.G711Error, match=r"not a G\.711 encoding"):
        g711.decode(b"\x00", "pcm16", 8000)
    with pytest.raises(g711.G711Error, match="odd number of bytes"):
        g711.encode(b"\x00\x00\x00", "g711_alaw", 8000)
