"""PCM sources: soundtracks and audio files decoded to 16 kHz mono int16."""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest

from duplex_client.framing.redact import audio_source_facts
from duplex_client.framing.sources import PcmSource
from duplex_client.media import AvAudio, SoundFileAudio, open_audio, open_clip
from tests.support.media_files import (
    best_correlation,
    dominant_hz,
    two_tone_mono,
    write_audio_file,
    write_two_tone_wav,
)


def pcm_of(source: PcmSource) -> bytes:
    chunks = list(source.chunks())
    assert all(len(c) % 2 == 0 for c in chunks)
    return b"".join(chunks)


def band_energy(pcm: bytes, lo: float, hi: float, rate: int = 16000) -> float:
    x = np.frombuffer(pcm, "<i2").astype(np.float64)
    spec = np.abs(np.fft.rfft(x * np.hanning(len(x)))) ** 2
    freqs = np.fft.rfftfreq(len(x), 1 / rate)
    return float(spec[(freqs >= lo) & (freqs < hi)].sum())


def test_48k_stereo_soundtrack_becomes_16k_mono_with_both_tones(av_clip: Path) -> None:
    clip = open_clip(av_clip)
    assert clip.audio is not None
    pcm = pcm_of(clip.audio)
    samples = len(pcm) // 2
    assert abs(samples - 2.5 * 16000) < 0.05 * 16000  # 2.5 s (AAC frame padding aside)
    # Left 1 kHz, right 2 kHz: the mono downmix keeps both, nothing elsewhere.
    total = band_energy(pcm, 0, 8000)
    assert band_energy(pcm, 950, 1050) / total > 0.3
    assert band_energy(pcm, 1950, 2050) / total > 0.3


@pytest.mark.parametrize(
    ("suffix", "rate", "channels", "kind", "cls"),
    [
        (".wav", 44100, 2, "wav", SoundFileAudio),
        (".flac", 22050, 1, "audio_file", SoundFileAudio),
        (".ogg", 48000, 1, "audio_file", SoundFileAudio),
        (".mp3", 44100, 1, "audio_file", SoundFileAudio),
        (".m4a", 44100, 1, "audio_file", AvAudio),
    ],
)
def test_audio_files_keep_their_tone(
    tmp_path: Path, suffix: str, rate: int, channels: int, kind: str, cls: type
) -> None:
    path = write_audio_file(tmp_path / f"tone{suffix}", 2.0, rate, 440.0, channels)
    source = open_audio(path)
    assert isinstance(source, cls)
    assert isinstance(source, PcmSource)
    pcm = pcm_of(source)
    assert abs(len(pcm) / 2 - 32000) < 0.1 * 16000
    if channels == 1:
        assert abs(dominant_hz(pcm) - 440) < 10
    else:  # left 440 Hz, right 880 Hz at one level: the mean keeps both, equally
        low, high = band_energy(pcm, 430, 450), band_energy(pcm, 870, 890)
        assert 0.95 < low / high < 1.05
        assert (low + high) / band_energy(pcm, 0, 8000) > 0.99
    info = source.info()
    assert info["kind"] == kind
    assert info["path"] == str(path)
    assert abs(info["duration_ms"] - 2000) < 100
    assert info["sha256"] == hashlib.sha256(path.read_bytes()).hexdigest()


def test_16k_mono_wav_passes_through_exactly(tmp_path: Path) -> None:
    import soundfile as sf

    samples = (np.arange(20000) % 2000 - 1000).astype("<i2")
    path = tmp_path / "exact.wav"
    sf.write(str(path), samples, 16000, subtype="PCM_16")
    assert pcm_of(open_audio(path)) == samples.tobytes()


def test_sources_are_reiterable(av_clip: Path, tmp_path: Path) -> None:
    clip = open_clip(av_clip)
    assert clip.audio is not None
    assert pcm_of(clip.audio) == pcm_of(clip.audio)
    wav = open_audio(write_audio_file(tmp_path / "r.wav", 1.0, 8000, 300.0))
    assert pcm_of(wav) == pcm_of(wav)


def test_soundtrack_info(av_clip: Path) -> None:
    clip = open_clip(av_clip)
    assert clip.audio is not None
    pcm = pcm_of(clip.audio)
    info = clip.audio.info()
    assert info["kind"] == "video_soundtrack"
    assert info["duration_ms"] == len(pcm) // 2 * 1000 // 16000  # exact once decoded
    assert info["sha256"] == hashlib.sha256(av_clip.read_bytes()).hexdigest()


def test_audio_longer_than_video(make_clip: Callable[..., Path]) -> None:
    clip = open_clip(make_clip("long_audio.mp4", video_seconds=1.0, audio_seconds=3.0))
    assert clip.audio is not None and clip.frames is not None
    assert len(pcm_of(clip.audio)) / 2 / 16000 >= 2.95  # the whole soundtrack is delivered
    assert clip.duration_ms >= 2950
    late = clip.frames.group_for_unit(2000, 3000)
    assert late is not None and late.held and late.base.pts_ms == 0


def test_video_longer_than_audio(make_clip: Callable[..., Path]) -> None:
    clip = open_clip(make_clip("long_video.mp4", video_seconds=3.0, audio_seconds=1.0))
    assert clip.audio is not None and clip.frames is not None
    assert abs(len(pcm_of(clip.audio)) / 2 / 16000 - 1.0) < 0.1
    group = clip.frames.group_for_unit(2000, 3000)
    assert group is not None and not group.held and group.base.pts_ms == 2000


def test_external_audio_replaces_the_soundtrack(av_clip: Path, tmp_path: Path) -> None:
    wav = write_audio_file(tmp_path / "speech.wav", 4.0, 16000, 300.0)
    clip = open_clip(av_clip, audio=wav)
    assert clip.audio is not None and clip.frames is not None
    pcm = pcm_of(clip.audio)
    assert len(pcm) == 4 * 16000 * 2
    assert abs(dominant_hz(pcm) - 300) < 5  # not the clip's 1 kHz / 2 kHz soundtrack
    assert clip.audio.info()["kind"] == "wav"
    assert clip.duration_ms == 4000
    # Frames follow the audio's 4 s: the 3 s video holds its last sampled frame.
    tail = clip.frames.group_for_unit(3000, 4000)
    assert tail is not None and tail.held and tail.base.pts_ms == 2000


def test_late_audio_is_aligned_to_media_time_zero(tmp_path: Path) -> None:
    import fractions

    import av

    path = tmp_path / "late.mp4"
    with av.open(str(path), "w") as out:
        video = out.add_stream("libx264", rate=10)
        video.width, video.height, video.pix_fmt = 64, 48, "yuv420p"
        audio = out.add_stream("aac", rate=16000, layout="mono")
        for i in range(20):
            frame = av.VideoFrame.from_ndarray(np.full((48, 64, 3), 90, np.uint8), format="bgr24")
            frame.pts, frame.time_base = i, fractions.Fraction(1, 10)
            for packet in video.encode(frame):
                out.mux(packet)
        for packet in video.encode():
            out.mux(packet)
        for i in range(0, 16000, 1024):  # audio starts 0.5 s into the clip
            block = np.full((1, 1024), 0.5, np.float32)
            aframe = av.AudioFrame.from_ndarray(block, format="fltp", layout="mono")
            aframe.sample_rate, aframe.pts = 16000, 8000 + i
            for packet in audio.encode(aframe):
                out.mux(packet)
        for packet in audio.encode():
            out.mux(packet)
    clip = open_clip(path)
    assert clip.audio is not None
    pcm = np.frombuffer(pcm_of(clip.audio), "<i2")
    assert np.abs(pcm[:6000]).max() < 100  # silence before the audio starts
    assert np.abs(pcm[9000:12000]).mean() > 10000  # the tone where it plays


def _converted(fmt: str) -> dict[str, object]:
    return {"step": "converted", "from": fmt, "to": "pcm16"}


DOWNMIXED = {"step": "downmixed", "from": 2, "to": 1}
RESAMPLED_48K = {"step": "resampled", "from": 48000, "to": 16000}
#: (libsndfile subtype, rate, channels, original sample_format, expected conversions)
WAV_KINDS = {
    "float32": ("FLOAT", 16000, 1, "float32", [_converted("float32")]),
    "float64": ("DOUBLE", 16000, 1, "float64", [_converted("float64")]),
    "pcm8u": ("PCM_U8", 16000, 1, "pcm8u", [_converted("pcm8u")]),
    "pcm24": ("PCM_24", 16000, 1, "pcm24", [_converted("pcm24")]),
    "pcm32": ("PCM_32", 16000, 1, "pcm32", [_converted("pcm32")]),
    "stereo_pcm16": ("PCM_16", 16000, 2, "pcm16", [DOWNMIXED]),
    "48k_pcm16": ("PCM_16", 48000, 1, "pcm16", [RESAMPLED_48K]),
    "48k_stereo_float32": (
        "FLOAT", 48000, 2, "float32", [_converted("float32"), DOWNMIXED, RESAMPLED_48K],
    ),
}  # fmt: skip
SECONDS = 1.5
MAX_LAG = 5 * 16  # the resampler's delay stays within 5 ms


def assert_faithful(pcm: bytes, seconds: float = SECONDS) -> None:
    """`pcm` is `two_tone_mono`: length, level and shape (correlation after lag alignment)."""
    got = np.frombuffer(pcm, "<i2").astype(np.float64) / 32768
    assert abs(len(got) - seconds * 16000) <= MAX_LAG, len(got)
    assert np.abs(got).max() > 0.4  # the mix peaks near 0.5 full scale; silence is 0
    ref = two_tone_mono(len(got))
    corr, lag = best_correlation(got, ref, MAX_LAG)
    assert corr > 0.99, (corr, lag)
    level = np.sqrt(np.mean(got[MAX_LAG:-MAX_LAG] ** 2) / np.mean(ref**2))
    assert 0.9 < level < 1.1, level  # scaled right: no int truncation, downmix is a mean


@pytest.mark.parametrize("reader", ["soundfile", "pyav"])
@pytest.mark.parametrize("kind", list(WAV_KINDS))
def test_every_wav_sample_format_is_read_faithfully(tmp_path: Path, kind: str, reader: str) -> None:
    subtype, rate, channels, sample_format, conversions = WAV_KINDS[kind]
    path = write_two_tone_wav(
        tmp_path / f"{kind}.wav", rate=rate, channels=channels, subtype=subtype, seconds=SECONDS
    )
    source = open_audio(path) if reader == "soundfile" else AvAudio(path, kind="wav")
    assert isinstance(source, SoundFileAudio if reader == "soundfile" else AvAudio)
    before = source.info()  # known from the header, before anything is decoded
    assert before["original_format"] == {
        "sample_rate_hz": rate,
        "channels": channels,
        "sample_format": sample_format,
    }
    assert before["conversions"] == conversions
    assert_faithful(pcm_of(source))
    after = source.info()
    assert (after["original_format"], after["conversions"]) == (
        before["original_format"],
        conversions,
    )


def test_float_wav_at_the_native_rate_is_not_silence(tmp_path: Path) -> None:
    """The reported bug: 16 kHz mono float32 used to be read as int16 and came out all zero."""
    path = write_two_tone_wav(tmp_path / "f.wav", rate=16000, channels=1, subtype="FLOAT")
    source = open_audio(path)
    assert isinstance(source, SoundFileAudio) and not source.native
    pcm = np.frombuffer(pcm_of(source), "<i2")
    assert len(pcm) == SECONDS * 16000
    expected = np.round(two_tone_mono(len(pcm)) * 32768)
    assert np.abs(pcm - expected).max() <= 1  # no resampling: sample for sample


def test_untouched_pcm16_records_no_conversion(tmp_path: Path) -> None:
    path = write_two_tone_wav(tmp_path / "n.wav", rate=16000, channels=1, subtype="PCM_16")
    source = open_audio(path)
    assert isinstance(source, SoundFileAudio) and source.native
    info = source.info()
    assert info["original_format"] == {
        "sample_rate_hz": 16000,
        "channels": 1,
        "sample_format": "pcm16",
    }
    assert info["conversions"] == []
    assert_faithful(pcm_of(source))


def test_soundtrack_and_m4a_record_their_decoded_format(av_clip: Path, tmp_path: Path) -> None:
    clip = open_clip(av_clip)
    assert clip.audio is not None
    info = clip.info()["audio_source"]
    assert info["original_format"] == {
        "sample_rate_hz": 48000,
        "channels": 2,
        "sample_format": "float32",  # AAC decodes to fltp
    }
    assert info["conversions"] == [_converted("float32"), DOWNMIXED, RESAMPLED_48K]
    m4a = open_audio(write_audio_file(tmp_path / "t.m4a", 1.0, 44100, 440.0))
    assert isinstance(m4a, AvAudio)
    assert m4a.info()["original_format"] == {
        "sample_rate_hz": 44100,
        "channels": 1,
        "sample_format": "float32",
    }
    assert m4a.info()["conversions"] == [
        _converted("float32"),
        {"step": "resampled", "from": 44100, "to": 16000},
    ]


def test_flac_and_ogg_formats(tmp_path: Path) -> None:
    flac = open_audio(write_audio_file(tmp_path / "t.flac", 1.0, 22050, 440.0))
    assert flac.info()["original_format"]["sample_format"] == "pcm16"
    assert flac.info()["conversions"] == [{"step": "resampled", "from": 22050, "to": 16000}]
    ogg = open_audio(write_audio_file(tmp_path / "t.ogg", 1.0, 16000, 440.0))
    assert ogg.info()["original_format"]["sample_format"] == "float32"  # Vorbis decodes to float
    assert ogg.info()["conversions"] == [_converted("float32")]


def test_format_facts_pass_the_timeline_whitelist_and_stay_small(tmp_path: Path) -> None:
    path = write_two_tone_wav(tmp_path / "s.wav", rate=48000, channels=2, subtype="FLOAT")
    info = open_audio(path).info()
    facts = audio_source_facts(info)
    assert facts["original_format"] == info["original_format"]
    assert facts["conversions"] == info["conversions"]
    hostile = audio_source_facts(
        {
            **info,
            "original_format": {"sample_format": "data:audio/wav;base64,AAAA", "x" * 100: 1},
            "conversions": [{"step": "resampled", "pcm": b"\x00" * 64, "nested": {"a": 1}}],
        }
    )
    assert hostile["original_format"] == {"sample_format": None}
    assert hostile["conversions"] == [{"step": "resampled", "pcm": None, "nested": None}]
    assert audio_source_facts({**info, "conversions": list(range(1000))})["conversions"] is None
