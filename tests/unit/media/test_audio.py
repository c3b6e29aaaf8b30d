"""PCM sources: soundtracks and audio files decoded to 16 kHz mono int16."""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest

from duplex_client.framing.sources import PcmSource
from duplex_client.media import AvAudio, SoundFileAudio, open_audio, open_clip
from tests.support.media_files import dominant_hz, write_audio_file


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
    assert abs(dominant_hz(pcm) - 440) < 10
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
