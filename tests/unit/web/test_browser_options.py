"""A browser run's options: the page chooses the devices; the modes follow the family table."""

from __future__ import annotations

import pytest

from duplex_client.run.options import RunOptions
from duplex_client.run.prepare import prepare
from duplex_client.usage import UsageError
from duplex_client.web.source import offered_modes, offers_video


@pytest.mark.parametrize(
    ("option", "value"),
    [("mic", "2"), ("camera_file", "clip.mp4"), ("speaker", "1"), ("no_playback", True),
     ("ptt_mode", "hold")],
)  # fmt: skip
def test_devices_the_page_chooses_are_refused_not_ignored(option: str, value: object) -> None:
    with pytest.raises(UsageError, match=f"{option} is an option of a terminal live run"):
        RunOptions(**{option: value}).validate(inputs="browser")


def test_file_options_are_refused_and_live_ones_kept() -> None:
    with pytest.raises(
        UsageError, match="input_video is an option of a file run, not of a browser"
    ):
        RunOptions(input_video="clip.mp4").validate(inputs="browser")
    RunOptions(turn="vad", echo_gate=True, duration_s=5, jitter_ms=40).validate(inputs="browser")


def test_a_browser_run_is_configured_as_a_live_one() -> None:
    vad = prepare(RunOptions(turn="vad"), inputs="browser").config
    assert vad.turn_detection  # the turn mode shapes the session, as for live devices
    assert not prepare(RunOptions(turn="model"), inputs="browser").config.turn_detection


@pytest.mark.parametrize(
    ("preset", "modes", "video"),
    [
        ("auto", ("model", "vad", "ptt"), True),
        ("minicpmo", ("model", "vad", "ptt"), True),
        ("joyai", ("vad", "ptt"), True),
        ("aura", ("model", "ptt"), True),
        ("personaplex", ("model",), False),
        ("nemotron", ("model",), False),
        ("none", ("model", "vad", "ptt"), True),
    ],
)
def test_the_modes_and_camera_offered_follow_the_family(
    preset: str, modes: tuple[str, ...], video: bool
) -> None:
    assert offered_modes(preset) == modes
    assert offers_video(preset) is video
