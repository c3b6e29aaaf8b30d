"""open_clip(): which sources a file yields, and the timeline facts they report."""

from __future__ import annotations

from pathlib import Path

from duplex_client.framing.sources import FrameSampler, PcmSource
from duplex_client.media import ClipFrames, open_clip, probe
from tests.support.media_files import write_audio_file


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


def test_cover_art_is_not_video(tmp_path: Path) -> None:
    import fractions

    import av
    import cv2
    import numpy as np

    from tests.support.media_files import add_aac, write_aac

    path = tmp_path / "song.m4a"
    with av.open(str(path), "w", format="mp4") as out:
        audio = add_aac(out, 44100, "mono")
        art = out.add_stream("mjpeg", rate=1)
        art.width, art.height, art.pix_fmt = 64, 48, "yuvj420p"
        art.disposition = av.stream.Disposition.attached_pic
        _, jpeg = cv2.imencode(".jpg", np.zeros((48, 64, 3), np.uint8))
        packet = av.Packet(jpeg.tobytes())
        packet.stream, packet.time_base = art, fractions.Fraction(1, 1)
        packet.pts = packet.dts = 0
        packet.is_keyframe = True
        out.mux(packet)
        write_aac(out, audio, 1.0, 440.0)
    info = probe(path)
    assert info.video is None and [s.kind for s in info.streams] == ["audio", "video"]
    clip = open_clip(path)
    assert clip.frames is None and clip.audio is not None
