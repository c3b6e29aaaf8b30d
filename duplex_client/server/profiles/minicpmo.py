"""MiniCPM-o 4.5: the model owns listen/speak per unit; AUDIO, VISION and OMNI units."""

from __future__ import annotations

from dataclasses import replace

from duplex_client.server.profiles.base import Profile, family_profile

MINICPMO = family_profile("minicpmo")


def minicpmo_profile(
    *,
    require_audio: bool = False,
    illegal_unit_code: str | None = None,
    first_unit_ms: int | None = None,
    ref_audio_required: bool = False,
) -> Profile:
    """The MiniCPM-o profile; `require_audio` emulates a server rejecting frame-only appends."""
    profile = MINICPMO
    if require_audio:
        profile = replace(profile, required_modalities=("audio",), optional_modalities=("video",))
    if illegal_unit_code is not None:
        profile = replace(profile, illegal_unit_code=illegal_unit_code)
    if first_unit_ms is not None:
        profile = replace(profile, first_unit_ms=first_unit_ms)
    return replace(profile, ref_audio_required=ref_audio_required)
