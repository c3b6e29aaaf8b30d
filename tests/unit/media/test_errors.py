"""Bad input: every case is a one-line MediaError naming the file and the problem."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from duplex_client.media import (
    ImageFrameSource,
    MediaError,
    MediaWarning,
    open_audio,
    open_clip,
    probe,
)
from duplex_client.protocol.errors import DuplexClientError
from tests.support.media_files import frame_index, write_unknown_codec_wav


def clip_error(path: Path, *fragments: str) -> MediaError:
    with pytest.raises(MediaError) as caught:
        open_clip(path)
    err = caught.value
    message = str(err)
    assert "\n" not in message
    assert message.startswith(f"{path}: ")
    assert err.path == str(path)
    for fragment in fragments:
        assert fragment in message
    assert isinstance(err, DuplexClientError)
    return err


def test_missing_file(tmp_path: Path) -> None:
    clip_error(tmp_path / "nope.mp4", "no such file")


def test_directory(tmp_path: Path) -> None:
    clip_error(tmp_path, "is a directory")


def test_empty_file(tmp_path: Path) -> None:
    empty = tmp_path / "empty.mp4"
    empty.write_bytes(b"")
    clip_error(empty, "empty file")


def test_text_file_renamed_mp4(tmp_path: Path) -> None:
    text = tmp_path / "notes.mp4"
    text.write_text("shopping list\n- milk\n- eggs\n")
    clip_error(text, "not a media file PyAV can read", "Invalid data")


def test_truncated_mp4_without_its_index_fails(make_clip: Callable[..., Path]) -> None:
    whole = make_clip("whole.mp4", audio_seconds=3.0)
    cut = whole.with_name("cut.mp4")
    cut.write_bytes(whole.read_bytes()[: whole.stat().st_size // 2])
    clip_error(cut, "truncated or damaged MP4/MOV")


def test_truncated_faststart_mp4_decodes_what_is_readable(make_clip: Callable[..., Path]) -> None:
    whole = make_clip("fast.mp4", audio_seconds=3.0, faststart=True)
    cut = whole.with_name("fastcut.mp4")
    cut.write_bytes(whole.read_bytes()[: whole.stat().st_size // 2])
    clip = open_clip(cut)
    assert clip.audio is not None and clip.frames is not None
    with pytest.warns(MediaWarning) as audio_warnings:
        pcm = b"".join(clip.audio.chunks())
    assert f"{cut}: truncated: audio ends" in " ".join(str(w.message) for w in audio_warnings)
    assert 0 < len(pcm) < 2 * 16000 * 3 * 0.8
    with pytest.warns(MediaWarning) as video_warnings:
        groups = [clip.frames.group_for_unit(s, s + 1000) for s in range(0, 3000, 1000)]
    assert f"{cut}: truncated: video ends" in " ".join(str(w.message) for w in video_warnings)
    assert groups[0] is not None and not groups[0].held
    assert groups[-1] is not None and groups[-1].held  # the cut-off end holds a frame
    import cv2
    import numpy as np

    first = cv2.imdecode(np.frombuffer(groups[0].base.data, np.uint8), cv2.IMREAD_COLOR)
    assert frame_index(first) == 0
    clip.close()


def test_file_with_neither_audio_nor_video(tmp_path: Path) -> None:
    subs = tmp_path / "subtitles.mp4"
    subs.write_text("1\n00:00:00,000 --> 00:00:01,000\nhello\n\n")
    clip_error(subs, "no audio or video stream", "subtitle")


def test_unsupported_codec(tmp_path: Path) -> None:
    wav = write_unknown_codec_wav(tmp_path / "odd.wav")
    clip_error(wav, "unsupported audio codec")
    with pytest.raises(MediaError, match=r"odd\.wav: unsupported audio codec"):
        open_audio(wav)


def test_wav_with_zero_samples(tmp_path: Path) -> None:
    import numpy as np
    import soundfile as sf

    wav = tmp_path / "silence.wav"
    sf.write(str(wav), np.zeros(0, np.int16), 16000)
    clip_error(wav, "no audio samples")
    with pytest.raises(MediaError, match=r"silence\.wav: no audio samples"):
        open_audio(wav)


def test_probe_and_open_audio_share_the_messages(tmp_path: Path) -> None:
    text = tmp_path / "notes.wav"
    text.write_text("not audio")
    with pytest.raises(MediaError, match=r"notes\.wav: not a media file"):
        open_audio(text)
    with pytest.raises(MediaError, match="no such file"):
        probe(tmp_path / "gone.wav")


def test_unreadable_image(tmp_path: Path) -> None:
    fake = tmp_path / "photo.png"
    fake.write_text("not a picture")
    with pytest.raises(MediaError, match=r"photo\.png: not an image OpenCV can read"):
        ImageFrameSource(fake)


def test_bad_settings_are_value_errors(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="fps"):
        open_clip(tmp_path / "x.mp4", fps=0)
    with pytest.raises(ValueError, match="jpeg_quality"):
        open_clip(tmp_path / "x.mp4", jpeg_quality=101)


def _pcm16_wav(path: Path, frames: int, channels: int = 1) -> bytes:
    """A 16 kHz PCM16 WAV of `frames` quiet frames, written whole; returns its bytes."""
    import wave

    with wave.open(str(path), "wb") as w:
        w.setnchannels(channels)
        w.setsampwidth(2)
        w.setframerate(16000)
        w.writeframes(b"\x10\x00" * frames * channels)
    return path.read_bytes()


def test_a_wav_cut_short_warns_as_a_cut_mp4_does(tmp_path: Path) -> None:
    """Its header declares 1 s, it holds 0.5 s (issue 32): said once, what it holds is read."""
    whole = _pcm16_wav(tmp_path / "whole.wav", 16000)
    cut = tmp_path / "cut.wav"
    cut.write_bytes(whole[: 44 + 16000])
    with pytest.warns(MediaWarning) as said:
        audio = open_audio(cut)
    assert [str(w.message) for w in said] == [
        f"{cut}: truncated WAV: its header declares 1.00 s of audio, the file holds 0.50 s; "
        "using what is readable"
    ]
    assert audio.duration_ms == 500


def test_a_wav_ending_inside_a_frame_is_damaged(tmp_path: Path) -> None:
    """Stereo, one byte short of the last frame: less than 10 ms is missing, yet it is said."""
    whole = _pcm16_wav(tmp_path / "whole.wav", 1600, channels=2)
    cut = tmp_path / "odd.wav"
    cut.write_bytes(whole[:-1])
    with pytest.warns(MediaWarning, match="damaged WAV: its audio data ends inside a sample"):
        open_audio(cut)


def test_a_wav_whose_writer_left_the_length_open_is_not_truncated(tmp_path: Path) -> None:
    """A streaming writer's placeholder length (0xFFFFFFFF) declares nothing: no warning."""
    import struct
    import warnings

    data = bytearray(_pcm16_wav(tmp_path / "whole.wav", 1600))
    data[40:44] = struct.pack("<I", 0xFFFFFFFF)
    (tmp_path / "open.wav").write_bytes(bytes(data))
    with warnings.catch_warnings():
        warnings.simplefilter("error", MediaWarning)
        audio = open_audio(tmp_path / "open.wav")
    assert audio.duration_ms == 100
