"""`RunOptions.validate` and `UsageError`: one line naming the keyword, bounds on every number."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import soundfile as sf

from duplex_client.families import FAMILIES
from duplex_client.framing import BytesPcmSource, Framer, FramerConfig
from duplex_client.run.options import MAX_CHUNK_MS, MAX_SECONDS, InputKind, RunOptions, check_number
from duplex_client.usage import UsageError
from tests.unit.framing.fakes import speech_pcm

INF, NAN = math.inf, math.nan


def refused(**options: Any) -> UsageError:
    with pytest.raises(UsageError) as caught:
        RunOptions(input_audio="a.wav", **options).validate()
    return caught.value


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"tail_silence_s": INF}, "tail_silence_s must be a finite number, got inf"),
        ({"tail_silence_s": NAN}, "tail_silence_s must be a finite number, got nan"),
        ({"tail_silence_s": -1.0}, "tail_silence_s must be >= 0, got -1"),
        ({"tail_silence_s": 1e12}, "tail_silence_s must be at most 3600 s, got 1e+12"),
        ({"chunk_ms": 0}, "chunk_ms must be positive, got 0"),
        ({"chunk_ms": 100000}, "chunk_ms must be at most 1000 ms"),
        ({"chunk_ms": 10**400}, "chunk_ms must be at most 1000 ms"),
        ({"chunk_ms": 200.5}, "chunk_ms must be an integer, got 200.5"),
        ({"chunk_ms": "200"}, "chunk_ms must be an integer, got '200'"),
        ({"video_fps": 0.0}, "video_fps must be positive, got 0"),
        ({"video_fps": NAN}, "video_fps must be a finite number"),
        ({"video_fps": 1e6}, "video_fps must be at most 120"),
        ({"timeout_s": INF}, "timeout_s must be a finite number"),
        ({"timeout_s": 0.0}, "timeout_s must be positive"),
        ({"timeout_s": 1e9}, "timeout_s must be at most 3600 s"),
        ({"settle_s": -0.1}, "settle_s must be >= 0"),
        ({"settle_s": NAN}, "settle_s must be a finite number"),
        ({"handshake_timeout_s": -1.0}, "handshake_timeout_s must be positive"),
        ({"handshake_timeout_s": INF}, "handshake_timeout_s must be a finite number"),
        ({"reconnect_attempts": 0}, "reconnect_attempts must be >= 1"),
        ({"reconnect_attempts": 10**6}, "reconnect_attempts must be at most 100"),
        ({"jpeg_quality": 0}, "jpeg_quality must be >= 1"),
        ({"jpeg_quality": 101}, "jpeg_quality must be at most 100"),
        ({"frame_max_side": -1}, "frame_max_side must be >= 0"),
        ({"frame_max_side": 10**6}, "frame_max_side must be at most 8192"),
        ({"stack_frames": 0}, "stack_frames must be >= 1"),
        ({"stack_frames": 1000}, "stack_frames must be at most 16"),
        ({"temperature": NAN}, "temperature must be a finite number"),
        ({"temperature": INF}, "temperature must be a finite number"),
        ({"temperature": -0.5}, "temperature must be >= 0, got -0.5"),
        ({"video_fps": True}, "video_fps must be a number, got True"),
    ],
)
def test_bad_numbers_are_one_line_naming_the_keyword(options: dict[str, Any], message: str) -> None:
    err = refused(**options)
    (param,) = options
    assert message in str(err) and "\n" not in str(err)
    assert str(err).startswith(param) and err.param == param and err.keywords == (param,)
    flag = "--" + param.replace("_", "-")
    assert err.render() == flag + str(err)[len(param) :]


def test_the_bounds_themselves_are_accepted() -> None:
    RunOptions(
        input_audio="a.wav",
        input_image="i.jpg",  # jpeg_quality applies to the images sent
        tail_silence_s=MAX_SECONDS,
        chunk_ms=MAX_CHUNK_MS,
        timeout_s=MAX_SECONDS,
        handshake_timeout_s=0.5,
        settle_s=0.0,
        jpeg_quality=1,
        temperature=0.0,
    ).validate()
    check_number("jpeg_quality", np.int64(100))  # numpy integers are integers
    check_number("tail_silence_s", np.float32(1.5))


def test_max_chunk_ms_is_the_longest_append_the_framer_makes() -> None:
    """Above MAX_CHUNK_MS the framer cuts appends at unit boundaries anyway (default grid)."""
    for chunk_ms in (MAX_CHUNK_MS, MAX_CHUNK_MS * 3):
        framer = Framer(FramerConfig(chunk_ms=chunk_ms))
        rows = list(framer.plan(BytesPcmSource(speech_pcm(5000))))
        assert max(r.duration_ms for r in rows) == MAX_CHUNK_MS


def test_messages_name_keywords_and_render_names_flags() -> None:
    with pytest.raises(UsageError) as caught:
        RunOptions().validate()
    err = caught.value
    assert str(err) == "nothing to stream: give input_video, input_audio or input_image"
    assert err.render() == "nothing to stream: give --input-video, --input-audio or --input-image"
    with pytest.raises(UsageError) as caught:
        RunOptions(input_image="x.png").validate()
    assert caught.value.render() == (
        "an image alone has no length: add --input-audio or --tail-silence-s"
    )
    assert caught.value.render(lambda k: f"<{k}>") == (
        "an image alone has no length: add <input_audio> or <tail_silence_s>"
    )


def test_render_leaves_paths_and_longer_names_alone() -> None:
    err = UsageError("/data/chunk_ms.wav: chunk_ms_total and chunk_ms differ", param="chunk_ms")
    assert err.render() == "/data/chunk_ms.wav: chunk_ms_total and --chunk-ms differ"
    assert UsageError("two\n lines", param="x").message == "two lines"
    assert UsageError("no keyword here", param="chunk_ms").keywords == ()
    assert isinstance(err, ValueError)  # old `except ValueError` callers still catch it
    first = UsageError("ref_audio: ref_audio: not a WAV audio file", param="ref_audio")
    assert first.render() == "--ref-audio: ref_audio: not a WAV audio file"  # the path stays


def test_user_text_is_never_rendered_as_flags() -> None:
    from duplex_client.client.transport import check_url

    with pytest.raises(UsageError) as caught:
        check_url("not a url")
    assert caught.value.keywords == () and caught.value.render() == str(caught.value)


def test_preset_models() -> None:
    assert RunOptions().model is None
    assert RunOptions().model_name == "openbmb/MiniCPM-o-4_5"
    assert RunOptions(preset="joyai").model_name is None
    assert RunOptions(preset="aura").model_name is None
    assert RunOptions(preset="none").model_name is None
    assert RunOptions(preset="joyai", model="jd/joy").model_name == "jd/joy"


def test_a_text_file_as_ref_audio_is_refused_without_echoing_it(tmp_path: Path) -> None:
    notes = tmp_path / "voice.wav"
    notes.write_text("SECRET-VOICE-NOTES " * 20)
    with pytest.raises(UsageError) as caught:
        RunOptions(input_audio="a.wav", ref_audio=str(notes)).session_config()
    err = caught.value
    assert str(err) == f"ref_audio: {notes}: not a WAV audio file (cannot decode it as audio)"
    assert "SECRET" not in str(err) and err.__cause__ is None and err.__context__ is not None
    assert err.param == "ref_audio" and err.render().startswith("--ref-audio: ")
    wav = tmp_path / "real.wav"
    sf.write(str(wav), np.zeros(1600, np.float32), 16000, subtype="FLOAT")
    cfg = RunOptions(input_audio="a.wav", ref_audio=str(wav)).session_config()
    assert cfg.ref_audio is not None and cfg.ref_audio.startswith("data:audio/wav;base64,UklGR")


def test_ref_audio_that_is_audio_but_not_a_wav_or_empty(tmp_path: Path) -> None:
    flac = tmp_path / "voice.flac"
    sf.write(str(flac), np.zeros(1600, np.float32), 16000, format="FLAC")
    with pytest.raises(UsageError, match=r"voice\.flac: reference audio must be a WAV file"):
        RunOptions(input_audio="a.wav", ref_audio=str(flac)).session_config()
    empty = tmp_path / "empty.wav"
    sf.write(str(empty), np.zeros(0, np.int16), 16000)
    with pytest.raises(UsageError, match=r"empty\.wav: reference audio has no samples"):
        RunOptions(input_audio="a.wav", ref_audio=str(empty), preset="none").session_config()


async def test_an_unknown_keyword_is_a_usage_error_with_a_hint() -> None:
    from duplex_client.run.stream import stream_clip

    with pytest.raises(UsageError, match=r"^chunkms is not an option .*did you mean chunk_ms\?"):
        await stream_clip(None, input_audio="a.wav", chunkms=100)


def test_frames_note_says_when_video_fps_is_more_than_is_sent() -> None:
    """A unit carries `stack_frames` frames: a faster sampling is said, never ignored (#32)."""
    from duplex_client.run.checks import frames_note

    assert frames_note(1.0, 1, 1000) is None and frames_note(0.5, 1, 1000) is None
    assert frames_note(3.0, 3, 1000) is None  # three a unit: all sent
    assert frames_note(12.5, 1, 80) is None  # an 80 ms grid carries 12.5 a second
    note = frames_note(3.0, 2, 1000)
    assert note == (
        "video_fps 3 asks for more frames than are sent: each 1000 ms unit carries the frame "
        "shown at its start and a composite of 1 more (2 a second); raise stack_frames to send "
        "more"
    )


@pytest.mark.parametrize("preset", [f.name for f in FAMILIES if not f.model_owned_turns])
@pytest.mark.parametrize("inputs", ["devices", "browser"])
def test_a_live_model_turn_run_with_a_turn_based_model_is_refused(
    preset: str, inputs: InputKind
) -> None:
    """Nothing would commit a turn: the session would never get an answer."""
    with pytest.raises(
        UsageError, match=rf"turn model: the {preset} preset.s model .* mode vad or ptt"
    ):
        RunOptions(preset=preset, turn="model").validate(inputs=inputs)
    RunOptions(preset=preset, turn="ptt").validate(inputs=inputs)
    RunOptions(preset=preset, turn="model", input_audio="a.wav").validate()  # the end commits
    RunOptions(preset="auto", turn="model").validate(inputs=inputs)  # minicpmo decides
