"""The package's resampler (`Resampler`, `resample`) and `PcmConverter` on top of it."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from duplex_client.media.resample import (
    FILTER_HALF,
    PcmConverter,
    Resampler,
    as_float,
    out_frames,
    resample,
)
from tests.support.media_files import dominant_hz, tone

av = pytest.importorskip("av")

RATE_PAIRS = [
    (48000, 16000),
    (24000, 48000),
    (16000, 24000),
    (22050, 24000),
    (44100, 16000),
    (8000, 48000),
    (48000, 44100),
    (16000, 16000),
]


def sine(hz: float, rate: int, seconds: float, amp: float = 0.5) -> np.ndarray:
    t = np.arange(round(rate * seconds)) / rate
    return (amp * np.sin(2 * np.pi * hz * t)).astype(np.float32)


def noise_pcm(n: int, seed: int = 0) -> np.ndarray:
    return (np.random.default_rng(seed).standard_normal(n) * 4000).astype(np.int16)


def feed(rs: Resampler, x: np.ndarray, cuts: list[int]) -> np.ndarray:
    parts = [rs.process(x[a:b]) for a, b in itertools.pairwise([0, *cuts, len(x)])]
    return np.concatenate([*parts, rs.flush()])


@pytest.mark.parametrize(("src", "dst"), RATE_PAIRS)
@pytest.mark.parametrize("n", [0, 1, 2, 3, 7, 100, 1001, 48001])
def test_length_is_n_times_out_over_in_rounded_half_up(src: int, dst: int, n: int) -> None:
    x = noise_pcm(n)
    rs = Resampler(src, dst)
    taken = made = 0
    for a, b in itertools.pairwise([*range(0, n, 331), n]):
        made += len(rs.process(x[a:b]))
        taken = b
        assert made <= out_frames(taken, src, dst)  # never ahead of the exact length
    assert made + len(rs.flush()) == out_frames(n, src, dst) == (2 * n * dst + src) // (2 * src)
    assert len(resample(x, src, dst)) == out_frames(n, src, dst)


def test_out_frames_rounds_half_up() -> None:
    assert out_frames(1, 16000, 24000) == 2  # 1.5
    assert out_frames(3, 16000, 24000) == 5  # 4.5
    assert out_frames(1, 48000, 16000) == 0  # 0.33
    assert out_frames(2, 48000, 16000) == 1  # 0.67
    assert out_frames(16000, 16000, 48000) == 48000


@pytest.mark.parametrize(("src", "dst"), [(24000, 48000), (48000, 16000), (22050, 16000)])
def test_chunked_output_equals_one_shot_output(src: int, dst: int) -> None:
    """No clicks at chunk boundaries: the filter state carries over, so cuts change nothing."""
    x = (sine(300, src, 1.0) * 32767).astype(np.int16)
    whole = resample(x, src, dst)
    cuts = [1, 2, 3, 481, 482, 4801, 9000, 9001]
    assert np.array_equal(feed(Resampler(src, dst), x, cuts), whole)  # int16: bit-exact
    floats = sine(300, src, 1.0)
    one = resample(floats, src, dst)
    many = feed(Resampler(src, dst, dtype=np.float32), floats, cuts)
    assert one.dtype == many.dtype == np.float32
    assert np.abs(many - one).max() < 1e-6


@pytest.mark.parametrize(("src", "dst"), [(48000, 16000), (24000, 48000), (22050, 24000)])
def test_output_is_aligned_with_the_input(src: int, dst: int) -> None:
    """Sample 0 is time 0: a tone comes out as the same tone sampled at the new rate."""
    got = resample(sine(440, src, 1.0), src, dst)
    want = sine(440, dst, 1.0)
    mid = slice(dst // 20, -dst // 20)  # the edges ring (the signal starts and stops abruptly)
    assert np.abs(got[mid] - want[mid]).max() < 1e-4


def test_a_tone_above_the_new_nyquist_vanishes_and_the_passband_is_flat() -> None:
    def level_db(y: np.ndarray) -> float:
        mid = y[4000:-4000].astype(np.float64)
        return float(10 * np.log10(np.mean(mid**2) / 0.125))  # against a 0.5 sine

    ref = level_db(resample(sine(1000, 48000, 2.0), 48000, 16000))
    for hz in (8500, 10000, 15000):  # would alias to 7.5, 6 and 1 kHz
        assert level_db(resample(sine(hz, 48000, 2.0), 48000, 16000)) - ref < -120
        pcm = resample((sine(hz, 48000, 2.0) * 32767).astype(np.int16), 48000, 16000)
        assert np.abs(pcm[4000:-4000]).max() <= 1  # under one LSB in PCM16
    for hz in (50, 300, 3000, 6000, 7000):
        assert abs(level_db(resample(sine(hz, 48000, 2.0), 48000, 16000)) - ref) < 0.01
    up = resample(sine(10000, 24000, 2.0), 24000, 48000)
    assert abs(level_db(up[8000:-8000]) - ref) < 0.01  # the answer path keeps 10 kHz
    spec = np.abs(np.fft.rfft(up[12000:-12000] * np.blackman(len(up) - 24000))) ** 2
    freqs = np.fft.rfftfreq(len(up) - 24000, 1 / 48000)
    image = spec[np.abs(freqs - 14000) < 100].sum() / spec[np.abs(freqs - 10000) < 100].sum()
    assert 10 * np.log10(image) < -120  # no image at 24 − 10 kHz


@pytest.mark.parametrize(("src", "dst"), [(48000, 16000), (24000, 48000), (44100, 16000)])
def test_output_lags_by_about_half_the_filter_whatever_the_chunks(src: int, dst: int) -> None:
    rs = Resampler(src, dst)
    limit = (FILTER_HALF + 6) * dst // min(src, dst)  # in output samples
    taken = made = 0
    for size in [src // 50] * 20 + [src // 5] * 5 + [7, 1, src // 100]:
        made += len(rs.process(noise_pcm(size)))
        taken += size
        assert out_frames(taken, src, dst) - made <= limit


def test_equal_rates_pass_pcm16_through_exactly_and_bytes_work() -> None:
    x = noise_pcm(1000)
    rs = Resampler(16000, 16000)
    assert rs.process(x.tobytes()).tobytes() == x.tobytes()
    assert len(rs.flush()) == 0
    y = Resampler(24000, 48000).process(x.astype("<i2").tobytes())
    assert y.dtype == np.int16 and y.ndim == 1


def test_channels_stay_apart_and_a_stream_restarts_after_flush() -> None:
    left = (sine(440, 24000, 0.5) * 32767).astype(np.int16)
    stereo = np.stack([left, np.zeros_like(left)], axis=1)
    rs = Resampler(24000, 48000, 2)
    first = np.concatenate([rs.process(stereo), rs.flush()])
    assert first.shape == (24000, 2)
    assert np.array_equal(first[:, 0], resample(left, 24000, 48000))  # as if alone
    assert np.abs(first[:, 1]).max() == 0
    interleaved = np.concatenate([rs.process(stereo.reshape(-1).tobytes()), rs.flush()])
    assert np.array_equal(interleaved, first)  # the same again: flush() reset the state


def test_bad_input_is_refused() -> None:
    with pytest.raises(ValueError, match="positive"):
        Resampler(0, 16000)
    with pytest.raises(ValueError, match="positive"):
        Resampler(16000, 16000, 0)
    with pytest.raises(ValueError, match="whole frames"):
        Resampler(24000, 48000).process(b"\x00")
    with pytest.raises(ValueError, match="whole frames"):
        Resampler(24000, 48000, 2).process(b"\x00\x00")
    with pytest.raises(ValueError, match="2 channels"):
        Resampler(24000, 48000, 2).process(np.zeros((10, 3), np.int16))


def test_as_float_scales_every_integer_type_to_full_scale() -> None:
    assert as_float(np.array([-32768, 0, 16384], np.int16)).tolist() == [-1.0, 0.0, 0.5]
    assert as_float(np.array([0, 128, 192], np.uint8)).tolist() == [-1.0, 0.0, 0.5]
    assert as_float(np.array([-(2**31), 2**30], np.int32)).tolist() == [-1.0, 0.5]
    assert as_float(np.array([0.25], np.float64)).dtype == np.float32


def frames(seconds: float, rate: int, hz: float, layout: str, size: int = 1024) -> list:
    channels = 2 if layout == "stereo" else 1
    pcm = tone(seconds, rate, hz, channels)
    out = []
    for i in range(0, pcm.shape[1], size):
        frame = av.AudioFrame.from_ndarray(
            np.ascontiguousarray(pcm[:, i : i + size]), format="fltp", layout=layout
        )
        frame.sample_rate, frame.pts = rate, i
        out.append(frame)
    return out


def test_format_change_mid_stream_keeps_all_audio() -> None:
    converter = PcmConverter()
    first = b"".join(converter.push(f) for f in frames(1.0, 48000, 500.0, "stereo"))
    second = b"".join(converter.push(f) for f in frames(1.0, 22050, 700.0, "mono"))
    pcm = first + second + converter.flush()
    assert len(pcm) // 2 == 32000  # each stream exact: 1 s is 16000 samples
    half = len(pcm) // 2 // 2 * 2
    assert abs(dominant_hz(pcm[: half - 2000]) - 500) < 5
    assert abs(dominant_hz(pcm[half + 2000 :]) - 700) < 5


def test_every_decoded_sample_format_is_scaled_and_averaged() -> None:
    """s16, s32, u8 and flt frames, planar or packed, all give the same 16 kHz mono."""
    x = np.round(tone(0.25, 16000, 440.0, 2) * 32767).astype(np.int16)  # (2, n)
    expected = np.round(x.astype(np.float64).mean(axis=0)).astype(np.int16)
    cases = {
        "s16p": x,
        "s16": x.T.reshape(1, -1),
        "s32": (x.astype(np.int32) << 16).T.reshape(1, -1),
        "u8": ((x.astype(np.int32) >> 8) + 128).astype(np.uint8).T.reshape(1, -1),
        "flt": (x / 32768).astype(np.float32).T.reshape(1, -1),
    }
    for fmt, data in cases.items():
        frame = av.AudioFrame.from_ndarray(np.ascontiguousarray(data), format=fmt, layout="stereo")
        frame.sample_rate = 16000
        converter = PcmConverter()
        got = np.frombuffer(converter.push(frame) + converter.flush(), "<i2")
        tolerance = 256 if fmt == "u8" else 1
        assert np.abs(got.astype(np.int32) - expected).max() <= tolerance, fmt


def test_output_comes_in_batches_and_flush_empties() -> None:
    converter = PcmConverter(batch_seconds=0.5)
    outputs = [converter.push(f) for f in frames(2.0, 16000, 440.0, "mono", size=160)]
    assert sum(1 for o in outputs if o) == 4  # one batch per half second
    assert converter.flush() == b""  # nothing left after exact batches (no rate change)
