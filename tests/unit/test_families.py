"""`duplex_client.families`: the table's own rules, its helpers, and the choices built from it."""

from __future__ import annotations

import dataclasses
import re
from pathlib import Path

import pytest

from duplex_client import families
from duplex_client.families import (
    COMMIT_FREE,
    DEFAULT_FAMILY,
    DEFAULT_MODEL,
    FAMILIES,
    FAMILY_NAMES,
    LIVE_PRESET_CHOICES,
    PRESET_CHOICES,
    PROFILE_FAMILIES,
    TURN_STYLES,
    ModelFamily,
    UnknownFamilyError,
    auto_preset,
    default_model,
    embedded_profile,
    family,
    own_turn,
    preset_family,
)
from duplex_client.protocol.requests import INPUT_RATES, OUTPUT_RATES


def test_every_field_is_documented_in_one_line() -> None:
    lines = Path(families.__file__ or "").read_text(encoding="utf-8").splitlines()
    for field in dataclasses.fields(ModelFamily):
        at = next(i for i, line in enumerate(lines) if line.startswith(f"    {field.name}: "))
        assert lines[at - 1].startswith("    #: "), field.name


@pytest.mark.parametrize("f", FAMILIES, ids=lambda f: f.name)
def test_an_entry_is_consistent(f: ModelFamily) -> None:
    assert re.fullmatch(r"[a-z][a-z0-9_-]*", f.name) and f.title
    assert f.first_unit_ms > 0 and f.chunk_period_ms > 0
    assert f.input_format in ("pcm16", "pcm_f32le") and f.input_rate_hz in INPUT_RATES
    assert f.output_rate_hz in OUTPUT_RATES
    assert f.lifecycle in ("model_turn", "continuous_stream")
    assert not f.push_to_talk or f.client_commits  # a push-to-talk turn ends with a commit
    assert f.lifecycle == "model_turn" or not f.client_commits  # a stream ends by session.end
    # Speech turns need something to close them: the server's VAD or the client's commits.
    assert f.model_owned_turns or f.server_vad or f.client_commits
    assert not set(f.required_modalities) & set(f.optional_modalities)
    assert set(f.required_modalities) | set(f.optional_modalities) <= {"audio", "video"}


def test_the_derived_names() -> None:
    assert FAMILY_NAMES == ("minicpmo", "joyai", "aura", "personaplex", "nemotron", "qwen3-turn")
    assert len(set(FAMILY_NAMES)) == len(FAMILY_NAMES)
    assert (*FAMILY_NAMES, "none") == PRESET_CHOICES
    assert ("auto", *PRESET_CHOICES) == LIVE_PRESET_CHOICES
    assert frozenset({"personaplex", "nemotron"}) == COMMIT_FREE
    assert PROFILE_FAMILIES == FAMILY_NAMES  # every family has a reference profile today
    assert DEFAULT_FAMILY == "minicpmo" == PROFILE_FAMILIES[0]
    assert DEFAULT_MODEL == "openbmb/MiniCPM-o-4_5" == family(DEFAULT_FAMILY).default_model


def test_family_names_the_choices_when_it_does_not_know_one() -> None:
    assert family("aura").title == "AURA-style"
    with pytest.raises(UnknownFamilyError) as caught:
        family("gpt")
    assert isinstance(caught.value, ValueError)
    assert str(caught.value) == (
        "unknown model family 'gpt'; choose from minicpmo, joyai, aura, personaplex, nemotron, "
        "qwen3-turn"
    )


def test_default_models() -> None:
    assert default_model("minicpmo") == "openbmb/MiniCPM-o-4_5"
    assert default_model("personaplex") == "nvidia/personaplex-7b-v1"
    assert default_model("joyai") is None and default_model("none") is None
    assert default_model("auto") is None  # no family: no model (validation rejects presets)


def test_preset_family() -> None:
    assert preset_family("nemotron") is family("nemotron") and preset_family("none") is None
    with pytest.raises(UnknownFamilyError, match="choose from"):
        preset_family("auto")


def test_turn_choices() -> None:
    assert TURN_STYLES == ("model", "vad", "ptt")
    assert [auto_preset(turn) for turn in TURN_STYLES] == ["minicpmo", "joyai", "joyai"]
    with pytest.raises(ValueError, match="turn must be one of model, vad, ptt"):
        auto_preset("always")
    assert own_turn("joyai") == "vad" and own_turn("joyai", manual_commit=True) == "ptt"
    assert {own_turn(name) for name in ("minicpmo", "aura", "personaplex", "none")} == {"model"}


def test_embedded_profiles() -> None:
    assert [embedded_profile(name) for name in PRESET_CHOICES] == [
        *FAMILY_NAMES,
        DEFAULT_FAMILY,
    ]


def test_the_cli_choices_are_the_tables() -> None:
    from duplex_cli.options import AUTO_PRESET, DEFAULT_PRESET, LivePreset, Preset
    from duplex_cli.serve import DEFAULT_PROFILE, Profile

    assert [p.value for p in Preset] == list(PRESET_CHOICES)
    assert [p.value for p in LivePreset] == list(LIVE_PRESET_CHOICES)
    assert [p.value for p in Profile] == list(PROFILE_FAMILIES)
    assert (DEFAULT_PRESET, AUTO_PRESET, DEFAULT_PROFILE) == (
        DEFAULT_FAMILY,
        "auto",
        DEFAULT_FAMILY,
    )
