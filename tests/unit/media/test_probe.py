"""probe(): streams, codecs, duration, fps, rotation and sample rate of generated files."""

from __future__ import annotations

from pathlib import Path

from duplex_client.media import probe
from tests.support.media_files import write_audio_file


def test_probe_reports_video_and_audio_facts(av_clip: Path) -> None:
    info = probe(av_clip)
    assert info.video is not None and info.audio is not None
    assert (info.video.codec, info.video.width, info.video.height) == ("h264", 64, 48)
    assert info.video.avg_fps == 10.0
    assert info.video.num_frames == 30
    assert info.video.duration_ms == 3000
    assert info.rotation_deg == 0
    assert (info.audio.codec, info.audio.sample_rate, info.audio.channels) == ("aac", 48000, 2)
    assert 2400 <= (info.audio.duration_ms or 0) <= 2600
    assert info.duration_ms == 3000
    assert [s.kind for s in info.streams] == ["video", "audio"]
    assert not info.is_image


def test_probe_reads_display_rotation(portrait_clip: Path) -> None:
    info = probe(portrait_clip)
    assert info.rotation_deg == -90
    assert info.display_size == (48, 64)
    assert "rotation -90" in info.summary()


def test_probe_of_clip_without_audio(silent_clip: Path) -> None:
    info = probe(silent_clip)
    assert info.audio is None and info.video is not None
    assert info.to_dict()["audio"] is None


def test_probe_of_audio_file(tmp_path: Path) -> None:
    info = probe(write_audio_file(tmp_path / "a.flac", 1.5, 22050, 440.0, channels=2))
    assert info.video is None
    assert info.audio is not None
    assert (info.audio.codec, info.audio.sample_rate, info.audio.channels) == ("flac", 22050, 2)
    assert info.duration_ms == 1500


def test_summary_is_one_line(av_clip: Path) -> None:
    line = probe(av_clip).summary()
    assert "\n" not in line
    assert "h264 64x48" in line and "aac 48000 Hz 2 ch" in line
