"""The streaming resampler for answer audio at another rate than the speaker's."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from duplex_client.live.resample import StreamResampler


def sine(hz: float, rate: int, seconds: float, amp: int = 12000) -> bytes:
    t = np.arange(int(rate * seconds)) / rate
    return (np.sin(2 * np.pi * hz * t) * amp).astype("<i2").tobytes()


def crossings(pcm: bytes) -> int:
    x = np.frombuffer(pcm, dtype="<i2").astype(np.int32)
    return int(np.count_nonzero(np.diff(np.sign(x[x != 0])) != 0))


@pytest.mark.parametrize(("src", "dst"), [(16000, 24000), (24000, 16000), (22050, 48000)])
def test_length_and_pitch_are_kept(src: int, dst: int) -> None:
    pcm = sine(440, src, 1.0)
    rs = StreamResampler(src, dst)
    out = rs.push(pcm) + rs.flush()
    assert len(out) // 2 == dst  # one second stays one second, to the sample
    assert abs(crossings(out) - crossings(pcm)) <= 2  # 440 Hz stays 440 Hz


def test_output_does_not_depend_on_how_the_input_was_cut() -> None:
    pcm = sine(300, 16000, 0.5)
    whole = StreamResampler(16000, 24000).push(pcm)
    rs = StreamResampler(16000, 24000)
    cuts = [0, 2, 4, 1002, 1004, 3000, 7777 * 2, len(pcm)]
    pieces = b"".join(rs.push(pcm[a:b]) for a, b in itertools.pairwise(cuts))
    assert pieces == whole


def test_known_values_and_bad_input() -> None:
    ramp = np.arange(0, 1000, 100, dtype="<i2").tobytes()  # 0, 100, ..., 900
    up = np.frombuffer(StreamResampler(1, 2).push(ramp), dtype="<i2")
    assert up.tolist() == list(range(0, 901, 50))  # midpoints interpolated
    down = np.frombuffer(StreamResampler(2, 1).push(ramp), dtype="<i2")
    assert down.tolist() == [0, 200, 400, 600, 800]
    rs = StreamResampler(1, 2)
    assert len(rs.push(ramp)) // 2 == 19 and np.frombuffer(rs.flush(), "<i2").tolist() == [900]
    assert rs.flush() == b""
    with pytest.raises(ValueError, match="whole samples"):
        StreamResampler(16000, 24000).push(b"\x00")
    with pytest.raises(ValueError, match="positive"):
        StreamResampler(0, 24000)
