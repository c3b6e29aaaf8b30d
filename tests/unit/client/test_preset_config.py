"""`presets.preset_config`: the one options → `SessionConfig` conversion of stream and live.

These tests were written against the two conversions it replaced (`RunOptions.session_config()`
of a file run and `LiveOptions.session_config()` of live), for every preset and turn style, and
passed there; both runs now reach it through `run.prepare`, so the same tests check that the
options are handed over as before, and the pinned values below keep today's configs.
Compared field by field and as the wire object, key order included (session.json records it).
"""

from __future__ import annotations

import itertools
import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from duplex_client import presets
from duplex_client.bundle.wavfile import write_wav
from duplex_client.client.config import SessionConfig, ref_audio_data_url
from duplex_client.families import (
    FAMILIES,
    FAMILY_NAMES,
    LIVE_PRESET_CHOICES,
    PRESET_CHOICES,
    TURN_STYLES,
    auto_preset,
)
from duplex_client.presets import SERVER_VAD, preset_config
from duplex_client.run.options import PRESET_NAMES, RunOptions
from duplex_client.run.prepare import prepare

#: The session-shaping options both runs take: none, or all of them.
SESSION_OPTIONS: tuple[dict[str, Any], ...] = ({}, {"instructions": "be brief", "temperature": 0.0})


@pytest.fixture(scope="module")
def voice(tmp_path_factory: pytest.TempPathFactory) -> str:
    path = tmp_path_factory.mktemp("voice") / "voice.wav"
    write_wav(path, np.zeros(160, np.int16), 16000)
    return str(path)


def same(actual: SessionConfig, expected: SessionConfig) -> None:
    """Equal as objects and as the wire object, key order included."""
    assert actual == expected
    wire = json.dumps(actual.to_session("m"))
    assert wire == json.dumps(expected.to_session("m"))


def test_both_runs_offer_the_tables_presets() -> None:
    assert PRESET_NAMES == LIVE_PRESET_CHOICES == ("auto", *PRESET_CHOICES)


@pytest.mark.parametrize(
    ("preset", "manual_commit", "window"),
    list(itertools.product(PRESET_CHOICES, (False, True), (None, "basic"))),
)
@pytest.mark.parametrize("with_voice", [False, True])
@pytest.mark.parametrize("options", SESSION_OPTIONS)
def test_a_file_runs_config_is_preset_config(
    preset: str,
    manual_commit: bool,
    window: str | None,
    with_voice: bool,
    options: dict[str, Any],
    voice: str,
) -> None:
    knobs = {"basic_window_high_tokens": 900} if window else {}
    ref_audio = voice if with_voice else None
    expected = RunOptions(
        preset=preset,
        manual_commit=manual_commit,
        ref_audio=ref_audio,
        sliding_window=window,
        window_knobs=knobs,
        **options,
    ).session_config()
    extra = {"sliding_window_mode": window, **knobs} if window else {}
    actual = preset_config(
        preset, manual_commit=manual_commit, ref_audio=ref_audio, extra_body=extra, **options
    )
    same(actual, expected)


@pytest.mark.parametrize(
    ("preset", "turn"), list(itertools.product(LIVE_PRESET_CHOICES, TURN_STYLES))
)
@pytest.mark.parametrize("with_voice", [False, True])
@pytest.mark.parametrize("options", SESSION_OPTIONS)
def test_a_live_runs_config_is_preset_config(
    preset: str, turn: str, with_voice: bool, options: dict[str, Any], voice: str
) -> None:
    ref_audio = voice if with_voice else None
    live = RunOptions(preset=preset, turn=turn, ref_audio=ref_audio, **options)  # type: ignore[arg-type]
    name = auto_preset(turn) if preset == "auto" else preset
    assert live.preset_name() == name
    actual = preset_config(name, turn=turn, ref_audio=ref_audio, **options)
    same(actual, prepare(live, inputs="devices").config)


def test_a_voice_may_be_a_path_or_a_data_url(voice: str) -> None:
    url = ref_audio_data_url(voice)
    for preset in ("minicpmo", "aura", "none"):
        assert preset_config(preset, ref_audio=voice) == preset_config(preset, ref_audio=url)
        assert preset_config(preset, ref_audio=url).ref_audio == url


def test_the_configs_as_they_are_today() -> None:
    """Pinned values, so the test still says something once both runs call `preset_config`."""
    minicpmo = preset_config("minicpmo")
    assert minicpmo == presets.minicpmo_4_5() and minicpmo.turn_detection is None
    assert preset_config("minicpmo", manual_commit=True).extra_body == {
        "auto_response": False,
        "force_listen_count": 0,
    }
    vad = preset_config("joyai")  # a file run: joyai's own turns are the server VAD's
    assert vad == presets.joyai() and vad.turn_detection == SERVER_VAD
    assert preset_config("joyai", turn="vad") == vad
    for turn in ("model", "ptt"):
        assert preset_config("joyai", turn=turn) == presets.joyai(manual=True)
    assert preset_config("joyai", manual_commit=True) == presets.joyai(manual=True)
    assert preset_config("joyai", ref_audio="data:audio/wav;base64,AAA").ref_audio is None
    aura_vad = preset_config("aura", turn="vad")
    assert aura_vad.turn_detection == SERVER_VAD
    assert aura_vad.overlap_policy == "barge_in_on_speech"
    assert preset_config("personaplex").input_audio_format == "pcm_f32le"
    assert preset_config("personaplex").input_sample_rate_hz == 24000
    assert preset_config("personaplex").voice == "NATF2.pt"
    nemotron = preset_config("nemotron")
    assert nemotron == presets.nemotron()
    assert (nemotron.input_audio_format, nemotron.input_sample_rate_hz) == ("pcm_f32le", 16000)
    assert nemotron.output_sample_rate_hz == 22050
    assert (
        nemotron.with_overrides(input_audio_format="pcm16", output_sample_rate_hz=24000)
        == presets.aura()
    )
    assert preset_config("none") == SessionConfig()
    assert preset_config("none", ref_audio="data:x").ref_audio == "data:x"


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (
            lambda: preset_config("auto"),
            "preset must be one of minicpmo, joyai, .*none, got 'auto'",
        ),
        (lambda: preset_config("gpt"), "preset must be one of"),
        (lambda: preset_config("joyai", turn="always"), "turn must be one of model, vad, ptt"),
    ],
)
def test_bad_presets_and_turns_name_the_choices(call: Any, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        call()


def test_every_family_has_a_preset_that_fits_its_turns() -> None:
    assert list(presets.PRESETS) == list(FAMILY_NAMES)
    assert presets.PRESETS["minicpmo"] is presets.minicpmo_4_5
    assert presets.PRESETS["joyai"] is presets.joyai
    assert presets.PRESETS["aura"] is presets.aura
    for f in FAMILIES:
        config = presets.PRESETS[f.name]()
        assert (config.input_audio_format, config.input_sample_rate_hz) == (
            f.input_format,
            f.input_rate_hz,
        )
        # `preset_config` hands a voice or the manual lane only to a family's own function.
        if f.reference_voice or not f.model_owned_turns:
            assert presets._OWN.get(f.name) is presets.PRESETS[f.name]


def test_derived_tables_keep_their_meaning() -> None:
    assert set(presets.PLAIN) == {"aura", "personaplex", "nemotron"}
    assert sorted(presets.PROFILE_PRESETS) == sorted(FAMILY_NAMES)
    assert presets.PRESET_MODELS == {
        "minicpmo": "openbmb/MiniCPM-o-4_5",
        "joyai": None,
        "aura": None,
        "personaplex": "nvidia/personaplex-7b-v1",
        "nemotron": None,
        "qwen3-turn": "Qwen/Qwen3-Omni-30B-A3B-Instruct",
        "none": None,
    }
    assert presets.preset_model("auto") is None  # unknown names name no model, as before


def test_the_voice_is_checked_before_anything_is_built(tmp_path: Path) -> None:
    notes = tmp_path / "voice.wav"
    notes.write_text("not audio")
    for preset in ("minicpmo", "aura"):
        with pytest.raises(ValueError, match="not a WAV audio file"):
            preset_config(preset, ref_audio=str(notes))
