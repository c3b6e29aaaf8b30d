"""Server profiles by name, one per model family with `reference_profile` (`families`)."""

from __future__ import annotations

from dataclasses import replace

from duplex_client.families import PROFILE_FAMILIES
from duplex_client.server.profiles.aura import AURA
from duplex_client.server.profiles.base import Profile, family_profile
from duplex_client.server.profiles.joyai import JOYAI
from duplex_client.server.profiles.minicpmo import MINICPMO, minicpmo_profile
from duplex_client.server.profiles.nemotron import NEMOTRON
from duplex_client.server.profiles.personaplex import PERSONAPLEX
from duplex_client.server.profiles.qwen3_turn import QWEN3_TURN

#: Profile names the CLI offers, in the families table's order (the first is the default).
PROFILE_NAMES = PROFILE_FAMILIES
#: Each profile by its name.
_PROFILES: dict[str, Profile] = {
    p.name: p for p in (MINICPMO, JOYAI, AURA, PERSONAPLEX, NEMOTRON, QWEN3_TURN)
}


class ProfileUnavailableError(ValueError):
    """The named profile does not exist or is not implemented yet."""


def get_profile(
    name: str,
    *,
    require_audio: bool = False,
    illegal_unit_code: str | None = None,
    first_unit_ms: int | None = None,
    ref_audio_required: bool = False,
    server_vad: bool = True,
) -> Profile:
    """The profile called `name`, with the emulation options applied.

    `require_audio` applies to minicpmo only. `server_vad=False` (an engine without a VAD)
    makes the families with server VAD (joyai, minicpmo) answer `server_vad` sessions with
    `server_vad_unavailable`; push-to-talk still works.
    """
    profile = _PROFILES.get(name) if name in PROFILE_NAMES else None
    if profile is None:
        raise ProfileUnavailableError(f"unknown profile {name!r}; choose from {PROFILE_NAMES}")
    if name == MINICPMO.name:
        profile = minicpmo_profile(require_audio=require_audio)
    if illegal_unit_code is not None:
        profile = replace(profile, illegal_unit_code=illegal_unit_code)
    if first_unit_ms is not None:
        profile = replace(profile, first_unit_ms=first_unit_ms)
    # vLLM-Omni serves `server_vad` on minicpmo where barge-in is supported: it hears the
    # user (speech_started / speech_stopped) and barges in; the model still owns the turns.
    return replace(
        profile,
        ref_audio_required=ref_audio_required,
        has_server_vad=profile.has_server_vad and server_vad,
    )


__all__ = [
    "AURA",
    "JOYAI",
    "MINICPMO",
    "NEMOTRON",
    "PERSONAPLEX",
    "PROFILE_NAMES",
    "Profile",
    "ProfileUnavailableError",
    "family_profile",
    "get_profile",
]
