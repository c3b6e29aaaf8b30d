"""open_clip(): which sources a file yields, and the timeline facts they report."""

from __future__ import annotations

from pathlib import Path

from duplex_client.framing.sources import FrameSampler, PcmSource
from duplex_client.media import ClipFrames, open_clip
from tests.unit.media.conftest import write_audio_file


def test_clip_with_audio_gives_pcm_and_frames(av_clip: Path) -> None:
    with open_clip(av_clip, fps=2.0, stack_frames=2, jpeg_quality=80, frame_max_side=32) as clip:
        assert isinstance(clip.audio, PcmSource)
        assert isinstance(clip.frames, ClipFrames)
        info = clip.info()
    assert info["audio_source"]["kind"] == "video_soundtrack"
    assert info["video"]["fps"] == 2.0
    assert info["video"]["stack_frames"] == 2
    assert info["video"]["jpeg_quality"] == 80
    assert info["video"]["frame_max_side"] == 32
    assert info["media"]["video"]["codec"] == "h264"


def test_clip_without_audio_gives_frames_only(silent_clip: Path) -> None:
    clip = open_clip(silent_clip)
    assert clip.audio is None
    assert isinstance(clip.frames, FrameSampler)
    assert clip.duration_ms == 3000
    assert clip.info()["audio_source"] is None


def test_audio_only_file_gives_pcm_only(tmp_path: Path) -> None:
    for name in ("a.wav", "a.m4a"):
        clip = open_clip(write_audio_file(tmp_path / name, 1.0, 44100, 500.0))
        assert clip.frames is None
        assert clip.audio is not None
        assert len(b"".join(clip.audio.chunks())) > 1.9 * 16000
        assert clip.info()["video"] is None
