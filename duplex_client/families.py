"""TEMPORARY stand-in until the families table lands (names used by run/)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class ModelFamily:
    """One model family."""

    name: str
    default_model: str | None
    client_commits: bool
    reference_profile: bool


FAMILIES = (
    ModelFamily("minicpmo", "openbmb/MiniCPM-o-4_5", True, True),
    ModelFamily("joyai", None, True, True),
    ModelFamily("aura", None, True, True),
    ModelFamily("personaplex", "nvidia/personaplex-7b-v1", False, True),
    ModelFamily("nemotron", None, False, True),
)
FAMILY_NAMES = tuple(f.name for f in FAMILIES)
PRESET_CHOICES = (*FAMILY_NAMES, "none")
LIVE_PRESET_CHOICES = ("auto", *PRESET_CHOICES)
DEFAULT_FAMILY = "minicpmo"


def preset_family(preset: str) -> ModelFamily | None:
    """The family a preset names (None: `none`)."""
    return next((f for f in FAMILIES if f.name == preset), None)


def default_model(preset: str) -> str | None:
    """The model a preset names."""
    family = preset_family(preset)
    return None if family is None else family.default_model
